"""What a streaming read of a table delivers, in order, and where it stands (its offsets).

A stream starts from the files of a snapshot (ordered by modification time, then path),
unless it is given a starting version, then follows each later commit's added files in
the order the commit lists them. An offset names the last file delivered: its version,
its index in that version, and whether it belongs to the starting snapshot. Offsets are
JSON in the stream's checkpoint, the same fields delta-spark writes, so a restarted query
resumes after the last file it committed.

Commits that remove data fail the stream unless the reader said how to treat them
(``ignoreDeletes``, ``ignoreChanges``, ``skipChangeCommits``, as delta-spark documents);
files added with ``dataChange = false`` (OPTIMIZE) are never delivered again; a schema
change fails the stream naming the version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.changes.change_data import (
    INSERT,
    ChangeFile,
    ChangeRange,
    check_recorded,
    commit_timestamp,
    is_change_feed_read,
    version_changes,
)
from delta_pyspark.core.log.commit_actions import CommitActions, parse_actions
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
    DeltaSchemaChangedError,
    DeltaUnsupportedOperationException,
)

DEFAULT_MAX_FILES = 1000
_SOURCE_VERSION = 1


@dataclass(frozen=True)
class StreamOffset:
    """After the file at ``index`` of ``version`` (-1: before its first file)."""

    table_id: str
    version: int
    index: int
    is_starting_version: bool

    def to_json(self) -> str:
        return json.dumps(
            {
                "sourceVersion": _SOURCE_VERSION,
                "reservoirId": self.table_id,
                "reservoirVersion": self.version,
                "index": self.index,
                "isStartingVersion": self.is_starting_version,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> StreamOffset:
        try:
            data = json.loads(text)
            if int(data.get("sourceVersion", 0)) > _SOURCE_VERSION:
                raise DeltaUnsupportedOperationException(
                    f"this stream's checkpoint was written by a newer Delta source (offset "
                    f"format {data['sourceVersion']}): {text}"
                )
            return cls(
                str(data["reservoirId"]),
                int(data["reservoirVersion"]),
                int(data["index"]),
                bool(data["isStartingVersion"]),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise DeltaIllegalArgumentException(f"not a Delta stream offset: {text!r}") from e


@dataclass(frozen=True)
class StreamOptions:
    """The options of a streaming read that decide what it delivers."""

    starting_version: int | None = None
    max_files: int | None = DEFAULT_MAX_FILES
    max_bytes: int | None = None
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    change_feed: bool = False  # ``readChangeFeed``: deliver change files (``ChangeFile``)

    @classmethod
    def parse(cls, options: Mapping[str, str], log: DeltaLog) -> StreamOptions:
        lowered = {k.lower(): v for k, v in options.items()}
        for unsupported in ("startingtimestamp",):
            if unsupported in lowered:
                raise DeltaUnsupportedOperationException(
                    f"the Delta streaming source does not support option {unsupported} yet"
                )
        start = lowered.get("startingversion")
        starting: int | None = None
        if start is not None and start.strip().lower() != "latest":
            starting = _non_negative(start, "startingVersion")
        elif start is not None:
            starting = log.snapshot().version + 1
        return cls(
            starting_version=starting,
            max_files=_positive(lowered.get("maxfilespertrigger"), "maxFilesPerTrigger")
            or DEFAULT_MAX_FILES,
            max_bytes=_bytes(lowered.get("maxbytespertrigger")),
            ignore_deletes=_flag(lowered.get("ignoredeletes")),
            ignore_changes=_flag(lowered.get("ignorechanges")),
            skip_change_commits=_flag(lowered.get("skipchangecommits")),
            change_feed=is_change_feed_read(options),
        )


@dataclass(frozen=True)
class IndexedFile:
    """One file a stream delivers, at its position (a change feed stream: ``add`` holds
    its ``size`` and, under ``change``, its ``ChangeFile``)."""

    version: int
    index: int
    is_starting_version: bool
    # an add (a commit's, or a snapshot's file row); a change feed's: {"size", "change"}
    add: Mapping[str, Any]


class StreamSource:
    """The files of a table a stream reads, from an offset on, in delivery order."""

    def __init__(self, log: DeltaLog, options: StreamOptions, schema_json: str) -> None:
        self.log = log
        self.options = options
        self.schema_json = schema_json  # the stream's schema, fixed when it started

    def initial_offset(self) -> StreamOffset:
        """Where a new stream starts: before the first file of the latest snapshot, or of
        the starting version's commit."""
        snapshot = self.log.snapshot()
        if self.options.starting_version is not None:
            return StreamOffset(snapshot.metadata.id, self.options.starting_version, -1, False)
        return StreamOffset(snapshot.metadata.id, snapshot.version, -1, True)

    def latest_offset(
        self, start: StreamOffset | None, limited: bool, end_version: int | None = None
    ) -> StreamOffset | None:
        """The offset after the next batch from ``start`` (None: from the beginning), at
        most ``maxFilesPerTrigger`` files and about ``maxBytesPerTrigger`` bytes when
        ``limited``, not past ``end_version``; None when nothing is new."""
        begin = start or self.initial_offset()
        last: IndexedFile | None = None
        size = 0
        for taken, item in enumerate(self.files_after(begin, end_version)):
            if limited and self._full(taken, size):
                break
            last = item
            size += int(item.add.get("size") or 0)
        if last is None:
            return start
        return StreamOffset(begin.table_id, last.version, last.index, last.is_starting_version)

    def _full(self, files: int, size: int) -> bool:
        max_files, max_bytes = self.options.max_files, self.options.max_bytes
        if max_files is not None and files >= max_files:
            return True
        return max_bytes is not None and files > 0 and size >= max_bytes

    def batch(self, start: StreamOffset | None, end: StreamOffset) -> list[Mapping[str, Any]]:
        """The adds of the files after ``start`` up to and including ``end`` (a first
        batch, ``start`` None, from where the stream ``end`` belongs to began)."""
        begin = start or StreamOffset(
            end.table_id,
            end.version if end.is_starting_version else self._first_version(end),
            -1,
            end.is_starting_version,
        )
        out = []
        for item in self.files_after(begin, end.version):
            if (item.version, item.index) > (end.version, end.index):
                break
            out.append(item.add)
        return out

    def _first_version(self, end: StreamOffset) -> int:
        start = self.options.starting_version
        return end.version if start is None else min(start, end.version)

    def files_after(self, offset: StreamOffset, end_version: int | None) -> Iterator[IndexedFile]:
        """Every file after ``offset``, in delivery order, up to ``end_version``."""
        self._check_table(offset)
        version = offset.version
        if offset.is_starting_version:
            snapshot = self.log.snapshot(offset.version)
            self._check_schema(snapshot.metadata.schema_string, offset.version)
            if self.options.change_feed:
                check_recorded(
                    snapshot.metadata, offset.version, ChangeRange(offset.version, offset.version)
                )
            for index, row in enumerate(_ordered(snapshot)):
                if index > offset.index:
                    yield IndexedFile(offset.version, index, True, self._initial(row, snapshot))
            version += 1
        first_index = offset.index if not offset.is_starting_version else -1
        for found, actions, timestamp in self._commits(version):
            if end_version is not None and found > end_version:
                break
            floor = first_index if found == offset.version else -1
            for index, add in enumerate(self._delivered(actions, found, timestamp)):
                if index > floor:
                    yield IndexedFile(found, index, False, add)

    def _commits(self, start: int) -> Iterator[tuple[int, CommitActions, int]]:
        """Each commit from ``start`` on with its actions and its commit timestamp."""
        previous = -1
        for version, status in self.log.commit_files(start):
            actions = parse_actions(self.log.store.read(status.path), status.path)
            previous = commit_timestamp(actions, status.modification_time, previous)
            yield version, actions, previous

    def _initial(self, add: Mapping[str, Any], snapshot: Snapshot) -> Mapping[str, Any]:
        """A file of the starting snapshot; a change feed stream delivers its live rows as
        inserts of the snapshot's version."""
        if not self.options.change_feed:
            return add
        change = ChangeFile(
            add["path"],
            dict(add.get("partitionValues") or []),
            int(add["size"]),
            int(add["modificationTime"]),
            snapshot.version,
            snapshot.timestamp,
            INSERT,
            vector=add.get("deletionVector"),
        )
        return {"size": change.size, "change": change}

    def _delivered(
        self, actions: CommitActions, version: int, timestamp: int
    ) -> Sequence[Mapping[str, Any]]:
        """The adds of commit ``version`` a stream delivers, after the reader's options (a
        change feed stream: its change files)."""
        if actions.metadata is not None:
            self._check_schema(actions.metadata.schema_string, version)
        if self.options.change_feed:
            if actions.metadata is not None:  # the feed must stay on
                check_recorded(actions.metadata, version, ChangeRange(version, version))
            return [
                {"size": c.size, "change": c} for c in version_changes(actions, version, timestamp)
            ]
        adds = [a for a in actions.adds if a.get("dataChange", True)]
        removes = [r for r in actions.removes if r.get("dataChange", True)]
        if not removes:
            return adds
        if self.options.skip_change_commits:
            return []
        if self.options.ignore_changes:
            return adds
        operation = (actions.commit_info or {}).get("operation", "unknown")
        if not adds and self.options.ignore_deletes:
            return []
        if not adds:
            raise DeltaUnsupportedOperationException(
                f"[DELTA_SOURCE_IGNORE_DELETE] Detected deleted data (for example "
                f"{removes[0]['path']}) from streaming source at version {version}. This is "
                "currently not supported. If you'd like to ignore deletes, set the option "
                "'ignoreDeletes' to 'true'."
            )
        raise DeltaUnsupportedOperationException(
            f"[DELTA_SOURCE_TABLE_IGNORE_CHANGES] Detected a data update (for example "
            f"{operation} of {removes[0]['path']}) in the source table at version {version}. "
            "This is currently not supported. To skip commits that update or delete data, "
            "set the option 'skipChangeCommits' to 'true'."
        )

    def _check_schema(self, schema_string: str, version: int) -> None:
        """Fail on a schema the stream cannot read its data with: one the stream's schema
        does not cover (a column added since the stream started, or dropped or retyped
        since). A restarted stream reads with the latest schema, which covers older ones
        that only lack columns."""
        if not _covers(json.loads(self.schema_json), json.loads(schema_string)):
            raise DeltaSchemaChangedError(
                f"[DELTA_SCHEMA_CHANGED_WITH_VERSION] Detected schema change in version "
                f"{version} of {self.log.table_root}: the stream reads schema "
                f"{self.schema_json}, the table has {schema_string} from that version on. "
                "Restart the query to read the new schema (check that the change suits "
                "its sink)."
            )

    def _check_table(self, offset: StreamOffset) -> None:
        table_id = self.log.snapshot().metadata.id
        if offset.table_id != table_id:
            raise DeltaIllegalArgumentException(
                f"[DELTA_DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] the stream's "
                f"checkpoint was made reading table {offset.table_id}, and "
                f"{self.log.table_root} is now table {table_id}: use a new checkpoint"
            )


