"""Iceberg metadata for a Delta table's versions (UniForm), written beside its log.

Layout, as Iceberg's file-system tables have it, so Iceberg readers open the table by its
directory or by a metadata file: ``metadata/v<N>.metadata.json`` (format version 2),
``metadata/version-hint.text`` naming the newest ``N``, manifest lists and manifests (Avro,
by pyiceberg's writers). ``v<N+1>`` is created by put-if-absent, so two writers converting
at once never overwrite each other's metadata: the loser reads the winner's and goes on
from there.

Each Delta version gets one Iceberg snapshot whose summary and the table's properties name
it (``delta-version``, ``delta-timestamp``), so time travel by snapshot id reads that
version. Conversion is incremental: a version's new files go in one new manifest; a
manifest is rewritten only when one of its files is removed (entries ``DELETED`` /
``EXISTING``); the others are reused. When the versions since the last converted one are
gone from the log, or the partitioning changed, or a rerun is asked for (``REORG ...
UPGRADE UNIFORM``), the whole version is converted from its snapshot instead.

The conversion runs after the Delta commit (``transaction.commit.post_commit``): a failure
leaves the Iceberg side at an older version, never a wrong one, and the next commit catches
up every version since.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromByteStream
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import (
    MetadataLogEntry,
    Operation,
    Snapshot,
    SnapshotLogEntry,
    Summary,
)
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from delta_pyspark.core.log.commit_actions import CommitActions
from delta_pyspark.core.log.table_paths import data_file_path
from delta_pyspark.core.protocol.actions import Metadata, commit_timestamp
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode
from delta_pyspark.core.protocol.schema import parse_schema_string
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot as DeltaSnapshot
from delta_pyspark.core.storage.locations import join
from delta_pyspark.core.uniform import iceberg_schema as ice
from delta_pyspark.core.uniform.table_io import StoreFileIO
from delta_pyspark.exceptions import FileAlreadyExistsError

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"
#: Iceberg table property and snapshot summary key naming the converted Delta version
DELTA_VERSION = "delta-version"
#: ... and that version's commit timestamp (ms)
DELTA_TIMESTAMP = "delta-timestamp"
NAME_MAPPING = "schema.name-mapping.default"
#: attempts at the next metadata number against converters racing for it
_MAX_ATTEMPTS = 20


@dataclass
class _Change:
    """One Delta version in Iceberg's terms: files added and (by location) removed."""

    version: int
    timestamp_ms: int
    metadata: Metadata
    adds: Sequence[Mapping[str, Any]]
    removed: set[str]
    data_change: bool


@dataclass
class _Live:
    """The current Iceberg snapshot's manifests, their live entries and which manifest lists
    each file (read from the manifests the first time a file is removed, once)."""

    fio: StoreFileIO
    manifests: list[ManifestFile]
    _entries: list[list[ManifestEntry]] | None = None
    _holders: dict[str, int] | None = None

    def entries(self, i: int) -> list[ManifestEntry]:
        if self._entries is None:
            self._entries = [
                m.fetch_manifest_entry(self.fio, discard_deleted=True) for m in self.manifests
            ]
        return self._entries[i]

    def holders(self) -> dict[str, int]:
        if self._holders is None:
            self._holders = {
                entry.data_file.file_path: i
                for i in range(len(self.manifests))
                for entry in self.entries(i)
            }
        return self._holders


def metadata_dir(table_root: str) -> str:
    return join(table_root, METADATA_DIR)


def convert(log: DeltaLog, snapshot: DeltaSnapshot, rerun: bool = False) -> str | None:
    """Bring the table's Iceberg metadata up to ``snapshot``'s version; returns the metadata
    file written (None when it already stood there). ``rerun``: convert the version again
    from its snapshot, whatever was converted before."""
    fio = StoreFileIO(log.store)
    for _ in range(_MAX_ATTEMPTS):
        found = _latest(log)
        current = _read_metadata(fio, found[1]) if found else None
        number = found[0] if found else 0
        done = int(current.properties.get(DELTA_VERSION, -1)) if current else -1
        if done >= snapshot.version and not rerun:
            return None
        changes = None if rerun or current is None else _changes(log, snapshot, done, current)
        if changes is None or current is None:
            new = _whole(fio, log, snapshot, current)
        else:
            new, live = current, None
            for change in changes:
                new, live = _apply(fio, log, new, change, live)
        if found is not None and current is not None:
            entry = MetadataLogEntry(metadata_file=found[1], timestamp_ms=current.last_updated_ms)
            new = new.model_copy(update={"metadata_log": [*new.metadata_log, entry]})
        location = join(metadata_dir(log.table_root), f"v{number + 1}.metadata.json")
        try:
            log.store.write_if_absent(location, new.model_dump_json(exclude_none=True).encode())
        except FileAlreadyExistsError:
            continue  # another converter took this number: go on from its metadata
        log.store.write(join(metadata_dir(log.table_root), VERSION_HINT), str(number + 1).encode())
        return location
    raise FileAlreadyExistsError(
        f"gave up writing Iceberg metadata for {log.table_root}: other converters kept "
        "taking the next metadata number"
    )


