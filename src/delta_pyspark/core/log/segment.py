"""Which log files make up a snapshot (PROTOCOL.md "Delta Log Entries", "Checkpoints").

A log segment for version ``v`` is the newest complete checkpoint at or below
``v`` plus every commit after it up to ``v`` (optionally with log compaction
files standing in for runs of commits). Listing starts at the ``_last_checkpoint``
hint when it is usable and falls back to a full listing when it is not.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from delta_pyspark.core.storage.log_store import FileStatus, LogStore
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaTableNotFoundError,
    VersionNotFoundError,
)

log = logging.getLogger(__name__)

LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_UUID = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
COMPACTION_PATTERN = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CHECKSUM = re.compile(r"^(\d{20})\.crc$")
_MAX_VERSION = (1 << 63) - 1


def log_dir_of(table_root: str) -> str:
    return table_root.rstrip("/") + "/_delta_log"


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def checksum_name(version: int) -> str:
    return f"{version:020d}.crc"


def classic_checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


def uuid_checkpoint_name(version: int, uid: str, fmt: str) -> str:
    return f"{version:020d}.checkpoint.{uid}.{fmt}"


def commit_version(name: str) -> int | None:
    m = _COMMIT.match(name)
    return int(m.group(1)) if m else None


class CheckpointKind(Enum):
    CLASSIC = "classic"
    MULTIPART = "multipart"
    UUID = "uuid"  # v2 spec, JSON or Parquet


@dataclass(frozen=True)
class Checkpoint:
    """One complete checkpoint: its version, naming scheme and files (parts in order)."""

    version: int
    kind: CheckpointKind
    files: tuple[FileStatus, ...]

    @property
    def is_json(self) -> bool:
        return self.files[0].name.endswith(".json")


@dataclass(frozen=True)
class Compaction:
    """A log compaction file standing for commits ``start..end`` (inclusive)."""

    start: int
    end: int
    file: FileStatus


@dataclass(frozen=True)
class LogSegment:
    """The files to replay for ``version``: checkpoint, then deltas in version order.

    ``deltas`` holds commits and compactions interleaved in replay order; each entry
    is ``(first_version, last_version, file)``. ``commits`` keeps every commit file
    after the checkpoint (also those a compaction replaces) for history and timestamps.
    """

    log_dir: str
    version: int
    checkpoint: Checkpoint | None
    commits: tuple[FileStatus, ...]
    deltas: tuple[tuple[int, int, FileStatus], ...] = field(default=())

    @property
    def checkpoint_version(self) -> int:
        return self.checkpoint.version if self.checkpoint else -1

    @property
    def last_commit(self) -> FileStatus | None:
        return self.commits[-1] if self.commits else None


def read_last_checkpoint(store: LogStore, log_dir: str) -> dict[str, Any] | None:
    """Parse ``_last_checkpoint``; missing or corrupt means no hint (never an error)."""
    try:
        raw = store.read(f"{log_dir}/{LAST_CHECKPOINT}")
    except FileNotFoundError:
        return None
    except OSError as e:  # e.g. a directory of that name: the hint is unusable, not needed
        log.warning("ignoring unreadable %s/%s: %s", log_dir, LAST_CHECKPOINT, e)
        return None
    try:
        hint = json.loads(raw)
        version = hint["version"]
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(f"version is {version!r}")
        if not 0 <= version <= _MAX_VERSION:
            raise ValueError(f"version {version} is out of range")
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        log.warning("ignoring corrupt %s/%s: %s", log_dir, LAST_CHECKPOINT, e)
        return None
    return hint


@dataclass
class _Listing:
    commits: dict[int, FileStatus] = field(default_factory=dict)
    checkpoints: dict[int, list[Checkpoint]] = field(default_factory=dict)
    compactions: list[Compaction] = field(default_factory=list)
    any_file: bool = False
    newest_checksum: int = -1


def _check_version(name: str, log_dir: str) -> None:
    """Versions are Java longs: a file named beyond 2^63 - 1 is not a log file we can trust."""
    if int(name[:20]) > _MAX_VERSION:
        raise CorruptLogError(f"{log_dir}/{name}: version {name[:20]} is beyond 2^63 - 1")


def scan_log(store: LogStore, log_dir: str, start_version: int) -> _Listing:
    listing = _Listing()
    multipart: dict[tuple[int, int], dict[int, FileStatus]] = {}
    for status in store.list_from(log_dir, f"{start_version:020d}"):
        name = status.name
        listing.any_file = True
        if name[:20].isdigit():
            _check_version(name, log_dir)
        if m := _COMMIT.match(name):
            listing.commits[int(m.group(1))] = status
        elif m := _CLASSIC.match(name):
            v = int(m.group(1))
            listing.checkpoints.setdefault(v, []).append(
                Checkpoint(v, CheckpointKind.CLASSIC, (status,))
            )
        elif m := _UUID.match(name):
            v = int(m.group(1))
            listing.checkpoints.setdefault(v, []).append(
                Checkpoint(v, CheckpointKind.UUID, (status,))
            )
        elif m := _MULTIPART.match(name):
            v, part, parts = int(m.group(1)), int(m.group(2)), int(m.group(3))
            multipart.setdefault((v, parts), {})[part] = status
        elif m := _CHECKSUM.match(name):
            listing.newest_checksum = max(listing.newest_checksum, int(m.group(1)))
        elif m := COMPACTION_PATTERN.match(name):
            start, end = int(m.group(1)), int(m.group(2))
            if end > start:
                listing.compactions.append(Compaction(start, end, status))
    for (v, parts), found in multipart.items():
        if len(found) == parts and set(found) == set(range(1, parts + 1)):
            files = tuple(found[i] for i in range(1, parts + 1))
            listing.checkpoints.setdefault(v, []).append(
                Checkpoint(v, CheckpointKind.MULTIPART, files)
            )
        else:
            log.warning("ignoring incomplete multi-part checkpoint at version %d", v)
    return listing


def _preferred(candidates: list[Checkpoint]) -> Checkpoint:
    """Among complete checkpoints of one version prefer v2 UUID, then classic, then multi-part."""
    order = {CheckpointKind.UUID: 0, CheckpointKind.CLASSIC: 1, CheckpointKind.MULTIPART: 2}
    return min(candidates, key=lambda c: order[c.kind])


def build_log_segment(
    store: LogStore,
    table_root: str,
    version: int | None = None,
    use_compactions: bool = True,
) -> LogSegment:
    """Select the files that reconstruct ``version`` (latest when None)."""
    log_dir = log_dir_of(table_root)
    hint = read_last_checkpoint(store, log_dir)
    start = 0
    if hint is not None and (version is None or int(hint["version"]) <= version):
        start = int(hint["version"])
    listing = scan_log(store, log_dir, start)
    segment = _segment_from(listing, log_dir, version, use_compactions)
    if version is None and segment is not None and listing.newest_checksum > segment.version:
        # A checksum is written after its commit: listed without it, the commit may have
        # landed between two names of the listing. Listed again, it must be there.
        listing = scan_log(store, log_dir, start)
        segment = _segment_from(listing, log_dir, version, use_compactions)
        if segment is not None and listing.newest_checksum > segment.version:
            raise CorruptLogError(
                f"{log_dir}: the checksum of version {listing.newest_checksum} exists but the "
                f"log ends at version {segment.version}: its newest commit(s) were lost"
            )
    if segment is None and start > 0:
        log.warning("_last_checkpoint points at version %d which is unusable; listing all", start)
        listing = scan_log(store, log_dir, 0)
        segment = _segment_from(listing, log_dir, version, use_compactions)
    if segment is None:
        if not listing.any_file and not store.is_dir(log_dir):
            raise DeltaTableNotFoundError(f"{table_root} is not a Delta table: no {log_dir}")
        if not listing.commits and not listing.checkpoints:
            raise DeltaTableNotFoundError(
                f"{table_root} is not a Delta table: {log_dir} holds no commit or checkpoint"
            )
        raise VersionNotFoundError(_version_error(listing, version))
    return segment


def _version_error(listing: _Listing, version: int | None) -> str:
    available = sorted(listing.commits)
    if version is not None and available and version > available[-1]:
        return f"cannot time travel to version {version}: the latest version is {available[-1]}"
    if version is not None and available:
        return (
            f"cannot reconstruct version {version}: its log has been cleaned up "
            f"(earliest commit available is {available[0]}, with no checkpoint at or below "
            f"{version})"
        )
    return "cannot reconstruct the table: no checkpoint and no commit 0 in the log"


def _segment_from(
    listing: _Listing, log_dir: str, version: int | None, use_compactions: bool
) -> LogSegment | None:
    commit_versions = sorted(listing.commits)
    checkpoint_versions = sorted(listing.checkpoints)
    latest = max(
        commit_versions[-1] if commit_versions else -1,
        checkpoint_versions[-1] if checkpoint_versions else -1,
    )
    target = latest if version is None else version
    if target < 0 or target > latest:
        return None
    usable = [v for v in checkpoint_versions if v <= target]
    checkpoint = _preferred(listing.checkpoints[usable[-1]]) if usable else None
    first = checkpoint.version + 1 if checkpoint else 0
    got = [v for v in commit_versions if first <= v <= target]
    commits = tuple(listing.commits[v] for v in got)
    # ``got`` is sorted, duplicate-free and within ``first..target``: it is contiguous iff
    # it has that many versions (no range is built, so a stray huge version stays cheap)
    if len(got) != target - first + 1:
        if checkpoint is None and (not got or got[0] != 0):
            return None
        raise CorruptLogError(
            f"{log_dir}: versions are not contiguous; missing commit(s) "
            f"{_missing(got, first, target)} between {first} and {target}"
        )
    if checkpoint is None and target < 0:
        return None
    deltas: list[tuple[int, int, FileStatus]] = []
    compactions = sorted(listing.compactions, key=lambda c: (c.start, -c.end))
    v = first
    while v <= target:
        best = None
        if use_compactions:
            best = next((c for c in compactions if c.start == v and c.end <= target), None)
        if best is not None:
            deltas.append((best.start, best.end, best.file))
            v = best.end + 1
        else:
            deltas.append((v, v, listing.commits[v]))
            v += 1
    return LogSegment(log_dir, target, checkpoint, commits, tuple(deltas))


def _missing(got: list[int], first: int, last: int, most: int = 10) -> list[int]:
    """Up to ``most`` versions in ``first..last`` absent from the sorted ``got``."""
    out: list[int] = []
    expected = first
    for v in [*got, last + 1]:
        while expected < v and len(out) < most:
            out.append(expected)
            expected += 1
        expected = v + 1
    return out


def list_commits(store: LogStore, table_root: str, start: int = 0) -> list[tuple[int, FileStatus]]:
    """All commit files from ``start`` on, ascending (history, timestamps, conflicts)."""
    out = []
    for status in store.list_from(log_dir_of(table_root), f"{start:020d}"):
        v = commit_version(status.name)
        if v is not None:
            out.append((v, status))
    return out


def extend_segment(
    store: LogStore, segment: LogSegment
) -> tuple[LogSegment, tuple[FileStatus, ...]] | None:
    """``segment`` moved forward to the newest commit, listing only from its version, and
    the commit files added after it (in order; none when nothing was committed).

    When a newer complete checkpoint is listed the segment restarts at it (the checkpoint
    is named, not read) so it stays short. None when the listing cannot extend the
    segment and a full load is needed: the file ``segment.version`` was read from is gone
    or rewritten (the table was deleted and recreated, or cleaned up), or versions have a
    gap.
    """
    listing = scan_log(store, segment.log_dir, segment.version)
    if not _same_anchor(listing, segment):
        return None
    newer = sorted(v for v in listing.commits if v > segment.version)
    latest = max([*newer, *listing.checkpoints, segment.version])
    if latest == segment.version:
        return segment, ()
    if newer != list(range(segment.version + 1, latest + 1)):
        return None
    added = tuple(listing.commits[v] for v in newer)
    checkpoints = [v for v in listing.checkpoints if v > segment.version]
    if checkpoints:
        checkpoint = _preferred(listing.checkpoints[max(checkpoints)])
        kept = tuple((v, v, s) for v, s in zip(newer, added, strict=True) if v > checkpoint.version)
        extended = LogSegment(
            segment.log_dir, latest, checkpoint, tuple(s for _, _, s in kept), kept
        )
    else:
        extended = with_commits(segment, latest, added)
    return extended, added


def with_commits(segment: LogSegment, version: int, added: tuple[FileStatus, ...]) -> LogSegment:
    """``segment`` followed by the commit files ``added`` (consecutive, up to ``version``)."""
    deltas = tuple((v, v, s) for s in added for v in (int(s.name[:20]),))
    return LogSegment(
        segment.log_dir,
        version,
        segment.checkpoint,
        segment.commits + added,
        segment.deltas + deltas,
    )


def _same_anchor(listing: _Listing, segment: LogSegment) -> bool:
    """Whether the file ``segment.version`` was loaded from is still listed unchanged
    (same size and modification time): a recreated table rewrites it."""
    last = segment.last_commit
    if last is not None and int(last.name[:20]) == segment.version:
        return listing.commits.get(segment.version) == last
    checkpoint = segment.checkpoint
    if checkpoint is not None and checkpoint.version == segment.version:
        listed = listing.checkpoints.get(segment.version, [])
        return any(c.files == checkpoint.files for c in listed)
    return False


def ratified_segment(
    store: LogStore,
    table_root: str,
    version: int | None,
    latest_ratified: int,
    unpublished: dict[int, FileStatus],
) -> LogSegment:
    """The segment of a catalog-managed table: published files up to the first commit the
    catalog still stores, then the catalog's (staged) commits up to ``version`` (latest
    ratified when None). Published files past the latest ratified version are ignored and
    the catalog's commit wins over a published file of the same version."""
    log_dir = log_dir_of(table_root)
    target = latest_ratified if version is None else version
    if target > latest_ratified:
        raise VersionNotFoundError(
            f"cannot time travel to version {version}: the latest version is {latest_ratified}"
        )
    if target < 0:
        raise DeltaTableNotFoundError(f"{table_root} has no ratified commit yet")
    published_end = min(target, min(unpublished, default=target + 1) - 1)
    base = (
        build_log_segment(store, table_root, published_end)
        if published_end >= 0
        else LogSegment(log_dir, -1, None, ())
    )
    needed = range(base.version + 1, target + 1)
    missing = [v for v in needed if v not in unpublished]
    if missing:
        raise CorruptLogError(
            f"{log_dir}: ratified commit(s) {missing[:10]} are neither published nor stored "
            "by the catalog"
        )
    return with_commits(base, target, tuple(unpublished[v] for v in needed))