def _covers(stream: dict[str, Any], version: dict[str, Any]) -> bool:
    """Whether every column of ``version`` is in ``stream``, with its type."""
    fields = {f["name"].lower(): f["type"] for f in stream.get("fields", [])}
    return all(fields.get(f["name"].lower()) == f["type"] for f in version.get("fields", []))


def _ordered(snapshot: Snapshot) -> list[dict[str, Any]]:
    """A snapshot's files in the order a stream delivers them."""
    files: pa.Table = snapshot.files
    if files.num_rows == 0:
        return []
    order = pc.sort_indices(
        files, sort_keys=[("modificationTime", "ascending"), ("path", "ascending")]
    )
    return list(files.take(order).to_pylist())


def _flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _non_negative(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise DeltaIllegalArgumentException(f"{name} must be a version (>= 0), got {value!r}")
    return number


def _positive(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise DeltaIllegalArgumentException(f"{name} must be a positive integer, got {value!r}")
    return number


_UNITS = {"b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}


def _bytes(value: str | None) -> int | None:
    """``maxBytesPerTrigger``: a size such as ``1048576``, ``10m`` or ``1g``."""
    if value is None:
        return None
    text = value.strip().lower()
    digits = text.rstrip("bkmg")
    unit = text[len(digits) :] or "b"
    if not digits.isdigit() or unit not in _UNITS or int(digits) == 0:
        raise DeltaIllegalArgumentException(
            f"maxBytesPerTrigger must be a positive size (e.g. 1048576, 10m, 1g), got {value!r}"
        )
    return int(digits) * _UNITS[unit]
