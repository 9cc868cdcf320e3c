"""Version checksum files ``NNN.crc`` (PROTOCOL.md "Version Checksum File").

Written after each commit from the post-commit state; when present they are
checked against the replayed state. They are optional and never trusted: a
malformed one is ignored, and one that disagrees with the replayed log is
surfaced as a ``ChecksumMismatchWarning`` naming both values (the commits, not
the checksum, define the table).
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

import pyarrow.compute as pc

from delta_pyspark.core.log_replay import TableState
from delta_pyspark.core.log_segment import checksum_name
from delta_pyspark.core.log_store import LogStore
from delta_pyspark.exceptions import FileAlreadyExistsError

log = logging.getLogger(__name__)


class ChecksumMismatchWarning(UserWarning):
    """A version checksum file disagrees with the state replayed from the log."""


def table_size(state: TableState) -> int:
    size = state.files.column("size")
    return int(pc.sum(size).as_py() or 0) if len(size) else 0


def checksum_of(
    state: TableState, txn_id: str | None = None, ict: int | None = None
) -> dict[str, Any]:
    assert state.metadata is not None and state.protocol is not None
    out: dict[str, Any] = {
        "tableSizeBytes": table_size(state),
        "numFiles": state.files.num_rows,
        "numMetadata": 1,
        "numProtocol": 1,
        "metadata": state.metadata.to_dict(),
        "protocol": state.protocol.to_dict(),
        "setTransactions": [t.to_dict() for t in state.txns.values()],
        "domainMetadata": [d.to_dict() for d in state.domains.values()],
    }
    if txn_id:
        out["txnId"] = txn_id
    if ict is not None:
        out["inCommitTimestampOpt"] = ict
    return out


def write_checksum(store: LogStore, log_dir: str, state: TableState, **kw: Any) -> None:
    data = json.dumps(checksum_of(state, **kw), separators=(",", ":")).encode()
    try:
        store.write_if_absent(f"{log_dir}/{checksum_name(state.version)}", data, durable=False)
    except FileAlreadyExistsError:
        log.warning("checksum for version %d already exists; left as is", state.version)


def read_checksum(store: LogStore, log_dir: str, version: int) -> dict[str, Any] | None:
    """The parsed checksum, or None when absent or malformed (with a warning)."""
    path = f"{log_dir}/{checksum_name(version)}"
    try:
        raw = store.read(path)
    except FileNotFoundError:
        return None
    try:
        crc = json.loads(raw)
        int(crc["numFiles"])
        int(crc["tableSizeBytes"])
    except (ValueError, KeyError, TypeError) as e:
        log.warning("ignoring malformed version checksum %s: %s", path, e)
        return None
    return crc


def validate(state: TableState, crc: dict[str, Any], path: str) -> None:
    """Compare the replayed state with its checksum and warn about any disagreement."""
    problems = []
    if int(crc["numFiles"]) != state.files.num_rows:
        problems.append(f"numFiles {crc['numFiles']} != {state.files.num_rows}")
    if int(crc["tableSizeBytes"]) != table_size(state):
        problems.append(f"tableSizeBytes {crc['tableSizeBytes']} != {table_size(state)}")
    meta = crc.get("metadata")
    if (
        isinstance(meta, dict)
        and state.metadata
        and meta.get("id") not in (None, state.metadata.id)
    ):
        problems.append(f"metadata id {meta.get('id')} != {state.metadata.id}")
    if problems:
        warnings.warn(
            f"version checksum {path} disagrees with the log: {'; '.join(problems)}",
            ChecksumMismatchWarning,
            stacklevel=3,
        )