# ------------------------------------------------------------------ reading what exists


def _latest(log: DeltaLog) -> tuple[int, str] | None:
    """``(N, location)`` of the newest metadata file: the hint's, or a newer one a crashed
    or racing converter left without updating the hint."""
    directory = metadata_dir(log.table_root)
    hint = join(directory, VERSION_HINT)
    number = 0
    if log.store.exists(hint):
        text = log.store.read(hint).decode().strip()
        number = int(text) if text.isdigit() else 0
    while log.store.exists(join(directory, f"v{number + 1}.metadata.json")):
        number += 1
    if number == 0:
        return None
    return number, join(directory, f"v{number}.metadata.json")


def _read_metadata(fio: StoreFileIO, location: str) -> TableMetadataV2:
    with fio.new_input(location).open() as stream:
        md = FromByteStream.table_metadata(stream)
    assert isinstance(md, TableMetadataV2)
    return md


def _changes(
    log: DeltaLog, snapshot: DeltaSnapshot, done: int, current: TableMetadataV2
) -> list[_Change] | None:
    """The Delta versions after ``done`` up to ``snapshot``'s, or None when they cannot be
    applied one by one (commits gone, the partitioning changed)."""
    commits: list[tuple[int, CommitActions]] = []
    for version, actions in log.commits(done + 1):
        if version > snapshot.version:
            break
        commits.append((version, actions))
    if [v for v, _ in commits] != list(range(done + 1, snapshot.version + 1)):
        return None
    changed = [a.metadata for _, a in commits if a.metadata is not None]
    metadata = snapshot.metadata if not changed else log.snapshot(done).metadata
    out = []
    for version, actions in commits:
        metadata = actions.metadata or metadata
        if list(metadata.partition_columns) != _partition_names(current):
            return None
        out.append(_change(snapshot.table_root, version, actions, metadata))
    return out


def _partition_names(md: TableMetadataV2) -> list[str]:
    return [f.name for f in md.spec().fields]


def _change(root: str, version: int, actions: CommitActions, metadata: Metadata) -> _Change:
    removes = actions.removes
    return _Change(
        version=version,
        timestamp_ms=_timestamp(actions.commit_info),
        metadata=metadata,
        adds=list(actions.adds),
        removed={data_file_path(root, r["path"]) for r in removes},
        data_change=any(a.get("dataChange", True) for a in [*actions.adds, *removes]),
    )


def _timestamp(info: Mapping[str, Any] | None) -> int:
    ts = commit_timestamp(info) if info else None
    return ts if ts is not None else int(time.time() * 1000)


# ------------------------------------------------------------------ writing


def _whole(
    fio: StoreFileIO, log: DeltaLog, snapshot: DeltaSnapshot, current: TableMetadataV2 | None
) -> TableMetadataV2:
    """``snapshot``'s version as one snapshot listing every live file (after whatever
    ``current`` holds: its history stays readable)."""
    files = snapshot.files.select(["path", "partitionValues", "size", "stats"]).to_pylist()
    adds = [{**f, "partitionValues": dict(f["partitionValues"] or [])} for f in files]
    change = _Change(
        version=snapshot.version,
        timestamp_ms=snapshot.timestamp,
        metadata=snapshot.metadata,
        adds=adds,
        removed=set(),
        data_change=True,
    )
    base = _with_table(current, snapshot.metadata, log.table_root, snapshot.version)
    live = _Live(fio, [])  # nothing carried over: the new snapshot lists every file
    new, _ = _apply(fio, log, base, change, live, whole=True)
    return new


