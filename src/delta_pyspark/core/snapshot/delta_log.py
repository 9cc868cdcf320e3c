"""The table handle: loads snapshots (latest, by version, by timestamp), refreshes
them incrementally, and reads history. Storage is reached only via ``LogStore``.

``DeltaLog.for_table`` hands out one shared handle per table root for the whole
process; it keeps the latest snapshot and brings it forward by reading only the
commits after it, as delta-spark's ``DeltaLog.update`` does. The cache is bounded by
tables and by Arrow bytes (``configure_log_cache`` or the ``DELTA_PYSPARK_LOG_CACHE_*``
environment variables).

The module is a little over 500 lines because the handle and its process-wide cache
share the handle's private state (``_key``, ``_latest``) under one lock discipline;
splitting them would make that state public or the import circular.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from delta_pyspark.core.log import checksum
from delta_pyspark.core.log.arrow_buffers import bulk_allocations
from delta_pyspark.core.log.checkpoint import load_state
from delta_pyspark.core.log.commit_actions import CommitActions, parse_actions, parse_compaction
from delta_pyspark.core.log.commit_batch import CommitBatch, parse_commits
from delta_pyspark.core.log.replay import TableState
from delta_pyspark.core.log.segment import (
    LogSegment,
    build_log_segment,
    commit_name,
    extend_segment,
    list_commits,
    log_dir_of,
    ratified_segment,
    with_commits,
)
from delta_pyspark.core.log.validation import validate_state
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import CommitInfo, commit_timestamp
from delta_pyspark.core.protocol.table_features import check_readable
from delta_pyspark.core.snapshot import transaction_scope
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.commit_coordinator import CommitCoordinator
from delta_pyspark.core.storage.locations import normalise
from delta_pyspark.core.storage.log_store import FileStatus, LogStore, log_store_for
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
    VersionNotFoundError,
)

# Default bounds of the process-wide snapshot cache; delta-spark keeps 100 tables too.
DEFAULT_CACHE_TABLES = 100
DEFAULT_CACHE_BYTES = 1 << 30
CACHE_TABLES_ENV = "DELTA_PYSPARK_LOG_CACHE_TABLES"
CACHE_BYTES_ENV = "DELTA_PYSPARK_LOG_CACHE_BYTES"


@dataclass(frozen=True)
class CommitRecord:
    """One commit for history: version, effective timestamp (ms) and its commitInfo."""

    version: int
    timestamp: int
    commit_info: CommitInfo


class DeltaLog:
    """Entry point to one table's transaction log.

    A handle built directly loads every snapshot from storage; the shared handle from
    ``for_table`` caches the latest one (see the module docstring). With a
    ``coordinator`` (a catalog-managed table reached through its catalog) commits go
    through it and reads merge its ratified commits with the published ones.
    """

    def __init__(
        self,
        table_root: str,
        store: LogStore | None = None,
        coordinator: CommitCoordinator | None = None,
    ) -> None:
        self.table_root = table_root.rstrip("/") or "/"
        self.store = store or log_store_for(table_root)
        self.log_dir = log_dir_of(self.table_root)
        self.coordinator = coordinator
        self._key: _CacheKey | None = None  # set on the shared handle
        self._lock = threading.Lock()  # one refresh at a time per shared handle
        self._latest: Snapshot | None = None

    @classmethod
    def for_table(cls, table_root: str, store: LogStore | None = None) -> DeltaLog:
        """The process-wide handle of ``table_root`` (one per normalised root and store)."""
        return _CACHE.handle(table_root, store)

    @property
    def access_features(self) -> frozenset[str]:
        """Table features this handle's access path implements (see ``check_readable``)."""
        return self.coordinator.features if self.coordinator else frozenset()

    # ------------------------------------------------------------ commits

    def write_commit(self, version: int, data: bytes) -> None:
        """The commit point: put-if-absent of ``<v>.json``, or the coordinator's ratification.
        Raises ``FileAlreadyExistsError`` when another commit won ``version``."""
        if self.coordinator is not None:
            self.coordinator.commit(version, data)
        elif not self.store.atomic_put_if_absent:
            raise DeltaUnsupportedOperationException(
                f"cannot commit to {self.table_root} by path: its store has no atomic "
                "put-if-absent, so concurrent commits could overwrite each other; commit "
                "through a catalog (a catalog-managed table)"
            )
        else:
            self.store.write_if_absent(f"{self.log_dir}/{commit_name(version)}", data)

    def commit_files(self, start: int = 0) -> list[tuple[int, FileStatus]]:
        """Every commit from ``start`` on, ascending: the listed ones, or for a coordinated
        table the published ones up to the latest ratified version with the coordinator's
        commits in place of the versions it still stores."""
        if self.coordinator is None:
            return list_commits(self.store, self.table_root, start)
        ratified = self.coordinator.ratified_commits(start)
        stored = dict(ratified.unpublished)
        published = [
            (v, s)
            for v, s in list_commits(self.store, self.table_root, start)
            if v <= ratified.latest_version and v not in stored
        ]
        return sorted([*published, *stored.items()], key=lambda c: c[0])

    # ------------------------------------------------------------ snapshots

    def is_delta_table(self) -> bool:
        try:
            build_log_segment(self.store, self.table_root)
        except DeltaTableNotFoundError:
            return False
        return True

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The latest snapshot, or the one at ``version`` (time travel, never cached)."""
        return self.latest() if version is None else self._load(version)

    def latest(self) -> Snapshot:
        """The latest snapshot; the shared handle refreshes its cached one with ``update``
        and keeps the result only when it loaded without error. Inside a multi-table
        transaction, its tables read as the transaction sees them (``transaction_scope``)."""
        txn = transaction_scope.current()
        if txn is not None:
            seen = txn.view(self)
            if seen is not None:
                return seen
        if self._key is None:
            return self._load(None)
        owner = _CACHE.owner(self)
        with owner._lock:
            cached = owner._latest
            fresh = owner.update(cached) if cached is not None else owner._load(None)
            owner._latest = fresh
            _CACHE.stored(owner, fresh)  # an unchanged one too: it may have parsed stats since
        return fresh

    def remember(self, snapshot: Snapshot) -> None:
        """Cache a writer's post-commit ``snapshot`` if it is newer than the cached one."""
        if self._key is None:
            return
        owner = _CACHE.owner(self)
        with owner._lock:
            cached = owner._latest
            if cached is None or snapshot.version > cached.version:
                owner._latest = snapshot
                _CACHE.stored(owner, snapshot)

    def _load(self, version: int | None) -> Snapshot:
        if version is not None and version < 0:
            raise VersionNotFoundError(f"invalid version {version}: versions start at 0")
        if self.coordinator is not None:
            ratified = self.coordinator.ratified_commits(0, version)
            segment = ratified_segment(
                self.store,
                self.table_root,
                version,
                ratified.latest_version,
                dict(ratified.unpublished),
            )
        else:
            segment = build_log_segment(self.store, self.table_root, version)
        with bulk_allocations():
            state = load_state(self.store, segment.checkpoint, self.log_dir)
            state = self._replay(state, segment)
        return self._finish(state, segment)

    def update(self, snapshot: Snapshot) -> Snapshot:
        """The latest snapshot, listing from ``snapshot``'s version and reading only the
        newer commits; a full load when that cannot be done (see ``extend_segment``)."""
        if self.coordinator is not None:
            return self._load(None)
        extended = extend_segment(self.store, snapshot.segment)
        if extended is None:
            return self._load(None)
        segment, added = extended
        if not added:
            return snapshot
        state = snapshot.state.apply(segment.version, self._read_commits([s.path for s in added]))
        return self._finish(state, segment, snapshot)

    def apply_commits(
        self, snapshot: Snapshot, version: int, commits: list[CommitActions]
    ) -> Snapshot:
        """The snapshot at ``version`` from ``snapshot`` plus the commits after it, all already
        parsed in memory (a writer's winners and its own commit): no log re-read."""
        statuses = tuple(s for v, s in self.commit_files(snapshot.version + 1) if v <= version)
        state = snapshot.state.apply(version, commits)
        return self._finish(state, with_commits(snapshot.segment, version, statuses), snapshot)

    def with_pending(self, snapshot: Snapshot, commit: CommitActions) -> Snapshot:
        """``snapshot`` with ``commit`` applied as its next version, which is not committed:
        what a transaction's later statements read. Never cached, and no checksum applies."""
        version = snapshot.version + 1
        state = snapshot.state.apply(version, [commit])
        segment = with_commits(snapshot.segment, version, ())
        return self._finish(state, segment, snapshot, pending=True)

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

    def _finish(
        self,
        state: TableState,
        segment: LogSegment,
        base: Snapshot | None = None,
        pending: bool = False,
    ) -> Snapshot:
        """Check and wrap ``state``; ``base``: the validated snapshot whose state it was
        applied to; ``pending``: its last version is not committed (``with_pending``)."""
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
        check_readable(state.protocol, self.table_root, self.access_features)
        incremental, stats = False, None
        if base is not None and base.metadata == state.metadata:
            incremental = True  # the files that stayed keep their parsed stats
            stats = base.stats_cache.carried(state.files, state.dropped)
        timestamp = self._timestamp_of(state, segment)
        snapshot = Snapshot(self.table_root, state, segment, timestamp, stats)
        validate_state(
            state,
            snapshot.schema,
            self.table_root,
            lambda path: self._locate(segment, path),
            appended_only=incremental,
        )
        # A pending state has no checksum: a file of its version would be another writer's.
        crc = None if pending else checksum.read_checksum(self.store, self.log_dir, state.version)
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

    def commits(self, start: int = 0) -> Iterator[tuple[int, CommitActions]]:
        """Each commit from ``start`` on with its actions as written, ascending (read one
        at a time: a streaming read follows them)."""
        for version, status in self.commit_files(start):
            yield version, self._read_commit(status.path)

    def commit_records(self, start: int = 0, end: int | None = None) -> list[CommitRecord]:
        """Commits in ``[start, end]`` with monotonic timestamps, ascending.

        File modification times are made strictly increasing as delta-spark does, so
        timestamp time travel is well defined; in-commit timestamps are used as-is.
        """
        records: list[CommitRecord] = []
        prev = -1
        for version, status in self.commit_files(start):
            if end is not None and version > end:
                break
            info: CommitInfo = self._read_commit(status.path).commit_info or {}
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


