"""Symlink manifests (delta-spark's ``GENERATE symlink_format_manifest``).

Engines that cannot read the Delta log (Presto/Trino/Athena/Hive via
``SymlinkTextInputFormat``) read ``<root>/_symlink_format_manifest/`` instead: one
``manifest`` text file per partition directory (``k=v/...``, the Hive layout of the
partition values; a single ``manifest`` for unpartitioned tables) listing the
absolute URIs of the data files of the current version, one per line, spelled as
Hadoop's ``Path.toString`` spells them (``file:/dir/a b.parquet``, not escaped) because
that is how those readers open them.

Each manifest is written atomically (temporary file + rename). A full generation
also deletes the manifests of partitions that no longer hold files. With
``delta.compatibility.symlinkFormatManifest.enabled=true``, ``post_commit_update``
keeps the manifests current after every commit: it rewrites only the partitions the
commit added or removed files in, and regenerates everything when the commit changed
the metadata or protocol, touched more than ``INCREMENTAL_LIMIT`` partitions, or no
manifest exists yet. Like delta-spark's hook it trusts the previous commits' manifests,
so a commit made by an engine that does not maintain them is only reflected in the
partitions a later commit touches (or by the next full ``generate``).

Manifests cannot express rows deleted by deletion vectors, nor physical column names,
so tables with either are refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.log.commit_actions import parse_actions
from delta_pyspark.core.log.segment import commit_name
from delta_pyspark.core.log.table_paths import resolve_path
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode
from delta_pyspark.core.protocol.deletion_vectors import any_deletion_vectors
from delta_pyspark.core.protocol.partition_values import hive_partition_path
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.locations import (
    is_inside,
    is_local,
    join,
    normalise,
    parent,
    relative_to,
)
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
    DeltaUnsupportedOperationException,
)

__all__ = [
    "MANIFEST_DIR",
    "MODES",
    "generate_manifest",
    "manifest_entries",
    "post_commit_update",
    "write_full_manifest",
]

MANIFEST_DIR = "_symlink_format_manifest"
MANIFEST_NAME = "manifest"
MODES = ("symlink_format_manifest",)
# Beyond this many touched partitions a commit regenerates every manifest instead.
INCREMENTAL_LIMIT = 64


def generate_manifest(log: DeltaLog, mode: str) -> int:
    """``DeltaTable.generate(mode)``: write every manifest of the latest version.

    Returns the number of manifest files written.
    """
    if mode.strip().lower() not in MODES:
        raise DeltaIllegalArgumentException(
            f"generate mode {mode!r} is not supported; supported modes: {', '.join(MODES)}"
        )
    return write_full_manifest(log.store, log.snapshot())


def check_supported(snapshot: Snapshot) -> None:
    """Refuse tables whose rows manifests cannot describe."""
    files = snapshot.files
    if any_deletion_vectors(files):
        raise DeltaUnsupportedOperationException(
            f"cannot generate symlink manifests for {snapshot.table_root} at version "
            f"{snapshot.version}: it has files with deletion vectors, and manifests cannot "
            "express deleted rows. Purge them (REORG TABLE ... APPLY (PURGE)) first, or "
            "disable delta.enableDeletionVectors on tables that need manifests"
        )
    if column_mapping_mode(snapshot.configuration) != "none":
        raise DeltaUnsupportedOperationException(
            f"cannot generate symlink manifests for {snapshot.table_root}: it uses column "
            "mapping, and manifest readers would see the physical column names"
        )


def manifest_entries(snapshot: Snapshot, files: pa.Table | None = None) -> dict[str, list[str]]:
    """Manifest contents by manifest directory (relative to the manifest root, "" when
    unpartitioned): the data file URIs of ``files`` (default: the whole snapshot)."""
    files = snapshot.files if files is None else files
    parts = snapshot.partition_columns
    root = snapshot.table_root
    if not parts:
        return {"": [_file_uri(root, p) for p in files.column("path").to_pylist()]}
    if files.num_rows == 0:
        return {}
    columns = {f"p{i}": _partition_column(files, c) for i, c in enumerate(parts)}
    keyed = pa.table({**columns, "path": files.column("path")})
    groups = keyed.group_by(list(columns)).aggregate([("path", "list")])
    out: dict[str, list[str]] = {}
    for row in groups.to_pylist():
        values = {c: row[f"p{i}"] for i, c in enumerate(parts)}
        directory = hive_partition_path(values, parts).rstrip("/")
        out[directory] = [_file_uri(root, p) for p in row["path_list"]]
    return out


def write_full_manifest(store: LogStore, snapshot: Snapshot) -> int:
    """Write every manifest of ``snapshot`` and delete the ones of vanished partitions."""
    check_supported(snapshot)
    entries = manifest_entries(snapshot)
    base = _manifest_root(snapshot)
    for directory, uris in entries.items():
        _write(store, base, directory, uris)
    keep = {_manifest_rel(d) for d in entries}
    _delete_stale(store, base, keep)
    return len(entries)


def post_commit_update(store: LogStore, snapshot: Snapshot) -> None:
    """Bring the manifests up to date after the commit that made ``snapshot``."""
    check_supported(snapshot)
    base = _manifest_root(snapshot)
    touched = _touched_partitions(store, snapshot)
    if touched is None or not snapshot.partition_columns or not store.is_dir(base):
        write_full_manifest(store, snapshot)
        return
    if not touched:
        return
    files = snapshot.files
    for values in touched:
        subset = files.filter(_partition_mask(files, values, snapshot.partition_columns))
        directory = hive_partition_path(values, snapshot.partition_columns).rstrip("/")
        if subset.num_rows:
            _write(store, base, directory, manifest_entries(snapshot, subset)[directory])
        else:
            _remove(store, base, directory)


# ---------------------------------------------------------------------- helpers


def _manifest_root(snapshot: Snapshot) -> str:
    return join(normalise(snapshot.table_root), MANIFEST_DIR)


def _manifest_rel(directory: str) -> str:
    return f"{directory}/{MANIFEST_NAME}" if directory else MANIFEST_NAME


def _file_uri(table_root: str, log_path: str) -> str:
    """An add action's path as an absolute, unescaped Hadoop-style URI."""
    location = resolve_path(normalise(table_root), log_path)
    return "file:" + location if is_local(location) else location


