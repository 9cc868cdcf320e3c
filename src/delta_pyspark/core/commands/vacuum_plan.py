"""VACUUM's plan: the files under a table directory that no version within the
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
be deleted by the clone's VACUUM.

Symbolic links are never followed. A link to a directory, or a dangling one, is
neither entered nor deleted. A link to a file is a file like any other: when no
version needs it, the link is removed (never its target). A link VACUUM keeps
also keeps what it points to when that lies inside the table (a linked directory:
everything under it), since the table may reach those files under the link's name.

A state VACUUM cannot trust is refused before anything is committed or deleted. The
log reader already refuses, for every snapshot, paths that cannot name a file of the
table and a version checksum (``.crc``) that disagrees with the replayed log
(``log.validation``, ``log.checksum``). VACUUM adds what only it needs (``check_trusted``):
every live file (and deletion vector) inside the table must exist, in this table and in
each registered shallow clone whose files the source keeps. A missing live file means
the log no longer describes the files on disk (e.g. a changed byte in a path that the
checksum's count and size cannot see), and the files VACUUM would then call garbage may
be live ones. ``trust_damaged_log=True`` (Spark:
``spark.databricks.delta.vacuum.trustDamagedLog=true``) skips this check, for a user who
has verified the table by other means.

Shallow clones: CLONE records every shallow clone in the *source* directory under
``_delta_clones/<uuid>.json`` (``{"clonePath": ..., "sourceVersion": ...}``). The
directory starts with ``_``, so other Delta readers and VACUUM ignore it. VACUUM of
the source keeps every file each registered clone that still exists references at
its latest version, plus its tombstones within this VACUUM's retention window, and
follows the clones' own registries (clones of clones). A registered clone whose
table does not exist yet (its commit in flight) protects the source version it is
being made from while its registry entry is within the retention window. Clones a
registry does not know about (made by other engines) cannot be protected.

This module is longer than 500 lines because its one job, deciding what VACUUM may
delete and deleting it, needs the rules above in one place; the clone registry it reads
is ``clone_registry``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.commands.clone_registry import CloneEntry, registered_clones
from delta_pyspark.core.log.table_paths import dv_file_path, resolve_path
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.locations import is_inside, join, normalise, relative_to
from delta_pyspark.core.storage.log_store import FileStatus, LogStore, log_store_for
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaError,
    DeltaIllegalArgumentException,
)

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
TRUST_DAMAGED_LOG_CONF = "spark.databricks.delta.vacuum.trustDamagedLog"
"""Spark conf for ``trust_damaged_log``: VACUUM acts on a state it would refuse."""
_HOUR_MS = 3_600_000


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


def recent_tombstones(snapshot: Snapshot, delete_before_ms: int) -> pa.Table:
    """The tombstones of ``snapshot`` deleted after the cutoff (still within retention)."""
    tombstones = snapshot.tombstones
    if not tombstones.num_rows:
        return tombstones
    when = pc.fill_null(tombstones.column("deletionTimestamp"), 0)
    return tombstones.filter(pc.greater(when, delete_before_ms))


def snapshot_references(
    snapshot: Snapshot, delete_before_ms: int, live: set[str] | None = None
) -> set[str]:
    """Files ``snapshot`` needs: its live files (``live``, when already resolved) and
    the tombstones newer than the cutoff."""
    root = normalise(snapshot.table_root)
    out = referenced_files(root, snapshot.files) if live is None else set(live)
    recent = recent_tombstones(snapshot, delete_before_ms)
    if recent.num_rows:
        out |= referenced_files(root, recent)
    return out


# --------------------------------------------------------------------------- trust


def _refusal(snapshot: Snapshot, problem: str) -> str:
    return (
        f"VACUUM refuses to run on {snapshot.table_root} at version {snapshot.version}: "
        f"{problem}. Nothing was deleted. The log no longer describes the files on disk, so "
        "files it calls unused may be live. Repair the table (e.g. RESTORE a version that "
        "reads correctly) or, only if you have verified its files by other means, rerun "
        f"with trust_damaged_log=True (Spark: {TRUST_DAMAGED_LOG_CONF}=true)."
    )


def _shown(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def check_trusted(
    snapshot: Snapshot,
    listed: set[str],
    vacuum_root: str | None = None,
    live: set[str] | None = None,
    store: LogStore | None = None,
) -> None:
    """Raise unless ``snapshot`` can decide which files are garbage (see the module doc).

    ``listed`` holds the files VACUUM listed under ``vacuum_root`` (the snapshot's own
    root unless it is a shallow clone of the vacuumed table); a live file there missing
    from it is looked up on disk (it may sit under a hidden or linked directory).
    ``live``: the snapshot's ``referenced_files``, when the caller has them already.
    """
    root = normalise(snapshot.table_root)
    vacuum_root = vacuum_root or root
    store = store or log_store_for(root)
    missing = sorted(
        p
        for p in (referenced_files(root, snapshot.files) if live is None else live)
        if p not in listed and is_inside(vacuum_root, p) and not store.exists(p)
    )
    if missing:
        raise CorruptLogError(
            _refusal(snapshot, f"{len(missing)} live file(s) do not exist: {_shown(missing)}")
        )


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


@dataclass
class Listing:
    """Non-hidden files and directories under a table root (root excluded)."""

    files: list[FileStatus] = field(default_factory=list)  # links to files included
    dirs: dict[str, int] = field(default_factory=dict)  # path -> modification time (ms)
    links: list[str] = field(default_factory=list)  # every symbolic link, never entered


def is_hidden(name: str, partition_columns: Iterable[str]) -> bool:
    """delta-spark's ``isHiddenDirectory``: names VACUUM never touches."""
    if name == "metadata":
        return True
    if not name.startswith(("_", ".")):
        return False
    if name.startswith(("_delta_index", "_change_data")):
        return False
    return not any(name.startswith(f"{c}=") for c in partition_columns)


