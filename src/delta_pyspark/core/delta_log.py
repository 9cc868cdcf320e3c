"""The table handle: loads snapshots (latest, by version, by timestamp), refreshes
them incrementally, and reads history. Storage is reached only via ``LogStore``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from delta_pyspark.core import checksum
from delta_pyspark.core import table_properties as props
from delta_pyspark.core.actions import commit_timestamp
from delta_pyspark.core.checkpoint import load_state
from delta_pyspark.core.log_replay import (
    CommitActions,
    CommitBatch,
    TableState,
    parse_actions,
    parse_commits,
    parse_compaction,
)
from delta_pyspark.core.log_segment import (
    LogSegment,
    build_log_segment,
    list_commits,
    log_dir_of,
)
from delta_pyspark.core.log_store import LogStore, log_store_for
from delta_pyspark.core.log_validation import validate_state
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.core.table_features import check_readable
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaTableNotFoundError,
    VersionNotFoundError,
)


@dataclass(frozen=True)
class CommitRecord:
    """One commit for history: version, effective timestamp (ms) and its commitInfo."""

    version: int
    timestamp: int
    commit_info: dict[str, Any]


class DeltaLog:
    """Entry point to one table's transaction log."""

    def __init__(self, table_root: str, store: LogStore | None = None) -> None:
        self.table_root = table_root.rstrip("/") or "/"
        self.store = store or log_store_for(table_root)
        self.log_dir = log_dir_of(self.table_root)

    # ------------------------------------------------------------ snapshots

    def is_delta_table(self) -> bool:
        try:
            build_log_segment(self.store, self.table_root)
        except DeltaTableNotFoundError:
            return False
        return True

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The latest snapshot, or the one at ``version`` (time travel)."""
        if version is not None and version < 0:
            raise VersionNotFoundError(f"invalid version {version}: versions start at 0")
        segment = build_log_segment(self.store, self.table_root, version)
        state = load_state(self.store, segment.checkpoint, self.log_dir)
        state = self._replay(state, segment)
        return self._finish(state, segment)

    def update(self, snapshot: Snapshot) -> Snapshot:
        """The latest snapshot, reading only the commits newer than ``snapshot``."""
        newer = list_commits(self.store, self.table_root, snapshot.version + 1)
        if not newer:
            return snapshot
        expected = list(range(snapshot.version + 1, snapshot.version + 1 + len(newer)))
        if [v for v, _ in newer] != expected:
            return self.snapshot()
        state = snapshot.state.apply(newer[-1][0], self._read_commits([s.path for _, s in newer]))
        segment = LogSegment(
            self.log_dir,
            state.version,
            snapshot.segment.checkpoint,
            snapshot.segment.commits + tuple(s for _, s in newer),
        )
        return self._finish(state, segment)

    def apply_commits(
        self, snapshot: Snapshot, version: int, commits: list[CommitActions]
    ) -> Snapshot:
        """The snapshot at ``version`` from ``snapshot`` plus the commits after it, all already
        parsed in memory (a writer's winners and its own commit): no log re-read."""
        statuses = tuple(
            s
            for v, s in list_commits(self.store, self.table_root, snapshot.version + 1)
            if v <= version
        )
        state = snapshot.state.apply(version, commits)
        segment = LogSegment(
            self.log_dir, version, snapshot.segment.checkpoint, snapshot.segment.commits + statuses
        )
        return self._finish(state, segment)

    def _read_commit(self, path: str) -> CommitActions:
        return parse_actions(self._read_bytes(path), path)

    def _read_bytes(self, path: str) -> bytes:
        try:
            return self.store.read(path)
        except FileNotFoundError:
            raise CorruptLogError(f"commit file {path} disappeared while reading the log") from None

    def _read_commits(self, paths: list[str]) -> CommitBatch | list[CommitActions]:
        """Consecutive commit files, parsed together (see ``parse_commits``)."""
        return parse_commits(lambda: ((self._read_bytes(p), p) for p in paths))

    def _read_compaction(self, path: str) -> CommitActions:
        return parse_compaction(self.store.read(path), path)

    def _replay(self, state: TableState, segment: LogSegment) -> TableState:
        if not segment.deltas:
            return state
        commits: CommitBatch | list[CommitActions]
        if all(first == last for first, last, _ in segment.deltas):
            commits = self._read_commits([f.path for _, _, f in segment.deltas])
        else:
            commits = [
                self._read_commit(f.path) if first == last else self._read_compaction(f.path)
                for first, last, f in segment.deltas
            ]
        state = state.apply(segment.version, commits)
        if segment.deltas[-1][0] != segment.deltas[-1][1]:
            # The last delta was a compaction: commitInfo lives only in the commit file.
            last = segment.commits[-1]
            state.commit_info = self._read_commit(last.path).commit_info
        return state

    def _finish(self, state: TableState, segment: LogSegment) -> Snapshot:
        if state.protocol is None:
            raise CorruptLogError(
                f"{self.table_root}: no protocol action found replaying version {state.version}"
            )
        if state.metadata is None:
            raise CorruptLogError(
                f"{self.table_root}: no metaData action found replaying version {state.version}"
            )
        if not state.metadata.schema_string:
            raise CorruptLogError(
                f"{self.table_root}: the metaData action of version {state.version} has no "
                "schemaString"
            )
        check_readable(state.protocol, self.table_root)
        snapshot = Snapshot(self.table_root, state, segment, self._timestamp_of(state, segment))
        validate_state(
            state, snapshot.schema, self.table_root, lambda path: self._locate(segment, path)
        )
        crc = checksum.read_checksum(self.store, self.log_dir, state.version)
        if crc is not None:
            checksum.validate(state, crc, f"{self.log_dir}/{state.version:020d}.crc")
        return snapshot

    def _locate(self, segment: LogSegment, data_file: str | None) -> str:
        """The log file that last names ``data_file`` (read only to word an error)."""
        where = f"{self.table_root} at version {segment.version}"
        if data_file is None:
            return where
        needle = json.dumps(data_file).encode()
        for _, _, status in reversed(segment.deltas):
            if needle in self.store.read(status.path):
                return f"{where}, {status.path}"
        if segment.checkpoint is not None:
            return f"{where}, checkpoint {segment.checkpoint.files[0].path}"
        return where

    def _timestamp_of(self, state: TableState, segment: LogSegment) -> int:
        assert state.metadata is not None
        if props.in_commit_timestamps(state.metadata.configuration):
            ts = commit_timestamp(state.commit_info)
            if ts is not None and state.commit_info and "inCommitTimestamp" in state.commit_info:
                return ts
        last = segment.last_commit
        if last is not None and int(last.name[:20]) == state.version:
            return last.modification_time
        return segment.checkpoint.files[0].modification_time if segment.checkpoint else 0

    # ------------------------------------------------------------ history and time

    def commit_records(self, start: int = 0, end: int | None = None) -> list[CommitRecord]:
        """Commits in ``[start, end]`` with monotonic timestamps, ascending.

        File modification times are made strictly increasing as delta-spark does, so
        timestamp time travel is well defined; in-commit timestamps are used as-is.
        """
        records: list[CommitRecord] = []
        prev = -1
        for version, status in list_commits(self.store, self.table_root, start):
            if end is not None and version > end:
                break
            info = self._read_commit(status.path).commit_info or {}
            ts = (
                int(info["inCommitTimestamp"])
                if "inCommitTimestamp" in info
                else status.modification_time
            )
            if "inCommitTimestamp" not in info and ts <= prev:
                ts = prev + 1
            prev = ts
            records.append(CommitRecord(version, ts, info))
        return records

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """DESCRIBE HISTORY rows, newest first: the commitInfo plus version and timestamp."""
        rows = []
        for rec in reversed(self.commit_records()):
            row = dict(rec.commit_info)
            row["version"] = rec.version
            row["timestamp"] = rec.timestamp
            rows.append(row)
            if limit is not None and len(rows) >= limit:
                break
        return rows

    def version_at_timestamp(self, timestamp_ms: int) -> int:
        """The latest version committed at or before ``timestamp_ms``."""
        records = self.commit_records()
        if not records:
            raise DeltaTableNotFoundError(f"{self.table_root} has no commits")
        if timestamp_ms < records[0].timestamp:
            raise VersionNotFoundError(
                f"timestamp {_fmt(timestamp_ms)} is before the earliest available version "
                f"{records[0].version} ({_fmt(records[0].timestamp)})"
            )
        if timestamp_ms > records[-1].timestamp:
            raise VersionNotFoundError(
                f"timestamp {_fmt(timestamp_ms)} is after the latest version "
                f"{records[-1].version} ({_fmt(records[-1].timestamp)})"
            )
        best = records[0].version
        for rec in records:
            if rec.timestamp <= timestamp_ms:
                best = rec.version
            else:
                break
        return best

    def snapshot_at_timestamp(self, timestamp_ms: int) -> Snapshot:
        return self.snapshot(self.version_at_timestamp(timestamp_ms))


def _fmt(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