def _with_table(
    current: TableMetadataV2 | None, metadata: Metadata, root: str, version: int
) -> TableMetadataV2:
    """``current`` (or a new table) with ``metadata``'s schema and partitioning current."""
    if current is None:
        schema = _schema(metadata, 0)
        spec = _spec(metadata, 0)
        return TableMetadataV2(
            location=root,
            table_uuid=uuid.uuid4(),
            last_updated_ms=int(time.time() * 1000),
            last_column_id=max(schema.highest_field_id, 0),
            schemas=[schema],
            current_schema_id=0,
            partition_specs=[spec],
            default_spec_id=0,
            last_partition_id=_last_partition_id(spec),
            sort_orders=[UNSORTED_SORT_ORDER],
            default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
            properties=_properties(metadata, version, 0),
        )
    return _evolved(current, metadata)


def _schema(metadata: Metadata, schema_id: int) -> Schema:
    return ice.iceberg_schema(parse_schema_string(metadata.schema_string), schema_id)


def _spec(metadata: Metadata, spec_id: int) -> PartitionSpec:
    schema = parse_schema_string(metadata.schema_string)
    return ice.partition_spec(schema, list(metadata.partition_columns), spec_id)


def _last_partition_id(spec: PartitionSpec) -> int:
    return max((f.field_id for f in spec.fields), default=ice.FIRST_PARTITION_FIELD_ID - 1)


def _evolved(md: TableMetadataV2, metadata: Metadata) -> TableMetadataV2:
    """``md`` with ``metadata``'s schema (a new schema id when it changed) and partitioning
    (a new spec when it changed) as the current ones."""
    updates: dict[str, Any] = {}
    schema = _schema(metadata, md.current_schema_id)
    if schema != md.schema():
        schema = _schema(metadata, max(s.schema_id for s in md.schemas) + 1)
        updates |= {
            "schemas": [*md.schemas, schema],
            "current_schema_id": schema.schema_id,
            "last_column_id": max(md.last_column_id, schema.highest_field_id),
        }
    spec = _spec(metadata, md.default_spec_id)
    if [(f.source_id, f.name) for f in spec.fields] != [
        (f.source_id, f.name) for f in md.spec().fields
    ]:
        spec = _spec(metadata, max(s.spec_id for s in md.partition_specs) + 1)
        updates |= {
            "partition_specs": [*md.partition_specs, spec],
            "default_spec_id": spec.spec_id,
            "last_partition_id": max(md.last_partition_id or 0, _last_partition_id(spec)),
        }
    return md.model_copy(update=updates) if updates else md


def _properties(metadata: Metadata, version: int, timestamp_ms: int) -> dict[str, str]:
    schema = parse_schema_string(metadata.schema_string)
    mode = column_mapping_mode(metadata.configuration)
    return {
        DELTA_VERSION: str(version),
        DELTA_TIMESTAMP: str(timestamp_ms),
        NAME_MAPPING: ice.name_mapping(schema, mode).model_dump_json(),
    }


def _apply(
    fio: StoreFileIO,
    log: DeltaLog,
    md: TableMetadataV2,
    change: _Change,
    live: _Live | None,
    whole: bool = False,
) -> tuple[TableMetadataV2, _Live]:
    """``md`` plus one snapshot for ``change``."""
    md = _evolved(md, change.metadata)
    if live is None:
        live = _read_live(fio, md)
    schema = parse_schema_string(change.metadata.schema_string)
    mode = column_mapping_mode(change.metadata.configuration)
    parts = list(change.metadata.partition_columns)
    snapshot_id = _new_snapshot_id(md)
    sequence = md.last_sequence_number + 1
    directory = metadata_dir(log.table_root)
    added = [
        _data_file(log.table_root, schema, parts, mode, a, md.default_spec_id) for a in change.adds
    ]
    # a file added again (new stats, say) replaces its entry
    holders = live.holders() if change.removed or not change.data_change else {}
    removed = change.removed | {f.file_path for f in added if f.file_path in holders}
    manifests = _without(fio, md, live, removed, snapshot_id, directory)
    if added:
        manifests.append(_new_manifest(fio, md, directory, snapshot_id, added))
    list_location = join(directory, f"snap-{snapshot_id}-1-{uuid.uuid4()}.avro")
    parent = md.current_snapshot_id
    out = fio.new_output(list_location)
    with write_manifest_list(2, out, snapshot_id, parent, sequence, "deflate") as list_writer:
        list_writer.add_manifests(manifests)
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        sequence_number=sequence,
        timestamp_ms=change.timestamp_ms,
        manifest_list=list_location,
        summary=Summary(
            operation=_operation(bool(added), bool(removed), change.data_change, whole),
            **{DELTA_VERSION: str(change.version), DELTA_TIMESTAMP: str(change.timestamp_ms)},
        ),
        schema_id=md.current_schema_id,
    )
    logged = SnapshotLogEntry(snapshot_id=snapshot_id, timestamp_ms=change.timestamp_ms)
    main = SnapshotRef.model_validate({"snapshot-id": snapshot_id, "type": SnapshotRefType.BRANCH})
    new = md.model_copy(
        update={
            "snapshots": [*md.snapshots, snapshot],
            "current_snapshot_id": snapshot_id,
            "last_sequence_number": sequence,
            "last_updated_ms": max(change.timestamp_ms, md.last_updated_ms),
            "snapshot_log": [*md.snapshot_log, logged],
            "refs": {MAIN_BRANCH: main},
            "properties": {
                **md.properties,
                **_properties(change.metadata, change.version, change.timestamp_ms),
            },
        }
    )
    return new, _Live(fio, manifests)


