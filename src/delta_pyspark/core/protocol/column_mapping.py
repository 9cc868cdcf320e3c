"""Column mapping (PROTOCOL.md, "Column Mapping"): logical names versus the physical
names data files, statistics and partition values use.

With mapping on, every column (nested too) carries a stable physical name and a
32-bit id in its metadata, so renames and drops never rewrite data. Readers in
``name`` mode resolve file columns by physical name, in ``id`` mode by Parquet field
id; ``to_arrow_schema`` turns the id into the Arrow field metadata pyarrow writes as
the Parquet field id, which is why ``to_physical_schema`` keeps the metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from delta_pyspark.core.protocol.actions import Metadata
from delta_pyspark.core.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    map_fields,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.exceptions import CorruptLogError, UnsupportedTableFeatureError

__all__ = [
    "COLUMN_MAPPING_ID_KEY",
    "COLUMN_MAPPING_MODE_KEY",
    "MAX_COLUMN_ID_KEY",
    "PHYSICAL_NAME_KEY",
    "assign_column_mapping",
    "column_mapping_mode",
    "logical_to_physical_names",
    "max_column_id",
    "physical_name",
    "to_physical_schema",
]

COLUMN_MAPPING_MODE_KEY = "delta.columnMapping.mode"
MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"
COLUMN_MAPPING_ID_KEY = "delta.columnMapping.id"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
MODES = ("none", "name", "id")


def column_mapping_mode(configuration: Mapping[str, str]) -> str:
    """``none`` | ``name`` | ``id`` from the table properties (case-insensitive, as in
    delta-spark); any other value is a mode this reader cannot honour."""
    raw = configuration.get(COLUMN_MAPPING_MODE_KEY)
    if raw is None:
        return "none"
    mode = str(raw).strip().lower()
    if mode not in MODES:
        raise UnsupportedTableFeatureError(
            f"unsupported column mapping mode {raw!r} (expected one of {', '.join(MODES)})",
            ["columnMapping"],
        )
    return mode


def physical_name(field: StructField, mode: str) -> str:
    """The name data files and the log use for ``field``."""
    if mode == "none":
        return field.name
    name = field.metadata.get(PHYSICAL_NAME_KEY)
    if not isinstance(name, str) or not name:
        raise CorruptLogError(
            f"column {field.name!r} has no {PHYSICAL_NAME_KEY} although the table uses "
            f"column mapping mode {mode!r}"
        )
    return name


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown column mapping mode {mode!r}")


def _physical_type(dt: DataType, mode: str) -> DataType:
    return map_fields(
        dt, lambda f: StructField(physical_name(f, mode), f.type, f.nullable, f.metadata)
    )


def to_physical_schema(schema: StructType, mode: str) -> StructType:
    """``schema`` with every field, nested ones included (also inside arrays and maps),
    renamed to its physical name; metadata (the column id) is kept for field ids."""
    _check_mode(mode)
    if mode == "none":
        return schema
    result = _physical_type(schema, mode)
    assert isinstance(result, StructType)
    return result


def logical_to_physical_names(
    schema: StructType, mode: str
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Every column path reachable through structs (top-level and nested fields) mapped
    to its physical path: the shape statistics and partition values are keyed by.
    Fields inside arrays and maps have no such path and are left out."""
    _check_mode(mode)
    out: dict[tuple[str, ...], tuple[str, ...]] = {}

    def walk(struct: StructType, logical: tuple[str, ...], physical: tuple[str, ...]) -> None:
        for f in struct.fields:
            lpath, ppath = (*logical, f.name), (*physical, physical_name(f, mode))
            out[lpath] = ppath
            if isinstance(f.type, StructType):
                walk(f.type, lpath, ppath)

    walk(schema, (), ())
    return out


def _ids(dt: DataType) -> list[int]:
    if isinstance(dt, StructType):
        found = []
        for f in dt.fields:
            value = f.metadata.get(COLUMN_MAPPING_ID_KEY)
            if isinstance(value, int) and not isinstance(value, bool):
                found.append(value)
            found.extend(_ids(f.type))
        return found
    if isinstance(dt, ArrayType):
        return _ids(dt.element_type)
    if isinstance(dt, MapType):
        return _ids(dt.key_type) + _ids(dt.value_type)
    return []


def max_column_id(schema: StructType) -> int:
    """The largest column id in the schema (0 when there is none)."""
    return max(_ids(schema), default=0)


def assign_column_mapping(schema: StructType, start_id: int = 0) -> tuple[StructType, int]:
    """Give every field lacking them a column id and a ``col-<uuid4>`` physical name.

    Ids continue after ``start_id`` (the table's ``delta.columnMapping.maxColumnId``)
    and after any id already in the schema, in depth-first order (a struct before its
    fields) as delta-spark assigns them. Returns the new schema and the new maximum id
    to store as ``delta.columnMapping.maxColumnId``.
    """
    next_id = max(start_id, max_column_id(schema))

    def assign_type(dt: DataType) -> DataType:
        if isinstance(dt, StructType):
            return StructType(tuple(assign_field(f) for f in dt.fields))
        if isinstance(dt, ArrayType):
            return ArrayType(assign_type(dt.element_type), dt.contains_null)
        if isinstance(dt, MapType):
            return MapType(
                assign_type(dt.key_type), assign_type(dt.value_type), dt.value_contains_null
            )
        return dt

    def assign_field(f: StructField) -> StructField:
        nonlocal next_id
        metadata = dict(f.metadata)
        if COLUMN_MAPPING_ID_KEY not in metadata:
            next_id += 1
            metadata[COLUMN_MAPPING_ID_KEY] = next_id
        if not metadata.get(PHYSICAL_NAME_KEY):
            metadata[PHYSICAL_NAME_KEY] = f"col-{uuid.uuid4()}"
        return StructField(f.name, assign_type(f.type), f.nullable, metadata)

    result = assign_type(schema)
    assert isinstance(result, StructType)
    return result, next_id


def with_column_mapping(metadata: Metadata) -> Metadata:
    """``metadata`` with ids and physical names for every field, when column mapping is on.

    New tables and columns added later (schema evolution) get them here, and
    ``delta.columnMapping.maxColumnId`` follows; other metadata is returned unchanged.
    """
    if column_mapping_mode(metadata.configuration) == "none":
        return metadata
    schema = parse_schema_string(metadata.schema_string)
    start = int(metadata.configuration.get(MAX_COLUMN_ID_KEY, "0"))
    assigned, max_id = assign_column_mapping(schema, start)
    if assigned == schema and metadata.configuration.get(MAX_COLUMN_ID_KEY) == str(max_id):
        return metadata
    return metadata.with_changes(
        schema_string=schema_to_string(assigned),
        configuration=dict(metadata.configuration) | {MAX_COLUMN_ID_KEY: str(max_id)},
    )
