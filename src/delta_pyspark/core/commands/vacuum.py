"""VACUUM: delete the files ``vacuum_plan`` chose, between a VACUUM START and a VACUUM
END commit (delta-spark's VacuumCommand), so the table's history records what ran.

Deletion re-checks the plan against commits that landed since it was made (a file
referenced again is spared) and against directories swapped for links since listing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from delta_pyspark.core.commands.vacuum_lite import (
    covered_by_full_vacuum,
    plan_vacuum_lite,
    record_last_vacuum,
)
from delta_pyspark.core.commands.vacuum_plan import VacuumPlan, plan_vacuum, referenced_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.locations import is_inside, join, parent, relative_to
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import DeltaAnalysisException

_logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- execution


@dataclass
class VacuumResult:
    plan: VacuumPlan
    dry_run: bool
    num_deleted_files: int = 0
    num_vacuumed_directories: int = 0
    versions: list[int] = field(default_factory=list)  # START and END commits


def _in_place(store: LogStore, root: str, paths: list[str]) -> list[str]:
    """``paths`` whose directory still is the one listed: one swapped for a symbolic
    link since the listing would take the deletion out of the table (skipped, logged)."""
    real_root = store.real_path(root)
    same: dict[str, bool] = {}
    out = []
    for path in paths:
        directory = parent(path)
        if directory not in same:
            listed_as = (
                real_root if directory == root else join(real_root, relative_to(directory, root))
            )
            same[directory] = store.real_path(directory) == listed_as
            if not same[directory]:
                _logger.warning("VACUUM: %s changed into a link since listing; skipped", directory)
        if same[directory]:
            out.append(path)
    return out


def _delete_all(store: LogStore, paths: list[str], parallelism: int) -> int:
    def delete(path: str) -> int:
        return int(store.delete(path))

    if not paths:
        return 0
    workers = max(1, min(parallelism, len(paths)))
    if workers == 1:
        return sum(delete(p) for p in paths)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(delete, paths))


def _remove_empty_dirs(store: LogStore, plan: VacuumPlan, deleted: list[str]) -> int:
    """Remove directories that are empty now, deepest first: those we emptied, and old
    empty ones (a recent empty directory may be a concurrent writer's)."""
    emptied: set[str] = set()
    for path in deleted:
        up = parent(path)
        while is_inside(plan.root, up):
            if up in emptied:
                break
            emptied.add(up)
            up = parent(up)
    removed = 0
    for directory in sorted(plan.dirs, key=lambda d: d.count("/"), reverse=True):
        if directory not in emptied and plan.dirs[directory] >= plan.delete_before_ms:
            continue
        if not store.remove_empty_dir(directory):
            continue
        removed += 1
        emptied.add(parent(directory))
    return removed


def _commit(
    log: DeltaLog,
    snapshot: Snapshot,
    operation: str,
    params: dict[str, Any],
    metrics: dict[str, Any],
) -> Snapshot:
    txn = Transaction(log, snapshot)
    return txn.commit(operation, params, metrics)


def vacuum(
    log: DeltaLog,
    retention_hours: float | None = None,
    *,
    dry_run: bool = False,
    check_enabled: bool = True,
    now_ms: int | None = None,
    parallelism: int = 8,
    before_delete: Callable[[VacuumPlan], None] | None = None,
    trust_damaged_log: bool = False,
    lite: bool = False,
    inventory: Iterable[tuple[str, int, bool, int]] | None = None,
) -> VacuumResult:
    """Run VACUUM; a dry run only plans. A real run commits VACUUM START (with what it
    will delete), deletes, and commits VACUUM END (COMPLETED, or FAILED and re-raise).
    ``lite``: plan from the log's removes instead of listing the table (``vacuum_lite``);
    ``inventory``: plan from an inventory of the storage's files instead of a listing
    (``vacuum_plan.inventory_listing``).

    A state VACUUM cannot trust (module doc) raises a ``CorruptLogError`` before any
    commit or deletion; ``trust_damaged_log=True`` acts on it anyway.
    """
    if lite and inventory is not None:
        raise DeltaAnalysisException(
            "VACUUM LITE finds its files in the log: it takes no inventory (USING INVENTORY "
            "is for a FULL vacuum)"
        )
    if lite:
        plan = plan_vacuum_lite(log, retention_hours, check_enabled=check_enabled, now_ms=now_ms)
    else:
        plan = plan_vacuum(
            log,
            retention_hours,
            check_enabled=check_enabled,
            now_ms=now_ms,
            trust_damaged_log=trust_damaged_log,
            inventory=inventory,
        )
    result = VacuumResult(plan, dry_run)
    if dry_run:
        return result
    # what the next LITE may skip: a full VACUUM covers the commits a LITE one would read
    # (an inventory may be partial: what it lacks was not vacuumed)
    if lite:
        covered = plan.lite_end_version
    elif inventory is None:
        covered = covered_by_full_vacuum(log, plan.delete_before_ms)
    else:
        covered = None
    params: dict[str, Any] = {
        "retentionCheckEnabled": check_enabled,
        "defaultRetentionMillis": plan.window.default_retention_ms,
    }
    if plan.window.specified_retention_ms is not None:
        params["specifiedRetentionMillis"] = plan.window.specified_retention_ms
    started = _commit(
        log,
        plan.snapshot,
        "VACUUM START",
        params,
        {"numFilesToDelete": len(plan.files_to_delete), "sizeOfDataToDelete": plan.size_to_delete},
    )
    result.versions.append(started.version)
    if before_delete is not None:
        before_delete(plan)
    # Commits that landed since planning (the START commit's snapshot includes them)
    # may reference a listed file again (e.g. a RESTORE of an old version): spare it.
    again = referenced_files(plan.root, log.update(started).files)
    doomed = _in_place(log.store, plan.root, [p for p in plan.paths if p not in again])
    try:
        result.num_deleted_files = _delete_all(log.store, doomed, parallelism)
        result.num_vacuumed_directories = _remove_empty_dirs(log.store, plan, doomed)
    except BaseException:
        ended = _commit(log, log.update(started), "VACUUM END", {"status": "FAILED"}, {})
        result.versions.append(ended.version)
        raise
    ended = _commit(
        log,
        log.update(started),
        "VACUUM END",
        {"status": "COMPLETED"},
        {
            "numDeletedFiles": result.num_deleted_files,
            "numVacuumedDirectories": result.num_vacuumed_directories,
        },
    )
    result.versions.append(ended.version)
    if covered is not None:
        record_last_vacuum(log, covered)
    return result