# ---------------------------------------------------------------- the process-wide cache

_CacheKey = tuple[str, LogStore | None]


@dataclass(frozen=True)
class LogCacheInfo:
    """What the cache holds now and its bounds."""

    tables: int
    bytes: int
    max_tables: int
    max_bytes: int


def snapshot_bytes(snapshot: Snapshot) -> int:
    """The estimate the cache counts: the Arrow buffers of the file and tombstone lists and
    of the parsed stats kept so far."""
    return snapshot.list_bytes + snapshot.stats_cache.nbytes


class _LogCache:
    """Shared ``DeltaLog`` handles, least recently used first; evicting one drops its
    snapshot. Its lock guards only this bookkeeping, never a load."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: OrderedDict[_CacheKey, DeltaLog] = OrderedDict()
        self._bytes: dict[_CacheKey, int] = {}
        self.max_tables: int | None = None  # None: environment variable or default
        self.max_bytes: int | None = None
        # Which coordinator a new handle commits through (None: the filesystem).
        self.coordinators: Callable[[str], CommitCoordinator | None] | None = None

    def handle(self, table_root: str, store: LogStore | None) -> DeltaLog:
        key = (normalise(table_root), store)
        with self._lock:
            log = self._logs.get(key)
            if log is None:
                coordinator = self.coordinators(key[0]) if self.coordinators else None
                log = DeltaLog(key[0], store, coordinator)
                log._key = key
                self._logs[key] = log
            self._logs.move_to_end(key)
            self._evict(keep=log)
            return log

    def owner(self, log: DeltaLog) -> DeltaLog:
        """The registered handle for ``log``'s table: ``log`` itself, re-registered if it
        was evicted and nobody took its place."""
        assert log._key is not None
        with self._lock:
            current = self._logs.setdefault(log._key, log)
            self._logs.move_to_end(log._key)
            self._evict(keep=current)
            return current

    def stored(self, log: DeltaLog, snapshot: Snapshot) -> None:
        """Account for ``log``'s new snapshot and evict to stay within the bounds."""
        assert log._key is not None
        with self._lock:
            if self._logs.get(log._key) is not log:  # evicted while it was loading
                log._latest = None
                return
            self._bytes[log._key] = snapshot_bytes(snapshot)
            self._evict(keep=log)

    def _evict(self, keep: DeltaLog | None) -> None:
        """Drop least recently used handles until within the bounds; ``keep`` (the one in
        use) goes last: alone over the byte bound it stays registered, uncached."""
        max_tables, max_bytes = self.limits()
        for old in [k for k, log in self._logs.items() if log is not keep]:
            if len(self._logs) <= max_tables and sum(self._bytes.values()) <= max_bytes:
                return
            self._drop(old)
        key = keep._key if keep is not None else None
        if keep is None or key is None or key not in self._logs:
            return
        if len(self._logs) > max_tables:
            self._drop(key)
        elif sum(self._bytes.values()) > max_bytes:
            keep._latest = None
            self._bytes.pop(key, None)

    def _drop(self, key: _CacheKey) -> None:
        self._logs.pop(key)._latest = None
        self._bytes.pop(key, None)

    def limits(self) -> tuple[int, int]:
        return (
            self.max_tables
            if self.max_tables is not None
            else _env_limit(CACHE_TABLES_ENV, DEFAULT_CACHE_TABLES),
            self.max_bytes
            if self.max_bytes is not None
            else _env_limit(CACHE_BYTES_ENV, DEFAULT_CACHE_BYTES),
        )

    def info(self) -> LogCacheInfo:
        with self._lock:
            return LogCacheInfo(len(self._logs), sum(self._bytes.values()), *self.limits())

    def clear(self) -> None:
        with self._lock:
            for key in list(self._logs):
                self._drop(key)