def list_table_files(store: LogStore, root: str, partition_columns: Iterable[str]) -> Listing:
    """Every non-hidden file under ``root`` (recursively), not entering nested tables."""
    parts = tuple(partition_columns)
    listing = Listing()
    stack = [root]
    while stack:
        for entry in store.scan(stack.pop()):
            if is_hidden(entry.name, parts):
                continue
            if entry.is_link:
                listing.links.append(entry.path)
            if entry.is_dir:
                if store.is_dir(join(entry.path, "_delta_log")):
                    continue  # a nested Delta table: its files are its own
                listing.dirs[entry.path] = entry.modification_time
                stack.append(entry.path)
            elif not entry.is_link or entry.link_to_file:
                # a link to a directory, or a dangling one, is never a file to delete
                listing.files.append(FileStatus(entry.path, entry.size, entry.modification_time))
    return listing


def inventory_listing(
    store: LogStore,
    root: str,
    inventory: Iterable[tuple[str, int, bool, int]],
    partition_columns: Iterable[str],
) -> Listing:
    """A listing from an inventory of the storage (delta-spark's ``VACUUM ... USING
    INVENTORY``: ``path``, ``length``, ``isDir``, ``modificationTime`` rows, as a bucket's
    inventory report gives them) instead of listing the table: the entries under ``root``
    whose path has no hidden part, outside nested Delta tables (a directory holding a
    ``_delta_log``, in the inventory or in storage). A file the inventory lacks is not
    deleted; a live file it lacks is looked up in storage (``check_trusted``)."""
    parts = tuple(partition_columns)
    root = normalise(root)
    entries: list[tuple[str, list[str], int, bool, int]] = []
    nested: set[str] = set()
    for path, length, is_dir, modified in inventory:
        location = normalise(path)
        if not is_inside(root, location):
            continue
        names = relative_to(location, root).split("/")
        if "_delta_log" in names[1:]:
            nested.add(join(root, "/".join(names[: names.index("_delta_log", 1)])))
        if not any(is_hidden(name, parts) for name in names):
            entries.append((location, names, length, is_dir, modified))
    nested |= {
        location
        for location, _, _, is_dir, _ in entries
        if is_dir and store.is_dir(join(location, "_delta_log"))
    }
    listing = Listing()
    for location, _, length, is_dir, modified in entries:
        if location in nested or any(is_inside(table, location) for table in nested):
            continue
        if is_dir:
            listing.dirs[location] = modified
        else:
            listing.files.append(FileStatus(location, length, modified))
    return listing


def spare_link_targets(
    store: LogStore, root: str, links: list[str], doomed: list[FileStatus]
) -> list[FileStatus]:
    """``doomed`` without what the links VACUUM keeps point at inside the table: the
    table may name those files through the link, so they are not garbage."""
    going = {f.path for f in doomed}
    real_root = store.real_path(root)
    targets = []
    for link in links:
        if link in going:
            continue  # an unused link to a file: the link goes, its target is not protected
        target = store.real_path(link)
        if target == real_root:
            targets.append(root)
        elif is_inside(real_root, target):
            targets.append(join(root, relative_to(target, real_root)))
    if not targets:
        return doomed
    return [f for f in doomed if not any(f.path == t or is_inside(t, f.path) for t in targets)]


