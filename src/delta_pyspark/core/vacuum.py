"""VACUUM: delete the files under a table directory that no version within the
retention period needs (PROTOCOL.md "Add File and Remove File": tombstones expire
after a user-specified threshold; delta-spark's VacuumCommand semantics).

A file under the table root is kept when any of these hold:

- the latest snapshot references it (data file, or the file holding its deletion
  vector);
- a tombstone whose ``deletionTimestamp`` is within the retention window names it
  (or its deletion vector file): time travel to those versions still works;
- its modification time is within the retention window: a concurrent writer may
  have written it and not committed yet;
- a registered shallow clone still references it (see below);
- its name, or the name of any directory between it and the root, is hidden:
  starts with ``_`` or ``.`` (``_delta_log``, ``_delta_staging``, Spark's ``.crc``
  files), or is ``metadata``; as in delta-spark, partition directories
  (``<partition column>=...``, even ``_col=1``), ``_change_data`` and
  ``_delta_index`` are *not* hidden;
- it lies in a nested directory that is itself a Delta table (has a
  ``_delta_log``): another table's files are never this table's garbage.

Everything else is deleted, then directories left empty by the deletion are
removed. Nothing outside the table root is ever listed, so a file an ``add``
references by absolute path elsewhere (a shallow clone's source file) can never
be deleted by the clone's VACUUM. Symbolic links to directories are not followed.

Shallow clones: CLONE records every shallow clone in the *source* directory under
``_delta_clones/<uuid>.json`` (``{"clonePath": ..., "sourceVersion": ...}``). The
directory starts with ``_``, so other Delta readers and VACUUM ignore it. VACUUM of
the source keeps every file each registered clone that still exists references at
its latest version, plus its tombstones within this VACUUM's retention window, and
follows the clones' own registries (clones of clones). A registered clone whose
table does not exist yet (its commit in flight) protects the source version it is
being made from while its registry entry is within the retention window. Clones a
registry does not know about (made by other engines) cannot be protected.

Only local file systems are supported, like ``log_store_for``.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core import table_properties as props
from delta_pyspark.core.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.deletion_vectors import DeletionVectorDescriptor
from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.core.log_store import to_local_path
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.core.transaction import Transaction
from delta_pyspark.exceptions import DeltaError, DeltaIllegalArgumentException

CLONE_REGISTRY_DIR = "_delta_clones"
"""Directory (hidden from readers and VACUUM) in a source table listing its shallow clones."""

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
_HOUR_MS = 3_600_000
_URI_WITH_AUTHORITY = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


# --------------------------------------------------------------------------- paths


def local_root(table_root: str) -> str:
    """The table root as a normalised absolute local path (``file:`` URIs accepted)."""
    return os.path.abspath(to_local_path(table_root))


def resolve_path(root: str, log_path: str) -> str:
    """Local path of a file as an add/remove (or a 'p' deletion vector) names it.

    ``log_path`` is a URI (PROTOCOL.md): relative to ``root`` or absolute, and
    percent-encoded. Paths on other schemes come back unchanged (never local).
    """
    if log_path.startswith("file:"):
        return os.path.normpath(unquote(urlparse(log_path).path))
    if log_path.startswith("/"):
        return os.path.normpath(unquote(log_path))
    if _URI_WITH_AUTHORITY.match(log_path):
        return log_path  # s3://, abfss://, ...: not on this file system
    return os.path.normpath(os.path.join(root, unquote(log_path)))


def dv_file_path(root: str, dv: dict[str, Any] | None) -> str | None:
    """Local path of the file holding a deletion vector (None: inline or no DV)."""
    if not dv:
        return None
    desc = DeletionVectorDescriptor.from_dict(dv)
    if desc.storage_type == "i":
        return None
    if desc.storage_type == "p":
        return resolve_path(root, desc.path_or_inline_dv)
    path = desc.absolute_path(root)  # 'u': already a decoded local path under root
    return os.path.normpath(path) if path else None


def referenced_files(root: str, files: pa.Table) -> set[str]:
    """Local paths of the data files and deletion-vector files of ``files`` rows."""
    out = {resolve_path(root, p) for p in files.column("path").to_pylist()}
    if "deletionVector" in files.column_names:
        dvs = files.column("deletionVector")
        if dvs.null_count < len(dvs):
            for dv in dvs.filter(pc.is_valid(dvs)).to_pylist():
                path = dv_file_path(root, dv)
                if path is not None:
                    out.add(path)
    return out


def snapshot_references(snapshot: Snapshot, delete_before_ms: int) -> set[str]:
    """Files ``snapshot`` needs: its live files and the tombstones newer than the cutoff."""
    root = local_root(snapshot.table_root)
    out = referenced_files(root, snapshot.files)
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        when = pc.fill_null(tombstones.column("deletionTimestamp"), 0)
        recent = tombstones.filter(pc.greater(when, delete_before_ms))
        if recent.num_rows:
            out |= referenced_files(root, recent)
    return out


# --------------------------------------------------------------------------- retention


def retention_ms(
    configuration: dict[str, str] | Any,
    retention_hours: float | None,
    check_enabled: bool = True,
) -> tuple[int, int]:
    """(effective retention, the table's ``delta.deletedFileRetentionDuration``) in ms.

    A retention shorter than the table's is refused unless ``check_enabled`` is False
    (delta-spark's ``retentionDurationCheck``), so VACUUM cannot delete files that
    concurrent writers or readers of recent versions still need.
    """
    default = props.deleted_file_retention_ms(configuration)
    if retention_hours is None:
        return default, default
    if retention_hours < 0:
        raise DeltaIllegalArgumentException("Retention for Vacuum can't be less than 0.")
    specified = int(retention_hours * _HOUR_MS)
    if check_enabled and specified < default:
        raise DeltaIllegalArgumentException(
            "Are you sure you would like to vacuum files with such a low retention period "
            f"({retention_hours} hours)? If you have writers that are currently writing to "
            "this table, there is a risk that you may corrupt the state of your Delta table.\n"
            "If you are certain that there are no operations being performed on this table, "
            "such as insert/upsert/delete/optimize, then you may turn off this check by "
            f"setting:\n{RETENTION_CHECK_CONF} = false\n"
            f'If you are not sure, please use a value not less than "{default // _HOUR_MS} '
            f"hours\" (the table's {props.DELETED_FILE_RETENTION})."
        )
    return specified, default


# --------------------------------------------------------------------------- listing


@dataclass(frozen=True, slots=True)
class ListedFile:
    path: str
    size: int
    modification_time: int


@dataclass
class Listing:
    """Non-hidden files and directories under a table root (root excluded)."""

    files: list[ListedFile] = field(default_factory=list)
    dirs: dict[str, int] = field(default_factory=dict)  # path -> modification time (ms)


def is_hidden(name: str, partition_columns: Iterable[str]) -> bool:
    """delta-spark's ``isHiddenDirectory``: names VACUUM never touches."""
    if name == "metadata":
        return True
    if not name.startswith(("_", ".")):
        return False
    if name.startswith(("_delta_index", "_change_data")):
        return False
    return not any(name.startswith(f"{c}=") for c in partition_columns)


def list_table_files(root: str, partition_columns: Iterable[str]) -> Listing:
    """Every non-hidden file under ``root`` (recursively), not entering nested tables."""
    parts = tuple(partition_columns)
    listing = Listing()
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if is_hidden(entry.name, parts):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
            except FileNotFoundError:
                continue  # deleted while listing
            mtime = int(st.st_mtime * 1000)
            if is_dir:
                if os.path.isdir(os.path.join(entry.path, "_delta_log")):
                    continue  # a nested Delta table: its files are its own
                listing.dirs[os.path.normpath(entry.path)] = mtime
                stack.append(entry.path)
            else:
                listing.files.append(ListedFile(os.path.normpath(entry.path), st.st_size, mtime))
    return listing


def _partition_names(snapshot: Snapshot) -> list[str]:
    names = list(snapshot.partition_columns)
    mode = column_mapping_mode(snapshot.configuration)
    if mode != "none":
        names += [physical_name(snapshot.schema.field(c), mode) for c in names]
    return names


# --------------------------------------------------------------------------- clone registry


@dataclass(frozen=True)
class CloneEntry:
    """One registered shallow clone of a table."""

    registry_file: str
    clone_path: str
    source_version: int | None
    registered_ms: int


def register_shallow_clone(source_root: str, clone_root: str, source_version: int) -> str:
    """Record ``clone_root`` in the source's clone registry; returns the entry's path."""
    directory = os.path.join(local_root(source_root), CLONE_REGISTRY_DIR)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{uuid.uuid4()}.json")
    body = {
        "clonePath": local_root(clone_root),
        "sourceVersion": source_version,
        "createdAt": int(time.time() * 1000),
    }
    tmp = os.path.join(directory, f".{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(body, f)
    os.replace(tmp, path)
    return path


def registered_clones(table_root: str) -> list[CloneEntry]:
    """The shallow clones registered in ``table_root`` (malformed entries are errors)."""
    directory = os.path.join(local_root(table_root), CLONE_REGISTRY_DIR)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as f:
                body = json.load(f)
            mtime = int(os.stat(path).st_mtime * 1000)
            clone_path = str(body["clonePath"])
        except FileNotFoundError:
            continue
        except (ValueError, KeyError, TypeError) as e:
            raise DeltaError(
                f"shallow clone registry entry {path} is malformed ({e}); fix or delete it "
                "before running VACUUM"
            ) from None
        version = body.get("sourceVersion")
        out.append(
            CloneEntry(path, clone_path, int(version) if version is not None else None, mtime)
        )
    return out


def clone_references(table_root: str, delete_before_ms: int) -> set[str]:
    """Files under any table the registered shallow clones of ``table_root`` (and
    their clones, transitively) still need."""
    out: set[str] = set()
    seen = {local_root(table_root)}
    queue: list[tuple[str, CloneEntry]] = [(table_root, e) for e in registered_clones(table_root)]
    while queue:
        source_root, entry = queue.pop()
        clone_root = local_root(entry.clone_path)
        if clone_root in seen:
            continue
        seen.add(clone_root)
        clone_log = DeltaLog.for_table(clone_root)
        if not clone_log.is_delta_table():
            if entry.registered_ms > delete_before_ms and entry.source_version is not None:
                out |= _pending_clone_files(source_root, entry.source_version)
            continue
        try:
            clone = clone_log.snapshot()
        except DeltaError as e:
            raise DeltaError(
                f"cannot read shallow clone {clone_root} registered in {entry.registry_file} "
                f"({e}); VACUUM refuses to run rather than delete files it may use"
            ) from e
        out |= snapshot_references(clone, delete_before_ms)
        queue.extend((clone_root, e) for e in registered_clones(clone_root))
    return out


def _pending_clone_files(source_root: str, version: int) -> set[str]:
    from delta_pyspark.exceptions import VersionNotFoundError

    try:
        snapshot = DeltaLog(source_root).snapshot(version)
    except VersionNotFoundError:
        return set()
    return referenced_files(local_root(source_root), snapshot.files)


# --------------------------------------------------------------------------- planning


@dataclass
class VacuumPlan:
    """What a VACUUM would delete, and why the rest stays."""

    snapshot: Snapshot
    root: str
    now_ms: int
    retention_ms: int
    default_retention_ms: int
    specified_retention_ms: int | None
    retention_check_enabled: bool
    files_to_delete: list[ListedFile]
    dirs: dict[str, int]

    @property
    def delete_before_ms(self) -> int:
        return self.now_ms - self.retention_ms

    @property
    def size_to_delete(self) -> int:
        return sum(f.size for f in self.files_to_delete)

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files_to_delete]


def plan_vacuum(
    log: DeltaLog,
    retention_hours: float | None = None,
    *,
    check_enabled: bool = True,
    now_ms: int | None = None,
    snapshot: Snapshot | None = None,
) -> VacuumPlan:
    """List the table directory and choose the files to delete (deletes nothing)."""
    snapshot = snapshot or log.snapshot()
    effective, default = retention_ms(snapshot.configuration, retention_hours, check_enabled)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - effective
    root = local_root(snapshot.table_root)
    # List first, then read references: a file committed after this listing is not
    # listed, one committed before it is in the references of the snapshot below.
    listing = list_table_files(root, _partition_names(snapshot))
    snapshot = log.update(snapshot)
    keep = snapshot_references(snapshot, cutoff) | clone_references(root, cutoff)
    doomed = sorted(
        (f for f in listing.files if f.modification_time < cutoff and f.path not in keep),
        key=lambda f: f.path,
    )
    return VacuumPlan(
        snapshot,
        root,
        now,
        effective,
        default,
        None if retention_hours is None else effective,
        check_enabled,
        doomed,
        listing.dirs,
    )


# --------------------------------------------------------------------------- execution


@dataclass
class VacuumResult:
    plan: VacuumPlan
    dry_run: bool
    num_deleted_files: int = 0
    num_vacuumed_directories: int = 0
    versions: list[int] = field(default_factory=list)  # START and END commits


def _delete_all(paths: list[str], parallelism: int) -> int:
    def delete(path: str) -> int:
        try:
            os.unlink(path)
            return 1
        except FileNotFoundError:
            return 0

    if not paths:
        return 0
    workers = max(1, min(parallelism, len(paths)))
    if workers == 1:
        return sum(delete(p) for p in paths)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(delete, paths))


def _remove_empty_dirs(plan: VacuumPlan, deleted: list[str]) -> int:
    """Remove directories that are empty now, deepest first: those we emptied, and old
    empty ones (a recent empty directory may be a concurrent writer's)."""
    emptied: set[str] = set()
    for path in deleted:
        parent = os.path.dirname(path)
        while parent != plan.root and parent.startswith(plan.root + os.sep):
            if parent in emptied:
                break
            emptied.add(parent)
            parent = os.path.dirname(parent)
    removed = 0
    for directory in sorted(plan.dirs, key=lambda d: d.count(os.sep), reverse=True):
        if directory not in emptied and plan.dirs[directory] >= plan.delete_before_ms:
            continue
        try:
            os.rmdir(directory)  # only succeeds when empty
        except OSError:
            continue
        removed += 1
        emptied.add(os.path.dirname(directory))
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
) -> VacuumResult:
    """Run VACUUM; a dry run only plans. A real run commits VACUUM START (with what it
    will delete), deletes, and commits VACUUM END (COMPLETED, or FAILED and re-raise)."""
    plan = plan_vacuum(log, retention_hours, check_enabled=check_enabled, now_ms=now_ms)
    result = VacuumResult(plan, dry_run)
    if dry_run:
        return result
    params: dict[str, Any] = {
        "retentionCheckEnabled": check_enabled,
        "defaultRetentionMillis": plan.default_retention_ms,
    }
    if plan.specified_retention_ms is not None:
        params["specifiedRetentionMillis"] = plan.specified_retention_ms
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
    doomed = [p for p in plan.paths if p not in again]
    try:
        result.num_deleted_files = _delete_all(doomed, parallelism)
        result.num_vacuumed_directories = _remove_empty_dirs(plan, doomed)
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
    return result