def _env_limit(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise DeltaIllegalArgumentException(f"{name}={raw!r}: expected a whole number >= 0")
    return value


_CACHE = _LogCache()


def configure_log_cache(max_tables: int | None = None, max_bytes: int | None = None) -> None:
    """Set the cache's bounds for this process (None: back to the environment variable
    or the default); 0 tables or 0 bytes turns caching off. Evicts at once if needed."""
    for name, value in (("max_tables", max_tables), ("max_bytes", max_bytes)):
        if value is not None and value < 0:
            raise DeltaIllegalArgumentException(f"{name} must be >= 0, got {value}")
    with _CACHE._lock:
        _CACHE.max_tables, _CACHE.max_bytes = max_tables, max_bytes
        _CACHE._evict(keep=None)


def log_cache_info() -> LogCacheInfo:
    return _CACHE.info()


def set_coordinator_resolver(resolver: Callable[[str], CommitCoordinator | None] | None) -> None:
    """Let ``resolver`` name the commit coordinator of each table root a shared handle is made
    for (a catalog that manages the table's commits), so every entry point of the process
    reads and commits through it; None: back to the filesystem. Cached handles are dropped."""
    with _CACHE._lock:
        _CACHE.coordinators = resolver
    _CACHE.clear()


def clear_log_cache() -> None:
    """Forget every cached snapshot (tests; after changing tables behind the log's back)."""
    _CACHE.clear()
