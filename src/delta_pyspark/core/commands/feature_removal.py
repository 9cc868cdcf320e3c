"""Dropping table features: which features may go, what must be gone from the table first,
and the protocol afterwards (delta-spark's ALTER TABLE DROP FEATURE; PROTOCOL.md "Table
Features"; the ``checkpointProtection`` writer feature of protocol_rfcs/checkpoint-protection.md).

A writer feature drops at once, after its traces are gone from the latest version. A
reader-writer feature also leaves traces in the history that older readers would
misread; two ways keep them away from such readers, as in delta-spark:

- checkpoint protection (the default): barrier checkpoints after the traces are removed, and
  the downgrade commit adds ``checkpointProtection`` with
  ``delta.requireCheckpointProtectionBeforeVersion``, so those checkpoints stay until all the
  history before them is truncated in one go;
- history truncation (``TRUNCATE HISTORY``): the log before the traces' removal is cleaned up
  (with a 24-hour retention) and must hold no trace before the protocol drops the feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pyarrow.compute as pc

from delta_pyspark.core.log.commit_actions import CommitActions
from delta_pyspark.core.log.metadata_cleanup import CHECKPOINT_PROTECTION, PROTECTION_VERSION_KEY
from delta_pyspark.core.log.segment import CheckpointKind, scan_log
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import DeletionVectorJson, Metadata, Protocol, RemoveFile
from delta_pyspark.core.protocol.column_mapping import (
    MAX_COLUMN_ID_KEY,
    PHYSICAL_NAME_KEY,
    column_mapping_mode,
)
from delta_pyspark.core.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyspark.core.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.core.protocol.table_features import (
    READER_WRITER_FEATURES,
    implied_writer_features,
    reader_features,
)
from delta_pyspark.core.protocol.type_widening import has_type_changes, without_field_metadata
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.exceptions import (
    FeatureDropDependentFeatureError,
    FeatureDropHistoryTruncationNotAllowedError,
    FeatureDropIsDeltaPropertyError,
    FeatureDropNeedsHistoryTruncationError,
    FeatureDropNonRemovableError,
    FeatureDropNotPresentError,
    FeatureDropUnsupportedClientFeatureError,
)

TRUNCATE_RETENTION_KEY = "delta.dropFeatureTruncateHistory.retentionDuration"
BARRIER_CHECKPOINTS = 3  # delta-spark's: more than the earlier checkpoints a reader retries

# The (reader, writer) versions each feature needs; legacy features have legacy versions.
_LEGACY_VERSIONS = {
    "appendOnly": (1, 2),
    "invariants": (1, 2),
    "checkConstraints": (1, 3),
    "changeDataFeed": (1, 4),
    "generatedColumns": (1, 4),
    "columnMapping": (2, 5),
    "identityColumns": (1, 6),
}
# Features delta-spark can drop that this implementation does not drop (yet).
_DROPPED_ONLY_BY_DELTA_SPARK = frozenset(
    {
        "rowTracking",
        "domainMetadata",
        "materializePartitionColumns",
        "coordinatedCommits-preview",
        "catalogManaged",
        "redirectReaderWriter-preview",
        "redirectWriterOnly-preview",
        "geospatial",
        "geospatial-dev",
    }
)
# Features that need another one (delta-spark's requiredFeatures), by the one they need.
_DEPENDENTS = {
    "columnMapping": ("icebergCompatV1", "icebergCompatV2", "icebergCompatV3"),
    "domainMetadata": ("rowTracking", "clustering"),
    "variantType": ("variantShredding",),
}


Action = tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class RemovableFeature:
    """A feature this implementation can drop.

    ``traces``: what in a version still uses the feature (empty: none; delta-spark's
    ``validateDropInvariants``); ``uses``: whether one action of the history uses it (for
    reader-writer features only); ``unset``: properties the downgrade commit removes.
    """

    name: str
    traces: Callable[[Snapshot], list[str]]
    uses: Callable[[Action], bool] = lambda _action: False
    unset: tuple[str, ...] = ()
    history_protection: bool = field(init=False)

    def __post_init__(self) -> None:
        protected = self.name in READER_WRITER_FEATURES
        object.__setattr__(self, "history_protection", protected)


def _flag(conf: Mapping[str, str], key: str) -> bool:
    return str(conf.get(key, "false")).strip().lower() == "true"


def _dv_traces(snapshot: Snapshot) -> list[str]:
    out = []
    if _flag(snapshot.configuration, props.ENABLE_DELETION_VECTORS):
        out.append(f"{props.ENABLE_DELETION_VECTORS} is true")
    files = snapshot.files
    with_dv = int(pc.sum(pc.is_valid(files.column("deletionVector"))).as_py() or 0)
    if with_dv:
        out.append(f"{with_dv} file(s) have deletion vectors")
    return out


def _dv_uses(action: Action) -> bool:
    kind, body = action
    if kind == "metaData":
        return _flag(body.get("configuration") or {}, props.ENABLE_DELETION_VECTORS)
    return kind in ("add", "remove", "cdc") and body.get("deletionVector") is not None


def constraint_names(snapshot: Snapshot) -> list[str]:
    return sorted(props.check_constraints(snapshot.configuration))


def _constraint_traces(snapshot: Snapshot) -> list[str]:
    names = constraint_names(snapshot)
    return [f"CHECK constraint(s) {', '.join(names)}"] if names else []


def _column_mapping_traces(snapshot: Snapshot) -> list[str]:
    out = []
    mode = column_mapping_mode(snapshot.configuration)
    if mode != "none":
        out.append(f"{props.COLUMN_MAPPING_MODE} is {mode}")
    text = snapshot.metadata.schema_string
    if PHYSICAL_NAME_KEY in text or COLUMN_MAPPING_ID_KEY in text:
        out.append("the schema holds column mapping metadata")
    return out


def _column_mapping_uses(action: Action) -> bool:
    kind, body = action
    return kind == "metaData" and column_mapping_mode(body.get("configuration") or {}) != "none"


def _type_widening_traces(snapshot: Snapshot) -> list[str]:
    out = []
    if _flag(snapshot.configuration, props.TYPE_WIDENING):
        out.append(f"{props.TYPE_WIDENING} is true")
    if has_type_changes(snapshot.schema):
        out.append("the schema records type changes (delta.typeChanges)")
    return out


def _type_widening_uses(action: Action) -> bool:
    kind, body = action
    if kind != "metaData" or "delta.typeChanges" not in str(body.get("schemaString", "")):
        return False
    return has_type_changes(parse_schema_string(str(body["schemaString"])))


def v2_policy(conf: Mapping[str, str]) -> bool:
    """Whether ``delta.checkpointPolicy`` asks for v2 checkpoints."""
    return str(conf.get("delta.checkpointPolicy", "classic")).lower() == "v2"


def _v2_checkpoint_traces(snapshot: Snapshot) -> list[str]:
    out = []
    if v2_policy(snapshot.configuration):
        out.append("delta.checkpointPolicy is v2")
    checkpoint = snapshot.segment.checkpoint
    if checkpoint is not None and checkpoint.kind is CheckpointKind.UUID:
        out.append(f"the version is read from v2 checkpoint {checkpoint.version}")
    return out


def _v2_checkpoint_uses(action: Action) -> bool:
    kind, body = action
    if kind == "metaData":
        return v2_policy(body.get("configuration") or {})
    return kind in ("checkpointMetadata", "sidecar")


def _ict_traces(snapshot: Snapshot) -> list[str]:
    conf = snapshot.configuration
    enabled = _flag(conf, props.IN_COMMIT_TIMESTAMPS)
    out = [f"{props.IN_COMMIT_TIMESTAMPS} is true"] if enabled else []
    provenance = (props.ICT_ENABLEMENT_VERSION, props.ICT_ENABLEMENT_TIMESTAMP)
    return out + [f"{k} is set" for k in provenance if k in conf]


def _protection_traces(snapshot: Snapshot) -> list[str]:
    present = PROTECTION_VERSION_KEY in snapshot.configuration
    return [f"{PROTECTION_VERSION_KEY} is set"] if present else []


REMOVABLE: dict[str, RemovableFeature] = {
    f.name: f
    for f in (
        RemovableFeature("deletionVectors", _dv_traces, _dv_uses),
        RemovableFeature("checkConstraints", _constraint_traces),
        RemovableFeature("columnMapping", _column_mapping_traces, _column_mapping_uses),
        RemovableFeature("typeWidening", _type_widening_traces, _type_widening_uses),
        RemovableFeature("typeWidening-preview", _type_widening_traces, _type_widening_uses),
        RemovableFeature("v2Checkpoint", _v2_checkpoint_traces, _v2_checkpoint_uses),
        RemovableFeature("inCommitTimestamp", _ict_traces),
        RemovableFeature("vacuumProtocolCheck", lambda _snapshot: []),
        RemovableFeature(CHECKPOINT_PROTECTION, _protection_traces),
    )
}


def table_features(protocol: Protocol) -> frozenset[str]:
    """Every feature the protocol supports, listed or implied by legacy versions."""
    return reader_features(protocol) | implied_writer_features(protocol)


def feature_to_drop(protocol: Protocol, name: str, truncate_history: bool) -> RemovableFeature:
    """The feature ``name`` names, if it may be dropped from this protocol; else the error
    delta-spark raises, checked in its order."""
    from delta_pyspark.core.protocol.table_properties import KNOWN_FEATURES

    present = name in table_features(protocol)
    if not present and name.lower() in props.REGISTRY:
        raise FeatureDropIsDeltaPropertyError(
            f"Cannot drop `{name}` from this table because this is a delta table property "
            "and not a table feature."
        )
    if name in KNOWN_FEATURES and not present:
        raise FeatureDropNotPresentError(
            f"Cannot drop {name} from this table because it is not currently present in "
            "the table's protocol."
        )
    feature = REMOVABLE.get(name)
    if feature is None:
        if name in KNOWN_FEATURES and name not in _DROPPED_ONLY_BY_DELTA_SPARK:
            raise FeatureDropNonRemovableError(
                f"Cannot drop {name} because dropping this feature is not supported."
            )
        raise FeatureDropUnsupportedClientFeatureError(
            f"Cannot drop {name} because it is not supported by this Delta version."
            + (" (delta-spark can drop it; delta-pyspark cannot)" if name in KNOWN_FEATURES else "")
        )
    if truncate_history and not (feature.history_protection or name == CHECKPOINT_PROTECTION):
        raise FeatureDropHistoryTruncationNotAllowedError(
            f"The particular feature does not require history truncation ({name} is a "
            "writer feature: drop it without TRUNCATE HISTORY)."
        )
    if name == CHECKPOINT_PROTECTION and not truncate_history:
        raise FeatureDropNeedsHistoryTruncationError(
            "checkpointProtection can only be dropped with TRUNCATE HISTORY "
            "(ALTER TABLE ... DROP FEATURE checkpointProtection TRUNCATE HISTORY)."
        )
    dependents = sorted(set(_DEPENDENTS.get(name, ())) & table_features(protocol))
    if dependents:
        raise FeatureDropDependentFeatureError(
            f"Cannot drop table feature `{name}` because some other features "
            f"({', '.join(dependents)}) in this table depends on `{name}`. Consider dropping "
            "them first before dropping this feature."
        )
    return feature


def _minimum_versions(features: Iterable[str]) -> tuple[int, int]:
    reader, writer = 1, 1
    for f in features:
        r, w = _LEGACY_VERSIONS.get(f, (3, 7) if f in READER_WRITER_FEATURES else (1, 7))
        reader, writer = max(reader, r), max(writer, w)
    return reader, writer


def normalized(features: frozenset[str]) -> Protocol:
    """The protocol supporting exactly ``features``: legacy versions when they imply exactly
    those, else table features at the smallest reader version (delta-spark's ``normalized``)."""
    reader, writer = _minimum_versions(features)
    if writer < 7:
        legacy = Protocol(reader, writer)
        if table_features(legacy) == features:
            return legacy
    if reader < 3:
        return Protocol(reader, 7, None, features)
    readers = frozenset(f for f in features if f in READER_WRITER_FEATURES)
    return Protocol(3, 7, readers, features)


def protocol_without(protocol: Protocol, name: str, protect: bool = False) -> Protocol:
    """``protocol`` without feature ``name`` (and with ``checkpointProtection`` if
    ``protect``), at the smallest versions that support the rest."""
    features = table_features(protocol) - {name}
    if protect:
        features |= {CHECKPOINT_PROTECTION}
    return normalized(frozenset(features))


def downgrade_metadata(
    metadata: Metadata, feature: RemovableFeature, protect_before: int | None
) -> Metadata:
    """The downgrade commit's metadata: ``protect_before`` recorded as the version before
    which checkpoints are protected (checkpoint protection only)."""
    conf = {k: v for k, v in metadata.configuration.items() if k not in feature.unset}
    if protect_before is not None:
        conf[PROTECTION_VERSION_KEY] = str(protect_before)
    return metadata.with_changes(configuration=conf)


def dv_tombstones(snapshot: Snapshot, now_ms: int) -> list[RemoveFile]:
    """``remove`` actions naming the deletion vector files the tombstones still reference, so
    a VACUUM by a client that knows no deletion vectors keeps them while older versions
    need them (delta-spark's DV tombstones; those already written are not repeated)."""
    tombstones = snapshot.tombstones
    if tombstones.num_rows == 0:
        return []
    root = snapshot.table_root.rstrip("/") + "/"
    plain = {p for p, dv in zip(*_paths_and_vectors(tombstones), strict=True) if dv is None}
    wanted: set[str] = set()
    for dv in _paths_and_vectors(tombstones)[1]:
        if dv is None or dv.get("storageType") == "i":
            continue
        where = DeletionVectorDescriptor.from_dict(dv).absolute_path(snapshot.table_root)
        if where is None:
            continue
        path = quote(where[len(root) :]) if where.startswith(root) else where
        if path not in plain:
            wanted.add(path)
    return [{"path": p, "deletionTimestamp": now_ms, "dataChange": False} for p in sorted(wanted)]


def _paths_and_vectors(files: Any) -> tuple[list[str], list[DeletionVectorJson | None]]:
    return files.column("path").to_pylist(), files.column("deletionVector").to_pylist()


def without_column_mapping(metadata: Metadata) -> Metadata:
    """The metadata of a table whose files use the logical names: no mapping mode, no
    field ids or physical names (the data rewrite that drops column mapping commits it)."""
    schema = without_field_metadata(
        parse_schema_string(metadata.schema_string),
        lambda key: key.startswith("delta.columnMapping.") or key.startswith("parquet.field."),
    )
    mapping_keys = (props.COLUMN_MAPPING_MODE, MAX_COLUMN_ID_KEY)
    conf = {k: v for k, v in metadata.configuration.items() if k not in mapping_keys}
    return metadata.with_changes(schema_string=schema_to_string(schema), configuration=conf)


def truncate_retention_ms(configuration: Mapping[str, str]) -> int:
    """TRUNCATE HISTORY's log retention: the table's setting, 24 hours by default."""
    return props.parse_interval_ms(configuration.get(TRUNCATE_RETENTION_KEY, "interval 24 hours"))


def snapshot_actions(snapshot: Snapshot) -> list[Action]:
    """A version's state as actions for ``uses``: its metadata and the files it keeps
    (tombstones left out, as delta-spark leaves them out of the earliest checkpoint)."""
    actions: list[Action] = [("metaData", snapshot.metadata.to_dict())]
    files = snapshot.files
    dvs = files.column("deletionVector").to_pylist()
    actions += [("add", {"deletionVector": dv}) for dv in dvs if dv is not None]
    checkpoint = snapshot.segment.checkpoint
    if checkpoint is not None and checkpoint.kind is CheckpointKind.UUID:
        actions.append(("checkpointMetadata", {"version": checkpoint.version}))
    return actions


def history_uses_feature(log: DeltaLog, feature: RemovableFeature, snapshot: Snapshot) -> bool:
    """Whether any version the log can still reconstruct up to ``snapshot`` uses ``feature``:
    the state at the earliest checkpoint and every commit file left (delta-spark's
    ``historyContainsFeature``)."""
    listing = scan_log(log.store, snapshot.segment.log_dir, 0)
    checkpoints = [v for v in listing.checkpoints if v <= snapshot.version]
    if checkpoints:
        earliest = log.snapshot(min(checkpoints))
        if any(feature.uses(a) for a in snapshot_actions(earliest)):
            return True
    for version, commit in log.commits(0):
        if version > snapshot.version:
            break
        if any(feature.uses(a) for a in commit_actions_of(commit)):
            return True
    return False


def history_truncated_before(log: DeltaLog, version: int) -> bool:
    """Whether the log keeps nothing before ``version``: its earliest checkpoint is at or
    after it and no older commit is left (the condition to drop checkpointProtection)."""
    if version <= 0:
        return True
    listing = scan_log(log.store, log.log_dir, 0)
    if not listing.checkpoints or min(listing.checkpoints) < version:
        return False
    return all(v >= version for v in listing.commits)


def commit_actions_of(commit: CommitActions) -> list[Action]:
    """The actions of one commit (``CommitActions``) as ``(kind, body)`` pairs."""
    out: list[Action] = []
    if commit.metadata is not None:
        out.append(("metaData", commit.metadata.to_dict()))
    out += [("add", a) for a in commit.adds]
    out += [("remove", r) for r in commit.removes]
    out += [("cdc", c) for c in commit.cdcs]
    if commit.checkpoint_metadata is not None:
        out.append(("checkpointMetadata", commit.checkpoint_metadata))
    out += [("sidecar", s) for s in commit.sidecars]
    return out
