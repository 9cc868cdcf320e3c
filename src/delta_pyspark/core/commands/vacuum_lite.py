"""VACUUM LITE's plan: the files the log itself removed, without listing the table.

A full VACUUM lists every file under the table root, which on an object store is a
paginated listing of the whole table. LITE (delta-spark 3.3's ``VACUUM ... LITE``) reads
only commits: the files their ``remove`` actions name are the candidates, and the same
rules as a full VACUUM keep those any version within the retention period, the current
snapshot or a registered shallow clone still needs (``vacuum_plan``). Files no commit
removed (a failed writer's leftovers) are not found: that is what FULL is for.

Which commits: those outside the retention window (committed at or before ``now -
retention``) that no earlier VACUUM has covered. Each VACUUM records the newest such
version in ``_delta_log/_last_vacuum_info`` (delta-spark's file and field, so each engine
continues from the other's), and LITE starts right after it, or at version 0. If log
cleanup has removed a commit of that range, the files it removed can no longer be found,
and LITE refuses (``VacuumLiteUnavailableError``: run FULL) instead of leaving them
silently. Nothing outside the table root is ever deleted.
"""

from __future__ import annotations

import json

from delta_pyspark.core.commands.vacuum_plan import (
    VacuumPlan,
    clone_references,
    referenced_files,
    retention_window,
    snapshot_references,
)
from delta_pyspark.core.log.table_paths import dv_file_path, resolve_path
from delta_pyspark.core.snapshot.delta_log import CommitRecord, DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.locations import is_inside, join, normalise
from delta_pyspark.core.storage.log_store import FileStatus
from delta_pyspark.exceptions import CorruptLogError, VacuumLiteUnavailableError

LAST_VACUUM_INFO = "_last_vacuum_info"
_FIELD = "latestCommitVersionOutsideOfRetentionWindow"


def last_vacuum_version(log: DeltaLog) -> int | None:
    """The newest commit an earlier VACUUM covered (None: no VACUUM recorded one)."""
    path = join(log.log_dir, LAST_VACUUM_INFO)
    try:
        body = json.loads(log.store.read(path))
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise CorruptLogError(f"{path} is not JSON ({e}); delete it and run VACUUM FULL") from e
    value = body.get(_FIELD) if isinstance(body, dict) else None
    return value if isinstance(value, int) else None


def record_last_vacuum(log: DeltaLog, version: int) -> None:
    """Remember that commits up to ``version`` are covered (a hint: losing it only makes
    the next LITE start earlier or refuse)."""
    data = json.dumps({_FIELD: version}).encode()
    log.store.write(join(log.log_dir, LAST_VACUUM_INFO), data, durable=False)


def latest_version_outside(records: list[CommitRecord], cutoff_ms: int) -> int | None:
    """The newest of ``records`` committed at or before ``cutoff_ms`` (None: none was)."""
    outside = [r.version for r in records if r.timestamp <= cutoff_ms]
    return outside[-1] if outside else None


def covered_by_full_vacuum(log: DeltaLog, cutoff_ms: int) -> int | None:
    """The newest commit a full VACUUM with this cutoff covered, when newer than the
    recorded one (a later LITE then reads only commits after it)."""
    last = last_vacuum_version(log)
    return latest_version_outside(log.commit_records(0 if last is None else last + 1), cutoff_ms)


def plan_vacuum_lite(
    log: DeltaLog,
    retention_hours: float | None = None,
    *,
    check_enabled: bool = True,
    now_ms: int | None = None,
    snapshot: Snapshot | None = None,
) -> VacuumPlan:
    """Choose the files the log removed that no retained version needs (deletes nothing)."""
    snapshot = snapshot or log.snapshot()
    window = retention_window(snapshot, retention_hours, check_enabled, now_ms)
    cutoff = window.delete_before_ms
    root = normalise(snapshot.table_root)
    last = last_vacuum_version(log)
    start = 0 if last is None else last + 1
    earliest = log.commit_files()[0][0]
    if earliest > start:
        raise VacuumLiteUnavailableError(
            f"VACUUM LITE cannot find every file to delete in {snapshot.table_root}: the "
            f"log starts at version {earliest}, and the commits before it (after "
            f"{'the last VACUUM' if last is not None else 'the table was created'}) are "
            "gone, so the files they removed are named nowhere. Run VACUUM FULL."
        )
    end = latest_version_outside(log.commit_records(start), cutoff)
    doomed: list[FileStatus] = []
    if end is not None:
        removed = _removed_files(log, root, start, end)
        if removed:
            keep = snapshot_references(snapshot, cutoff, referenced_files(root, snapshot.files))
            keep |= clone_references(root, cutoff)
            doomed = [
                FileStatus(path, size, 0)
                for path, size in sorted(removed.items())
                if path not in keep and is_inside(root, path)
            ]
    return VacuumPlan(snapshot, root, window, doomed, {}, lite_end_version=end)


def _removed_files(log: DeltaLog, root: str, start: int, end: int) -> dict[str, int]:
    """The data and deletion-vector files ``remove`` actions of commits ``start..end``
    name, with their sizes as the log gives them (0 when it does not)."""
    out: dict[str, int] = {}
    for version, actions in log.commits(start):
        if version > end:
            break
        for remove in actions.removes:
            out[resolve_path(root, remove["path"])] = int(remove.get("size") or 0)
            dv = remove.get("deletionVector")
            dv_path = dv_file_path(root, dv)
            if dv_path is not None:
                out.setdefault(dv_path, 0)  # the log gives the vector's size, not its file's
    return out