def _partition_names(snapshot: Snapshot) -> list[str]:
    names = list(snapshot.partition_columns)
    mode = column_mapping_mode(snapshot.configuration)
    if mode != "none":
        names += [physical_name(snapshot.schema.field(c), mode) for c in names]
    return names


# --------------------------------------------------------------------------- clones


def clone_references(
    table_root: str, delete_before_ms: int, listed: set[str] | None = None
) -> set[str]:
    """Files under any table the registered shallow clones of ``table_root`` (and
    their clones, transitively) still need.

    With ``listed`` (the files VACUUM listed under ``table_root``) each clone's state
    must pass ``check_trusted`` too: a clone whose log lost a file would let the
    source delete it.
    """
    out: set[str] = set()
    seen = {normalise(table_root)}
    queue: list[tuple[str, CloneEntry]] = [(table_root, e) for e in registered_clones(table_root)]
    while queue:
        source_root, entry = queue.pop()
        clone_root = normalise(entry.clone_path)
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
        if listed is not None:
            try:
                check_trusted(clone, listed, normalise(table_root))
            except CorruptLogError as e:
                raise type(e)(
                    f"shallow clone {clone_root} (registered in {entry.registry_file}) may use "
                    f"files of {table_root}: {e}"
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
    return referenced_files(normalise(source_root), snapshot.files)


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class RetentionWindow:
    """When a VACUUM runs and how far back it keeps every version readable."""

    now_ms: int
    retention_ms: int
    default_retention_ms: int  # the table's delta.deletedFileRetentionDuration
    specified_retention_ms: int | None  # what the user asked for, if anything
    check_enabled: bool

    @property
    def delete_before_ms(self) -> int:
        return self.now_ms - self.retention_ms


def retention_window(
    snapshot: Snapshot, retention_hours: float | None, check_enabled: bool, now_ms: int | None
) -> RetentionWindow:
    """The window of a VACUUM of ``snapshot`` (``retention_ms``'s check applied)."""
    effective, default = retention_ms(snapshot.configuration, retention_hours, check_enabled)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    specified = None if retention_hours is None else effective
    return RetentionWindow(now, effective, default, specified, check_enabled)


@dataclass
class VacuumPlan:
    """What a VACUUM would delete, and why the rest stays."""

    snapshot: Snapshot
    root: str
    window: RetentionWindow
    files_to_delete: list[FileStatus]
    dirs: dict[str, int]
    lite_end_version: int | None = None  # LITE: the newest commit it read

    @property
    def delete_before_ms(self) -> int:
        return self.window.delete_before_ms

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
    trust_damaged_log: bool = False,
    inventory: Iterable[tuple[str, int, bool, int]] | None = None,
) -> VacuumPlan:
    """List the table directory (or read ``inventory``'s rows, ``inventory_listing``) and
    choose the files to delete (deletes nothing).

    Raises ``CorruptLogError`` (``ChecksumMismatchError`` for a disagreeing ``.crc``)
    when the state cannot be trusted, unless ``trust_damaged_log`` (``check_trusted``).
    """
    snapshot = snapshot or log.snapshot()
    window = retention_window(snapshot, retention_hours, check_enabled, now_ms)
    cutoff = window.delete_before_ms
    root = normalise(snapshot.table_root)
    # List first, then read references: a file committed after this listing is not
    # listed, one committed before it is in the references of the snapshot below.
    if inventory is None:
        listing = list_table_files(log.store, root, _partition_names(snapshot))
    else:
        listing = inventory_listing(log.store, root, inventory, _partition_names(snapshot))
    snapshot = log.update(snapshot)
    live = referenced_files(root, snapshot.files)
    listed = None if trust_damaged_log else {f.path for f in listing.files}
    if listed is not None:
        check_trusted(snapshot, listed, live=live, store=log.store)
    keep = snapshot_references(snapshot, cutoff, live) | clone_references(root, cutoff, listed)
    doomed = sorted(
        (f for f in listing.files if f.modification_time < cutoff and f.path not in keep),
        key=lambda f: f.path,
    )
    if listing.links:
        doomed = spare_link_targets(log.store, root, listing.links, doomed)
    return VacuumPlan(snapshot, root, window, doomed, listing.dirs)
