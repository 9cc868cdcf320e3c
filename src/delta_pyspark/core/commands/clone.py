"""CLONE: a new table (or a replaced one) holding a version of a source table, with
its own history starting at its version 0 (delta-spark's CloneTableCommand).

Shallow clones copy no data: the clone's first commit adds every source file by
absolute URI (``file:///...``, as PROTOCOL.md allows for ``add.path``), keeping
partition values, size, stats and deletion vectors. A relative deletion vector
(storage type ``u``, resolved against the table root) would point into the clone's
own directory, so it becomes an absolute one (``p``, whose path has the format of
``add.path``); inline and absolute ones stay as they are.

Deep clones copy every data file, and every deletion-vector file, into the target
directory with the same relative layout and reference them by relative path, so
the clone survives the source's deletion. Absolute-path source files (the source
is itself a shallow clone) are copied under the target root too. No copy ever
overwrites an existing file: a clash gets a fresh name.

The clone gets a new table id (a replaced table keeps its id, as REPLACE does),
the source's schema, partitioning and description, its configuration overridden
by ``properties``, and the source protocol (upgraded if ``properties`` need more
features; a replaced table's protocol is never downgraded). The source's clustering
columns (its ``delta.clustering`` domain) come along, as delta-spark copies them; a
replaced clustered table cloned from an unclustered version keeps the feature with no
columns, as a REPLACE without CLUSTER BY does. commitInfo records
operation ``CLONE`` with ``source`` and ``sourceVersion`` (delta-spark's parameters) and
delta-spark's metrics.

Clones never reach outside the tables involved through a relative path: a source
version whose log names a file by an empty, ``.`` or escaping (``..``) relative path,
or by an absolute path naming its directory or one above it, is refused with
``CorruptLogError``, and a deep clone refuses a source file reached
through a symbolic link that leads out of the source table
(``DeltaUnsupportedOperationException``), both before anything is written. Copies
are only ever written below the target root, never through a link out of it.
Absolute source paths are the protocol's way to name files elsewhere and are copied
(deep) or referenced (shallow) as written.

A Parquet source (``SHALLOW CLONE parquet.`dir```) is read by the Spark layer as CONVERT
reads it and committed through the same ``commit_clone`` (``spark/commands/clone.py``).

Shallow clones are registered in the source directory
(``_delta_clones/<uuid>.json``, see ``core/commands/vacuum.py``) before their commit, so the
source's VACUUM keeps the files they use; a failed clone removes its registry
entry and the files it copied.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlparse

from delta_pyspark.core.commands.clone_registry import register_shallow_clone
from delta_pyspark.core.commands.clustering import DOMAIN as CLUSTERING_DOMAIN
from delta_pyspark.core.commands.clustering import domain_metadata
from delta_pyspark.core.commands.restore import merge_protocols
from delta_pyspark.core.log.logical_files import action_key, file_keys
from delta_pyspark.core.log.table_paths import (
    dv_file_path,
    is_relative,
    relative_dv,
    resolve_path,
)
from delta_pyspark.core.protocol.actions import (
    AddFile,
    Protocol,
    RemoveFile,
    add_actions,
    remove_actions,
)
from delta_pyspark.core.protocol.deletion_vectors import DeletionVectorDescriptor, z85_encode
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.locations import (
    is_inside,
    is_local,
    join,
    name,
    normalise,
    parent,
    relative_to,
)
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import table_metadata
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaUnsupportedOperationException,
    FileAlreadyExistsError,
)

_logger = logging.getLogger(__name__)

_URI_SAFE = "/=:@&+$,;~!*'()-._"
_DV_NAME = re.compile(
    r"^deletion_vector_([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12})\.bin$"
)
_Z85_UUID_CHARS = 20
# the source's row tracking
_DROPPED_ADD_FIELDS: tuple[Literal["baseRowId", "defaultRowCommitVersion"], ...] = (
    "baseRowId",
    "defaultRowCommitVersion",
)


def file_uri(location: str) -> str:
    """The absolute, percent-encoded URI of a normalised location: ``file:///...`` for a
    local path, the URL itself (path encoded) on an object store."""
    if is_local(location):
        return "file://" + quote(location, safe=_URI_SAFE)
    parsed = urlparse(location)
    return f"{parsed.scheme}://{parsed.netloc}" + quote(parsed.path, safe=_URI_SAFE)


def _log_path(relative: str) -> str:
    return quote(relative, safe=_URI_SAFE)


# --------------------------------------------------------------------------- shallow


def shallow_adds(source: Snapshot) -> list[AddFile]:
    """The source's files as adds that resolve from any table root."""
    root = normalise(source.table_root)
    adds = add_actions(source.files, data_change=True)
    for add in adds:
        for key in _DROPPED_ADD_FIELDS:
            add.pop(key, None)
        path = add["path"]
        if not _is_absolute(path):
            add["path"] = file_uri(resolve_path(root, path))
        dv = add.get("deletionVector")
        if dv and dv["storageType"] == "u":
            local = DeletionVectorDescriptor.from_dict(dv).absolute_path(root)
            assert local is not None
            add["deletionVector"] = dv | {"storageType": "p", "pathOrInlineDv": file_uri(local)}
    return adds


