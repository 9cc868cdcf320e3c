"""An immutable view of one table version (MVCC): protocol, metadata, files.

The live file list is an Arrow table with the checkpoint ``add`` layout plus a
``_key`` column (logical file key); tombstones likewise. Nothing here walks
files one by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import pyarrow as pa

from delta_pyspark.core.log.checksum import table_size
from delta_pyspark.core.log.logical_files import KEY_COLUMN
from delta_pyspark.core.log.replay import TableState
from delta_pyspark.core.log.segment import LogSegment
from delta_pyspark.core.protocol.actions import (
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
)
from delta_pyspark.core.protocol.schema import StructType, parse_schema_string
from delta_pyspark.core.stats.cache import StatsCache


class Snapshot:
    """Table state at ``version``; ``timestamp`` is the commit time in ms since the epoch."""

    def __init__(
        self,
        table_root: str,
        state: TableState,
        segment: LogSegment,
        timestamp: int,
        stats_cache: StatsCache | None = None,
    ) -> None:
        """``stats_cache``: the live files' parsed stats so far (carried from the snapshot
        this one was made from); else an empty one."""
        assert state.protocol is not None and state.metadata is not None
        self.table_root = table_root.rstrip("/")
        self.state = state
        self.segment = segment
        self.timestamp = timestamp
        self.stats_cache = stats_cache or StatsCache(state.files)

    @property
    def version(self) -> int:
        return self.state.version

    @property
    def protocol(self) -> Protocol:
        assert self.state.protocol is not None
        return self.state.protocol

    @property
    def metadata(self) -> Metadata:
        assert self.state.metadata is not None
        return self.state.metadata

    @cached_property
    def schema(self) -> StructType:
        return parse_schema_string(self.metadata.schema_string)

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> Mapping[str, str]:
        return self.metadata.configuration

    @property
    def files(self) -> pa.Table:
        """Live ``add`` actions (without the internal key column)."""
        return self.state.files.drop_columns([KEY_COLUMN])

    @property
    def files_with_keys(self) -> pa.Table:
        return self.state.files

    @property
    def tombstones(self) -> pa.Table:
        return self.state.tombstones.drop_columns([KEY_COLUMN])

    @cached_property
    def list_bytes(self) -> int:
        """The Arrow buffers of the file and tombstone lists (counted once: a cache of
        snapshots asks at every look-up)."""
        return int(self.state.files.nbytes + self.state.tombstones.nbytes)

    @property
    def num_files(self) -> int:
        return self.state.files.num_rows

    @property
    def size_in_bytes(self) -> int:
        return table_size(self.state)

    @property
    def set_transactions(self) -> Mapping[str, SetTransaction]:
        return self.state.txns

    @property
    def domain_metadata(self) -> Mapping[str, DomainMetadata]:
        return self.state.domains

    @property
    def commit_info(self) -> CommitInfo | None:
        """``commitInfo`` of the commit at this version (None after a bare checkpoint)."""
        return self.state.commit_info

    def app_transaction_version(self, app_id: str) -> int | None:
        txn = self.state.txns.get(app_id)
        return txn.version if txn else None

    def __repr__(self) -> str:
        return f"Snapshot({self.table_root!r}, version={self.version}, files={self.num_files})"