def _new_manifest(
    fio: StoreFileIO, md: TableMetadataV2, directory: str, snapshot_id: int, added: list[DataFile]
) -> ManifestFile:
    out = fio.new_output(join(directory, f"{uuid.uuid4()}-m0.avro"))
    with write_manifest(2, md.spec(), md.schema(), out, snapshot_id, "deflate") as writer:
        for data_file in added:
            entry = ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=data_file
            )
            writer.add(entry)
    return writer.to_manifest_file()


def _operation(added: bool, removed: bool, data_change: bool, whole: bool) -> Operation:
    if whole:
        return Operation.OVERWRITE
    if not data_change:
        return Operation.REPLACE  # OPTIMIZE: the same rows in other files
    if removed:
        return Operation.OVERWRITE if added else Operation.DELETE
    return Operation.APPEND


def _new_snapshot_id(md: TableMetadataV2) -> int:
    used = {s.snapshot_id for s in md.snapshots}
    while True:
        candidate = uuid.uuid4().int & ((1 << 63) - 1)
        if candidate and candidate not in used:
            return candidate


def _data_file(
    root: str,
    schema: Any,
    parts: list[str],
    mode: str,
    add: Mapping[str, Any],
    spec_id: int,
) -> DataFile:
    records, metrics = ice.file_metrics(schema, mode, add.get("stats"))
    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=data_file_path(root, add["path"]),
        file_format=FileFormat.PARQUET,
        partition=ice.partition_record(schema, parts, mode, add.get("partitionValues") or {}),
        record_count=records,
        file_size_in_bytes=int(add["size"]),
        null_value_counts=metrics["null_value_counts"],
        lower_bounds=metrics["lower_bounds"],
        upper_bounds=metrics["upper_bounds"],
    )
    data_file.spec_id = spec_id
    return data_file


def _read_live(fio: StoreFileIO, md: TableMetadataV2) -> _Live:
    snapshot = md.current_snapshot()
    return _Live(fio, list(snapshot.manifests(fio)) if snapshot else [])


def _without(
    fio: StoreFileIO,
    md: TableMetadataV2,
    live: _Live,
    removed: Iterable[str],
    snapshot_id: int,
    directory: str,
) -> list[ManifestFile]:
    """``live``'s manifests with the ``removed`` files marked deleted: only the manifests
    holding one are rewritten."""
    touched: dict[int, set[str]] = {}
    holders = live.holders() if removed else {}
    for path in removed:
        if path in holders:
            touched.setdefault(holders[path], set()).add(path)
    out = []
    for i, manifest in enumerate(live.manifests):
        gone = touched.get(i)
        if not gone:
            if manifest.added_files_count or manifest.existing_files_count:
                out.append(manifest)  # one left with deleted entries only is dropped
            continue
        spec = md.specs()[manifest.partition_spec_id]
        location = join(directory, f"{uuid.uuid4()}-m0.avro")
        schema = md.schema()
        out_file = fio.new_output(location)
        with write_manifest(2, spec, schema, out_file, snapshot_id, "deflate") as writer:
            for entry in live.entries(i):
                if entry.data_file.file_path in gone:
                    writer.delete(entry)
                else:
                    writer.existing(entry)
        out.append(writer.to_manifest_file())
    return out


__all__ = [
    "DELTA_TIMESTAMP",
    "DELTA_VERSION",
    "VERSION_HINT",
    "convert",
    "metadata_dir",
]