# --------------------------------------------------------------------------- deep


@dataclass
class _Copier:
    """Copies files into the target without overwriting anything; remembers what it made."""

    store: LogStore
    target_root: str
    source_store: LogStore
    created: list[str] = field(default_factory=list)
    checked_dirs: set[str] = field(default_factory=set)

    def copy(self, src: str, dest: str) -> bool:
        """Copy ``src`` to ``dest`` unless ``dest`` exists (then False, nothing written)."""
        self._check_inside(parent(dest))  # before creating anything
        if self.source_store is self.store:
            copied = self.store.copy_if_absent(src, dest)
        else:  # between stores the bytes pass through this process
            try:
                self.store.write_if_absent(dest, self.source_store.read(src))
                copied = True
            except FileAlreadyExistsError:
                copied = False
        if not copied:
            return False
        self.created.append(dest)
        return True

    def _check_inside(self, directory: str) -> None:
        """Refuse to write where a link (e.g. in a replaced table) leads out of the target."""
        if directory in self.checked_dirs:
            return
        real_root = self.store.real_path(self.target_root)
        real = self.store.real_path(directory)
        if real != real_root and not is_inside(real_root, real):
            raise DeltaUnsupportedOperationException(
                f"deep clone into {self.target_root}: {directory} leads outside the target "
                f"(to {real}) through a symbolic link; remove the link and clone again"
            )
        self.checked_dirs.add(directory)

    def cleanup(self) -> None:
        for path in self.created:
            self.store.delete(path)


def _relative_target(root: str, local: str, partitions: int) -> str:
    """Where a source data file goes under the target: same relative path if it lives
    under the source root, else its partition directories (if any) and its name."""
    if is_inside(root, local):
        return relative_to(local, root)
    segments = local.split("/")
    keep = [s for s in segments[-1 - partitions : -1] if "=" in s] if partitions else []
    return "/".join([*keep, segments[-1]])


def _fresh_name(relative: str) -> str:
    directory, _, file_name = relative.rpartition("/")
    stem, dot, ext = file_name.partition(".")
    fresh = f"{stem}-{uuid.uuid4().hex[:12]}{dot}{ext}"
    return f"{directory}/{fresh}" if directory else fresh


def _is_absolute(log_path: str) -> bool:
    return log_path.startswith(("/", "file:")) or "://" in log_path


def _check_no_link_out(store: LogStore, root: str, adds: list[AddFile]) -> None:
    """Refuse a file the source names relatively but that a symbolic link takes outside
    the source table: copying it would copy a file that is no part of the table."""
    real_root = store.real_path(root)
    for add in adds:
        named: list[tuple[str, str | None]] = (
            [(add["path"], resolve_path(root, add["path"]))] if is_relative(add["path"]) else []
        )
        dv = add.get("deletionVector")
        if dv and relative_dv(dv):
            named.append((dv["pathOrInlineDv"], dv_file_path(root, dv)))
        for log_path, local in named:
            real = store.real_path(local) if local is not None else real_root
            if not is_inside(real_root, real):
                raise DeltaUnsupportedOperationException(
                    f"deep clone of {root}: {log_path!r} resolves through a symbolic link to "
                    f"{real}, outside the source table; copy that file into the table (or "
                    "remove the link) first, or make a shallow clone"
                )


