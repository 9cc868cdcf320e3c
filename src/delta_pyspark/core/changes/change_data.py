"""The change data feed: which files describe the row changes of a range of versions
(PROTOCOL.md "Change Data Files", "Add CDC File"; delta-spark's CDCReader).

Per version: when the commit has ``cdc`` actions its changes are exactly the rows of those
files (each row carries its ``_change_type``); otherwise the rows of its ``add`` files
(``dataChange = true``) are inserts and those of its ``remove`` files deletes, net of
deletion vectors. A file removed and re-added in one commit with another deletion vector
(a DELETE by deletion vectors that wrote no change data) changed only the rows the two
vectors differ in: those newly marked are deletes, those unmarked again inserts.
Commits that change no data (OPTIMIZE) contribute nothing.

Spark-free: the data plane reads the files this module lists (``spark/sources/change_feed.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from pyroaring import BitMap64

from delta_pyspark.core.log.commit_actions import CommitActions, parse_actions
from delta_pyspark.core.log.logical_files import canonical_path
from delta_pyspark.core.log.table_paths import resolve_path
from delta_pyspark.core.protocol.actions import AddCDCFile, Metadata
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    read_deletion_vector,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.exceptions import (
    ChangeDataNotRecordedError,
    ChangeDataStartAfterLatestError,
    DeltaIllegalArgumentException,
    InvalidChangeDataRangeError,
    NoChangeDataStartError,
    VersionNotFoundError,
)

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CDF_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
CHANGE_DATA_DIR = "_change_data"
ENABLE_KEY = "delta.enableChangeDataFeed"
INSERT, DELETE = "insert", "delete"
PREIMAGE, POSTIMAGE = "update_preimage", "update_postimage"


def cdf_enabled(configuration: Mapping[str, str]) -> bool:
    """Whether the table records change data (``delta.enableChangeDataFeed``)."""
    return str(configuration.get(ENABLE_KEY, "")).lower() == "true"


def is_change_feed_read(options: Mapping[str, str]) -> bool:
    """Whether read options ask for the change data feed (``readChangeFeed`` or its older
    name ``readChangeData``)."""
    return any(
        k.lower() in ("readchangefeed", "readchangedata") and str(v).strip().lower() == "true"
        for k, v in options.items()
    )


@dataclass(frozen=True)
class ChangeFile:
    """One file whose rows (all, or those left by ``vector`` / ``keep``) are changes of
    ``version``; ``change_type`` None: a ``cdc`` file, whose rows carry their own.

    ``vector``: a deletion vector descriptor whose rows are left out (the file's live rows
    then). ``keep``: ``(left, right)`` descriptors (None: no rows), only the rows marked by
    ``left`` and not by ``right`` are changes.
    """

    path: str  # as the log writes it (relative and URI-encoded, or absolute)
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    version: int
    timestamp: int  # ms: the commit's in-commit timestamp, else its file's modification time
    change_type: str | None
    vector: Mapping[str, Any] | None = None
    keep: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None] | None = None
    num_records: int | None = None  # from the action's stats, when there are some

    def dropped_rows(self, table_root: str, store: LogStore) -> BitMap64 | None:
        """Row indexes of the file that are not changes (None: every row is one)."""
        if self.vector is not None:
            return _read(self.vector, table_root, store)
        if self.keep is None:
            return None
        kept = _read(self.keep[0], table_root, store) - _read(self.keep[1], table_root, store)
        rows = self.num_records
        if rows is None:
            rows = store.read_footer(resolve_path(table_root, self.path)).num_rows
        everything = BitMap64()
        everything.add_range(0, rows)
        return everything - kept


def _read(dv: Mapping[str, Any] | None, table_root: str, store: LogStore) -> BitMap64:
    if dv is None:
        return BitMap64()
    return read_deletion_vector(DeletionVectorDescriptor.from_dict(dict(dv)), table_root, store)


@dataclass(frozen=True)
class ChangeRange:
    """Resolved versions of a read (``start > end``: an empty feed, see ``resolve_range``)."""

    start: int
    end: int


def _option(options: Mapping[str, str], name: str) -> str | None:
    lowered = {k.lower(): v for k, v in options.items()}
    value = lowered.get(name.lower())
    return None if value is None else str(value).strip()


def _version(text: str, name: str) -> int:
    try:
        version = int(text)
    except ValueError:
        raise DeltaIllegalArgumentException(
            f"{name} must be a version number, not {text!r}"
        ) from None
    if version < 0:
        raise DeltaIllegalArgumentException(f"{name} must not be negative ({version})")
    return version


def resolve_range(log: DeltaLog, options: Mapping[str, str], tz: tzinfo) -> ChangeRange:
    """The versions a batch read with ``options`` covers, delta-spark's rules:
    ``startingVersion`` or ``startingTimestamp`` (the first version committed at or after
    it) is required; ``endingVersion`` or ``endingTimestamp`` (the last version committed
    at or before it) is inclusive and defaults to the latest; an ending version past the
    latest reads up to the latest, a start past it fails."""
    latest = log.snapshot().version
    start_v, start_ts = _option(options, "startingVersion"), _option(options, "startingTimestamp")
    end_v, end_ts = _option(options, "endingVersion"), _option(options, "endingTimestamp")
    if start_v is not None:
        start = latest + 1 if start_v.lower() == "latest" else _version(start_v, "startingVersion")
    elif start_ts is not None:
        start = _version_at_or_after(log, parse_timestamp_ms(start_ts, tz))
    else:
        raise NoChangeDataStartError(
            "No startingVersion or startingTimestamp provided for CDC read."
        )
    if start > latest:
        raise ChangeDataStartAfterLatestError(
            f"Start version {start} for change data feed exceeds the latest table version {latest}."
        )
    end = latest
    if end_v is not None:
        end = min(_version(end_v, "endingVersion"), latest)
    elif end_ts is not None:
        end = log.version_at_timestamp(parse_timestamp_ms(end_ts, tz))
        if start_v is None and end == start - 1:
            return ChangeRange(start, end)  # both timestamps between the same two commits
    if end < start:
        raise InvalidChangeDataRangeError(
            f"CDC range from start {start} to end {end} was invalid. End cannot be before start."
        )
    return ChangeRange(start, end)


def _version_at_or_after(log: DeltaLog, timestamp_ms: int) -> int:
    """The first version committed at or after ``timestamp_ms`` (delta-spark's starting
    timestamp, as for streams)."""
    records = log.commit_records()
    for rec in records:
        if rec.timestamp >= timestamp_ms:
            return rec.version
    last = records[-1]
    raise VersionNotFoundError(
        f"[DELTA_TIMESTAMP_GREATER_THAN_COMMIT] The provided timestamp ({timestamp_ms} ms) is "
        f"after the latest version available to this table ({last.version}, committed at "
        f"{last.timestamp} ms)."
    )


def change_files(log: DeltaLog, versions: ChangeRange) -> list[ChangeFile]:
    """The files holding the changes of ``versions``, in version order.

    Fails with ``ChangeDataNotRecordedError`` when the feed was off at the start version
    or is turned off within the range (delta-spark's DELTA_MISSING_CHANGE_DATA)."""
    if versions.start > versions.end:
        return []
    metadata = log.snapshot(versions.start).metadata
    check_recorded(metadata, versions.start, versions)
    out: list[ChangeFile] = []
    previous = -1
    for version, status in log.commit_files(versions.start):
        if version > versions.end:
            break
        actions = parse_actions(log.store.read(status.path), status.path)
        if actions.metadata is not None:
            check_recorded(actions.metadata, version, versions)
            metadata = actions.metadata
        timestamp = commit_timestamp(actions, status.modification_time, previous)
        previous = timestamp
        out += version_changes(actions, version, timestamp)
    return out


def check_recorded(metadata: Metadata, version: int, versions: ChangeRange) -> None:
    """Fail when ``metadata`` (of ``version``) does not record change data."""
    if not cdf_enabled(metadata.configuration):
        raise ChangeDataNotRecordedError(
            f"Error getting change data for range [{versions.start} , {versions.end}] as "
            f"change data was not recorded for version [{version}]. If you've enabled change "
            "data feed on this table, use `DESCRIBE HISTORY` to see when it was first "
            "enabled. Otherwise, to start recording change data, use `ALTER TABLE "
            f"table_name SET TBLPROPERTIES ({ENABLE_KEY}=true)`."
        )


def commit_timestamp(actions: CommitActions, modification_time: int, previous: int) -> int:
    """The commit's in-commit timestamp (written only when the table has them on), else
    its file's modification time made strictly increasing after ``previous`` (as
    ``DeltaLog.commit_records`` and delta-spark do)."""
    info = actions.commit_info or {}
    if "inCommitTimestamp" in info:
        return int(info["inCommitTimestamp"])
    return max(modification_time, previous + 1)


def version_changes(actions: CommitActions, version: int, timestamp: int) -> list[ChangeFile]:
    """The change files of one commit (see the module docstring)."""
    if actions.cdcs:
        return [_file(c, version, timestamp, None) for c in actions.cdcs]
    adds = {canonical_path(a["path"]): a for a in actions.adds if a.get("dataChange", True)}
    removes = {canonical_path(r["path"]): r for r in actions.removes if r.get("dataChange", True)}
    out = []
    for key, add in adds.items():
        remove = removes.get(key)
        if remove is None:
            out.append(_file(add, version, timestamp, INSERT, _dv(add)))
        else:
            out += _vector_changes(add, remove, version, timestamp)
    out += [
        _file(r, version, timestamp, DELETE, _dv(r)) for k, r in removes.items() if k not in adds
    ]
    return out


def _dv(action: Mapping[str, Any]) -> Mapping[str, Any] | None:
    dv = action.get("deletionVector")
    return dv if dv else None


def _vector_changes(
    add: Mapping[str, Any], remove: Mapping[str, Any], version: int, timestamp: int
) -> list[ChangeFile]:
    """A file removed and re-added in one commit: its rows marked by the new vector and not
    the old are deletes; those marked by the old and not the new, inserts (a RESTORE)."""
    old, new = _dv(remove), _dv(add)
    if old == new:
        return []
    stats = add.get("stats") or remove.get("stats")  # the same file: either's row count
    changes = [
        _file({**remove, "stats": stats}, version, timestamp, DELETE, keep=(new, old)),
        _file({**add, "stats": stats}, version, timestamp, INSERT, keep=(old, new)),
    ]
    return [c for c in changes if c.keep is not None and c.keep[0] is not None]


def _file(
    action: Mapping[str, Any],
    version: int,
    timestamp: int,
    change_type: str | None,
    vector: Mapping[str, Any] | None = None,
    keep: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None] | None = None,
) -> ChangeFile:
    return ChangeFile(
        path=str(action["path"]),
        partition_values=dict(action.get("partitionValues") or {}),
        size=int(action.get("size") or 0),
        modification_time=int(action.get("modificationTime") or timestamp),
        version=version,
        timestamp=timestamp,
        change_type=change_type,
        vector=vector,
        keep=keep,
        num_records=_num_records(action.get("stats")),
    )


def _num_records(stats: Any) -> int | None:
    if not stats:
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return int(value) if value is not None else None


def cdc_actions(written: Iterable[Mapping[str, Any]]) -> list[AddCDCFile]:
    """``cdc`` actions for change data files written under ``_change_data/`` (``written``:
    their add-like records with paths relative to that directory)."""
    return [
        {
            "path": f"{CHANGE_DATA_DIR}/{w['path']}",
            "partitionValues": dict(w.get("partitionValues") or {}),
            "size": int(w["size"]),
            "dataChange": False,
        }
        for w in written
    ]
