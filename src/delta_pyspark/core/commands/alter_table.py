"""ALTER TABLE SET / UNSET TBLPROPERTIES and ADD COLUMNS: one metadata (and, if needed,
protocol) commit.

``delta.*`` keys are validated against the registry in ``table_properties`` and stored
in their canonical spelling; other keys are free-form user properties. Properties
that need a table feature upgrade the protocol in the same commit; turning a
property off never removes a feature (existing deletion vectors, say, must stay
readable). ``delta.feature.<name>`` and ``delta.min{Reader,Writer}Version`` only
change the protocol and are not stored, as in delta-spark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from delta_pyspark.core.commands.clustering import refuse_feature_property
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.column_mapping import PHYSICAL_NAME_KEY, column_mapping_mode
from delta_pyspark.core.protocol.deletion_vectors import any_deletion_vectors
from delta_pyspark.core.protocol.schema import (
    DataType,
    StructField,
    StructType,
    map_fields,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.stats.layout import split_column_name
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.uniform.compat import after_property_change
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaUnsupportedOperationException,
)

__all__ = ["add_columns", "set_properties", "unset_properties"]


def set_properties(log: DeltaLog, properties: Mapping[str, str]) -> Snapshot:
    """Set table properties in one ``SET TBLPROPERTIES`` commit; returns the new snapshot."""
    if not properties:
        raise DeltaIllegalArgumentException("SET TBLPROPERTIES needs at least one property")
    snapshot = log.snapshot()
    requested = props.validate_properties(properties)
    refuse_feature_property(requested)
    _check_stats_columns(snapshot, requested)

    old_conf = dict(snapshot.configuration)
    conf = _without_keys(old_conf, requested)
    conf.update({k: v for k, v in requested.items() if not props.is_protocol_key(k)})
    conf = after_property_change(conf, requested)
    schema_string = _column_mapping_change(snapshot, old_conf, conf)
    _check_manifest_compatibility(snapshot, conf)

    protocol = _target_protocol(snapshot, schema_string, conf, requested)
    txn = Transaction(log, snapshot)
    txn.update_metadata(
        snapshot.metadata.with_changes(configuration=conf, schema_string=schema_string)
    )
    if protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    return txn.commit("SET TBLPROPERTIES", {"properties": requested})


def unset_properties(log: DeltaLog, keys: list[str], if_exists: bool = False) -> Snapshot:
    """Remove table properties in one ``UNSET TBLPROPERTIES`` commit.

    A key that is not set is an error unless ``if_exists``. The protocol never changes:
    features stay supported after the property that needed them is gone.
    """
    if not keys:
        raise DeltaIllegalArgumentException("UNSET TBLPROPERTIES needs at least one key")
    snapshot = log.snapshot()
    conf = dict(snapshot.configuration)
    by_lower = {k.lower(): k for k in conf}
    removed: list[str] = []
    for key in keys:
        lower = key.lower()
        if lower.startswith(props.CONSTRAINT_PREFIX.lower()):
            raise DeltaAnalysisException(
                f"cannot unset {key}: use DeltaTable.dropConstraint "
                "(ALTER TABLE DROP CONSTRAINT) to remove CHECK constraints"
            )
        if lower.startswith(props.FEATURE_PREFIX.lower()):
            raise DeltaUnsupportedOperationException(
                f"cannot unset {key}: table features cannot be removed through table "
                "properties (delta-spark's ALTER TABLE DROP FEATURE)"
            )
        # delta.* keys match whatever case is stored; user keys match exactly.
        stored = by_lower.get(lower) if props.is_delta_key(key) else (key if key in conf else None)
        if stored is None:
            if if_exists:
                continue
            raise DeltaAnalysisException(
                f"cannot unset {key}: the table has no such property "
                "(use ifExists=True to ignore missing keys)"
            )
        if stored == props.COLUMN_MAPPING_MODE and column_mapping_mode(conf) != "none":
            raise DeltaUnsupportedOperationException(
                f"cannot unset {stored}: turning column mapping off would lose the "
                "physical column names the data files use"
            )
        del conf[stored]
        removed.append(stored)
    txn = Transaction(log, snapshot)
    txn.update_metadata(snapshot.metadata.with_changes(configuration=conf))
    return txn.commit("UNSET TBLPROPERTIES", {"properties": removed, "ifExists": if_exists})


def add_columns(log: DeltaLog, fields: Sequence[StructField]) -> Snapshot:
    """Append ``fields`` to the table's schema in one ``ADD COLUMNS`` commit.

    Existing files hold no values for them, so they read as null: a NOT NULL column is
    refused (as delta-spark does), and so is a name the table already has (any case).
    Column-mapped tables get ids and physical names for them from the transaction.
    """
    if not fields:
        raise DeltaIllegalArgumentException("ADD COLUMNS needs at least one column")
    snapshot = log.snapshot()
    schema = snapshot.schema
    seen = {name.lower() for name in schema.field_names}
    for f in fields:
        if f.name.lower() in seen:
            raise DeltaAnalysisException(f"cannot add column {f.name!r}: it already exists")
        if not f.nullable:
            raise DeltaAnalysisException(
                f"cannot add column {f.name!r} as NOT NULL: the table's existing rows have no "
                "value for it"
            )
        seen.add(f.name.lower())
    new_schema = StructType(schema.fields + tuple(fields))
    txn = Transaction(log, snapshot)
    txn.update_metadata(snapshot.metadata.with_changes(schema_string=schema_to_string(new_schema)))
    protocol = protocol_for(new_schema, dict(snapshot.configuration), snapshot.protocol)
    if protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    columns = [{"column": f.to_json()} for f in fields]
    return txn.commit("ADD COLUMNS", {"columns": json.dumps(columns)})


# ---------------------------------------------------------------------- helpers


def _without_keys(conf: dict[str, str], keys: Mapping[str, str]) -> dict[str, str]:
    """``conf`` minus any spelling (any case) of the ``delta.*`` keys being set."""
    lowered = {k.lower() for k in keys if props.is_delta_key(k)}
    return {k: v for k, v in conf.items() if not (props.is_delta_key(k) and k.lower() in lowered)}


def _target_protocol(
    snapshot: Snapshot, schema_string: str, conf: Mapping[str, str], requested: Mapping[str, str]
) -> Protocol:
    """The current protocol plus whatever the new properties need (never a downgrade; a
    legacy writer version asked of a table-features protocol asks for the features it
    implies, as delta-spark merges it)."""
    current = snapshot.protocol
    for key, attr in ((props.MIN_READER_VERSION, "min_reader_version"),
                      (props.MIN_WRITER_VERSION, "min_writer_version")):  # fmt: skip
        features_asked = key == props.MIN_WRITER_VERSION and current.min_writer_version >= 7
        if key in requested and int(requested[key]) < getattr(current, attr) and not features_asked:
            raise DeltaIllegalArgumentException(
                f"cannot set {key}={requested[key]}: the table already requires "
                f"{getattr(current, attr)} and protocol versions are never downgraded"
            )
    needs = dict(conf)
    needs.update({k: v for k, v in requested.items() if props.is_protocol_key(k)})
    needs.update(
        {f"{props.FEATURE_PREFIX}{f}": "supported" for f in props.features_for_properties(conf)}
    )
    return protocol_for(parse_schema_string(schema_string), needs, current)


def _check_stats_columns(snapshot: Snapshot, requested: Mapping[str, str]) -> None:
    value = requested.get(props.STATS_COLUMNS)
    if value is None:
        return
    for name in props.split_column_list(value):
        parts = split_column_name(name)
        dt: DataType = snapshot.schema
        for part in parts:
            field = dt.find_field(part) if isinstance(dt, StructType) else None
            if field is None:
                raise DeltaAnalysisException(
                    f"{props.STATS_COLUMNS} names {name!r}, which is not a column "
                    f"of the table (columns: {', '.join(snapshot.schema.field_names)})"
                )
            dt = field.type


def _column_mapping_change(
    snapshot: Snapshot, old: Mapping[str, str], new: Mapping[str, str]
) -> str:
    """The schema string after a column mapping mode change (only none -> name is allowed).

    Existing files name their columns by the logical names, so the physical names
    assigned on the upgrade are those names (as delta-spark does); the transaction
    then assigns ids and ``delta.columnMapping.maxColumnId``.
    """
    before, after = column_mapping_mode(old), column_mapping_mode(new)
    schema_string = snapshot.metadata.schema_string
    if before == after:
        return schema_string
    if (before, after) != ("none", "name"):
        raise DeltaUnsupportedOperationException(
            f"changing {props.COLUMN_MAPPING_MODE} from {before!r} to {after!r} is not "
            "supported (only 'none' -> 'name' is)"
        )
    schema = parse_schema_string(schema_string)
    return schema_to_string(_with_logical_physical_names(schema))


def _with_logical_physical_names(schema: StructType) -> StructType:
    """Each field, nested ones too, given its logical name as physical name unless it has
    one: existing files name their columns by the logical names."""

    def named(f: StructField) -> StructField:
        metadata = dict(f.metadata)
        metadata.setdefault(PHYSICAL_NAME_KEY, f.name)
        return StructField(f.name, f.type, f.nullable, metadata)

    result = map_fields(schema, named)
    assert isinstance(result, StructType)
    return result


def _check_manifest_compatibility(snapshot: Snapshot, conf: Mapping[str, str]) -> None:
    """Symlink manifests cannot express deleted rows or physical column names (delta-spark
    refuses these combinations up front rather than failing every later commit)."""
    if not props.symlink_manifest_enabled(conf):
        return
    if props.deletion_vectors_enabled(conf):
        raise DeltaAnalysisException(
            f"{props.SYMLINK_MANIFEST} and {props.ENABLE_DELETION_VECTORS} cannot both be "
            "true: manifests cannot express rows deleted by deletion vectors"
        )
    files = snapshot.files
    if any_deletion_vectors(files):
        raise DeltaAnalysisException(
            f"cannot enable {props.SYMLINK_MANIFEST}: the table has files with deletion "
            "vectors; purge them first (REORG TABLE ... APPLY (PURGE))"
        )
    if column_mapping_mode(conf) != "none":
        raise DeltaAnalysisException(
            f"cannot enable {props.SYMLINK_MANIFEST} on a table with column mapping: "
            "manifest readers would see physical column names"
        )