def deep_adds(
    source: Snapshot, target_root: str, copier: _Copier, parallelism: int = 8
) -> list[AddFile]:
    """Copy the source's data and DV files into ``target_root``; their adds."""
    root = normalise(source.table_root)
    adds = add_actions(source.files, data_change=True)
    _check_no_link_out(copier.source_store, root, adds)
    parts = len(source.partition_columns)
    dv_jobs: dict[str, tuple[str, str]] = {}  # source DV file -> (prefix, file uuid)
    for add in adds:
        for key in _DROPPED_ADD_FIELDS:
            add.pop(key, None)
        src = dv_file_path(root, add.get("deletionVector"))
        if src is not None and src not in dv_jobs:
            desc = DeletionVectorDescriptor.from_dict(add["deletionVector"])
            prefix = desc.path_or_inline_dv[:-_Z85_UUID_CHARS] if desc.storage_type == "u" else ""
            m = _DV_NAME.match(name(src))
            dv_jobs[src] = (prefix, m.group(1) if m else str(uuid.uuid4()))

    def copy_dv(src: str) -> tuple[str, str]:
        prefix, file_id = dv_jobs[src]
        while not copier.copy(
            src, join(target_root, f"{prefix}/deletion_vector_{file_id}.bin".lstrip("/"))
        ):
            file_id = str(uuid.uuid4())
        return src, prefix + z85_encode(uuid.UUID(file_id).bytes)

    def copy_data(add: AddFile) -> None:
        original = add["path"]
        local = resolve_path(root, original)
        relative = _relative_target(root, local, parts)
        renamed = False
        while not copier.copy(local, join(target_root, relative)):
            relative, renamed = _fresh_name(relative), True
        if renamed or _is_absolute(original):
            add["path"] = _log_path(relative)
        # else: the same relative path as in the source, in its exact log spelling

    workers = max(1, min(parallelism, len(adds) + len(dv_jobs)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        copied_dvs = dict(pool.map(copy_dv, list(dv_jobs)))
        list(pool.map(copy_data, adds))
    for add in adds:
        src = dv_file_path(root, add.get("deletionVector"))
        if src is not None:
            add["deletionVector"] = add["deletionVector"] | {
                "storageType": "u",
                "pathOrInlineDv": copied_dvs[src],
            }
    return adds


# --------------------------------------------------------------------------- clone


@dataclass
class CloneResult:
    target_root: str
    version: int
    source_version: int | None  # None: the source is no Delta table
    metrics: dict[str, int]


def _source_snapshot(log: DeltaLog, version: int | None, timestamp_ms: int | None) -> Snapshot:
    if version is not None and timestamp_ms is not None:
        raise DeltaAnalysisException("give either a version or a timestamp to clone, not both")
    if timestamp_ms is not None:
        return log.snapshot_at_timestamp(timestamp_ms)
    return log.snapshot(version)


def check_clone_target(source_root: str, target_root: str, target: DeltaLog, replace: bool) -> bool:
    """Whether the target is an existing Delta table (to replace); refuses bad targets."""
    if target_root == source_root:
        raise DeltaAnalysisException(f"cannot clone {source_root} onto itself")
    if target.is_delta_table():
        if not replace:
            raise DeltaAnalysisException(
                f"cannot clone to {target_root}: a Delta table already exists there. "
                "Use replace=True to replace its contents with the clone."
            )
        return True
    if target.store.is_dir(target_root):
        visible = [e.name for e in target.store.scan(target_root)]
        visible = [n for n in visible if not n.startswith(("_", "."))]
        if visible:
            raise DeltaAnalysisException(
                f"cannot clone to {target_root}: the directory is not empty and is not a Delta "
                f"table (it holds {sorted(visible)[:3]}...)"
            )
    return False


def clone_table(
    source_log: DeltaLog,
    target: str,
    *,
    shallow: bool,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
    version: int | None = None,
    timestamp_ms: int | None = None,
    parallelism: int = 8,
) -> CloneResult:
    """Clone a version of ``source_log``'s table to the directory ``target``."""
    source = _source_snapshot(source_log, version, timestamp_ms)
    source_root = normalise(source.table_root)
    target_root = normalise(target)
    target_log = DeltaLog.for_table(target_root)
    existing = (
        target_log.snapshot()
        if check_clone_target(source_root, target_root, target_log, replace)
        else None
    )
    copier = _Copier(target_log.store, target_root, source_log.store)
    registry: str | None = None
    try:
        if shallow:
            adds = shallow_adds(source)
            registry = _register(source_root, target_root, source.version)
        else:
            adds = deep_adds(source, target_root, copier, parallelism)
        described = CloneSource(
            {"source": source_root, "sourceVersion": source.version},
            source.schema,
            list(source.partition_columns),
            dict(source.configuration),
            source.metadata.description,
            source.protocol,
            source.size_in_bytes,
            source.num_files,
        )
        return commit_clone(
            target_log,
            existing,
            described,
            adds,
            shallow=shallow,
            properties=properties,
            stage=lambda txn: _clone_clustering(txn, source, existing),
        )
    except BaseException:
        copier.cleanup()
        if registry is not None:
            source_log.store.delete(registry)
        raise


@dataclass
class CloneSource:
    """What a clone takes from its source, a Delta table or another format's files."""

    parameters: dict[str, Any]  # commitInfo's operationParameters (``source``, ...)
    schema: StructType
    partition_columns: list[str]
    configuration: dict[str, str]
    description: str | None
    protocol: Protocol | None  # a Delta source's (None: the least the schema needs)
    size: int  # bytes, for delta-spark's metrics
    num_files: int


def commit_clone(
    target_log: DeltaLog,
    existing: Snapshot | None,
    source: CloneSource,
    adds: list[AddFile],
    *,
    shallow: bool,
    properties: Mapping[str, str] | None,
    stage: Callable[[Transaction], None] | None = None,
) -> CloneResult:
    """Commit a clone of ``source`` whose files are ``adds`` to ``target_log`` (replacing
    ``existing``, the table there, if any); ``stage`` adds more to the transaction."""
    config = source.configuration | {k: str(v) for k, v in (properties or {}).items()}
    metadata = table_metadata(
        existing.metadata if existing else None,
        source.schema,
        source.partition_columns,
        config,
        description=source.description,
    )
    base = source.protocol
    if existing is not None:
        base = existing.protocol if base is None else merge_protocols(existing.protocol, base)
    protocol = protocol_for(source.schema, config, base)
    txn = Transaction(target_log, existing)
    removes: list[RemoveFile] = []
    if existing is not None:
        txn.read_whole_table()
        # A shallow clone replacing one of the same source files names them again: they
        # stay, neither removed nor re-added (one commit cannot do both).
        kept = {action_key(a) for a in adds} & set(file_keys(existing.files).to_pylist())
        adds = [a for a in adds if action_key(a) not in kept]
        removes = [
            r for r in remove_actions(existing.files, data_change=True) if action_key(r) not in kept
        ]
        txn.remove_files(removes)
    txn.update_protocol(protocol)
    txn.update_metadata(metadata)
    if stage is not None:
        stage(txn)
    txn.add_files(adds)
    metrics = {
        "sourceTableSize": source.size,
        "sourceNumOfFiles": source.num_files,
        "numRemovedFiles": len(removes),
        "numCopiedFiles": 0 if shallow else len(adds),
        "removedFilesSize": sum(int(r.get("size") or 0) for r in removes),
        "copiedFilesSize": 0 if shallow else sum(int(a.get("size") or 0) for a in adds),
    }
    committed = txn.commit("CLONE", source.parameters, metrics)
    version = source.parameters.get("sourceVersion")
    return CloneResult(normalise(target_log.table_root), committed.version, version, metrics)


def _clone_clustering(txn: Transaction, source: Snapshot, existing: Snapshot | None) -> None:
    """Stage the source's clustering domain in the clone (the schema, hence the physical
    names it holds, comes along too); an existing clustered target whose source has none
    is left clustered by no columns."""
    domain = source.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is not None and not domain.removed:
        txn.set_domain_metadata(domain)
    elif existing is not None and CLUSTERING_DOMAIN in existing.domain_metadata:
        txn.set_domain_metadata(domain_metadata([]))


def _register(source_root: str, target_root: str, source_version: int) -> str | None:
    """Register the shallow clone with its source; a read-only source cannot be vacuumed
    by this process either, so failing to register only warns."""
    try:
        return register_shallow_clone(source_root, target_root, source_version)
    except OSError as e:
        _logger.warning(
            "could not register shallow clone %s in %s (%s): VACUUM of the source will not "
            "know the clone uses its files",
            target_root,
            source_root,
            e,
        )
        return None