def _write(store: LogStore, base: str, directory: str, uris: Iterable[str]) -> None:
    text = "".join(f"{u}\n" for u in uris)
    store.write(join(base, _manifest_rel(directory)), text.encode(), durable=False)


def _remove(store: LogStore, base: str, directory: str) -> None:
    path = join(base, _manifest_rel(directory))
    if store.delete(path):
        _prune_empty_dirs(store, base, parent(path))


def _prune_empty_dirs(store: LogStore, base: str, start: str) -> None:
    """Remove ``start`` and its parents below ``base`` while they are empty."""
    current = start
    while is_inside(base, current) and store.remove_empty_dir(current):
        current = parent(current)


def _delete_stale(store: LogStore, base: str, keep: set[str]) -> None:
    """Delete manifests not in ``keep`` (relative paths) and the directories left empty."""
    for entry in list(store.walk_files(base)):
        if entry.name == MANIFEST_NAME and relative_to(entry.path, base) not in keep:
            store.delete(entry.path)
            _prune_empty_dirs(store, base, parent(entry.path))


def _touched_partitions(store: LogStore, snapshot: Snapshot) -> list[dict[str, str | None]] | None:
    """Partition values the commit at ``snapshot.version`` added or removed files in;
    None when everything must be regenerated (metadata or protocol changed, first
    version, or too many partitions)."""
    if snapshot.version == 0:
        return None
    path = f"{snapshot.segment.log_dir}/{commit_name(snapshot.version)}"
    commit = parse_actions(store.read(path), path)
    if commit.metadata is not None or commit.protocol is not None:
        return None
    seen: dict[tuple[str | None, ...], dict[str, str | None]] = {}
    for action in [*commit.adds, *commit.removes]:
        values: Mapping[str, str | None] = action.get("partitionValues") or {}
        normal = {c: (values.get(c) or None) for c in snapshot.partition_columns}
        seen.setdefault(tuple(normal.values()), normal)
    if len(seen) > INCREMENTAL_LIMIT:
        return None
    return list(seen.values())


def _partition_mask(
    files: pa.Table, values: Mapping[str, str | None], columns: list[str]
) -> pa.ChunkedArray | pa.Array:
    mask = pc.is_valid(files.column("path"))  # all true
    for column in columns:
        actual = _partition_column(files, column)
        want = values.get(column)
        cond = pc.is_null(actual) if want is None else pc.fill_null(pc.equal(actual, want), False)
        mask = pc.and_(mask, cond)
    return mask


def _partition_column(files: pa.Table, column: str) -> pa.ChunkedArray | pa.Array:
    """One partition column's serialized values; "" is null, as the spec says."""
    values = pc.map_lookup(files.column("partitionValues"), column, "first")
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
