"""Delta table schemas: the types, their JSON form, Arrow mapping and evolution rules.

A Delta schema is serialised in ``metaData.schemaString`` with Spark's JSON schema
layout (PROTOCOL.md, "Schema Serialization Format"). The types here are immutable
values so snapshots can share and compare them freely; the Arrow mapping is the
one data files use (PROTOCOL.md, "Delta Data Type to Parquet Type Mappings").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import pyarrow as pa

from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaAnalysisException,
    SchemaMismatchError,
    UnsupportedTableFeatureError,
)

__all__ = [
    "BINARY",
    "BOOLEAN",
    "BYTE",
    "DATE",
    "DOUBLE",
    "FLOAT",
    "INTEGER",
    "LONG",
    "SHORT",
    "STRING",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "VARIANT",
    "VOID",
    "ArrayType",
    "DataType",
    "DecimalType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "check_write_compatible",
    "data_type_from_json",
    "data_type_to_json",
    "from_arrow_schema",
    "from_arrow_type",
    "is_type_widening_supported",
    "is_variant_struct",
    "merge_schemas",
    "parse_schema_string",
    "schema_to_string",
    "schema_tree_string",
    "to_arrow_schema",
    "to_arrow_type",
    "type_name",
]

PRIMITIVE_NAMES = frozenset(
    {
        "string", "long", "integer", "short", "byte", "float", "double", "boolean",
        "binary", "date", "timestamp", "timestamp_ntz", "variant",
        # Spark's NullType: the spec says existing tables may hold such columns.
        "void",
    }
)  # fmt: skip

COLUMN_MAPPING_ID_KEY = "delta.columnMapping.id"
TYPE_CHANGES_KEY = "delta.typeChanges"
PARQUET_FIELD_ID_KEY = b"PARQUET:field_id"


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A non-nested type named as in the schema JSON (``long``, ``timestamp_ntz``...)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in PRIMITIVE_NAMES:
            raise ValueError(f"unknown primitive type {self.name!r}")


@dataclass(frozen=True, slots=True)
class DecimalType:
    """Fixed precision decimal; precision 1..38 and 0 <= scale <= precision."""

    precision: int
    scale: int

    def __post_init__(self) -> None:
        if not (1 <= self.precision <= 38 and 0 <= self.scale <= self.precision):
            raise ValueError(f"invalid decimal({self.precision},{self.scale})")


@dataclass(frozen=True, slots=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True


@dataclass(frozen=True, slots=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True


@dataclass(frozen=True, slots=True)
class StructField:
    """A column. ``metadata`` takes part in equality but not in the hash (dicts are
    unhashable, and two fields differing only in metadata are rare in a set)."""

    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": data_type_to_json(self.type),
            "nullable": self.nullable,
            "metadata": self.metadata,
        }


@dataclass(frozen=True, slots=True)
class StructType:
    """An ordered tuple of fields: the table schema or a struct column's type."""

    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        """The field with exactly this name (KeyError otherwise)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def find_field(self, name: str, case_sensitive: bool = False) -> StructField | None:
        """Look a column up the way Spark resolves names (case-insensitive by default)."""
        for f in self.fields:
            if f.name == name:
                return f
        if not case_sensitive:
            lowered = name.lower()
            for f in self.fields:
                if f.name.lower() == lowered:
                    return f
        return None

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> StructType:
        dt = data_type_from_json(obj)
        if not isinstance(dt, StructType):
            raise CorruptLogError(f"schema must be a struct, got {type_name(dt)}")
        return dt


DataType: TypeAlias = PrimitiveType | DecimalType | ArrayType | MapType | StructType

STRING = PrimitiveType("string")
LONG = PrimitiveType("long")
INTEGER = PrimitiveType("integer")
SHORT = PrimitiveType("short")
BYTE = PrimitiveType("byte")
FLOAT = PrimitiveType("float")
DOUBLE = PrimitiveType("double")
BOOLEAN = PrimitiveType("boolean")
BINARY = PrimitiveType("binary")
DATE = PrimitiveType("date")
TIMESTAMP = PrimitiveType("timestamp")
TIMESTAMP_NTZ = PrimitiveType("timestamp_ntz")
VARIANT = PrimitiveType("variant")
VOID = PrimitiveType("void")

# ---------------------------------------------------------------------------- JSON

_DECIMAL_RE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
# Types newer than this implementation, each gated by a reader feature.
_FEATURE_GATED = (("geometry", "geospatial"), ("geography", "geospatial"))


def type_name(dt: DataType) -> str:
    """The type's name as the schema JSON and Spark's tree string spell it."""
    if isinstance(dt, PrimitiveType):
        return dt.name
    if isinstance(dt, DecimalType):
        return f"decimal({dt.precision},{dt.scale})"
    if isinstance(dt, ArrayType):
        return "array"
    if isinstance(dt, MapType):
        return "map"
    return "struct"


def data_type_to_json(dt: DataType) -> Any:
    """Spark's JSON value for a type: a string for primitives, an object otherwise."""
    if isinstance(dt, PrimitiveType | DecimalType):
        return type_name(dt)
    if isinstance(dt, ArrayType):
        return {
            "type": "array",
            "elementType": data_type_to_json(dt.element_type),
            "containsNull": dt.contains_null,
        }
    if isinstance(dt, MapType):
        return {
            "type": "map",
            "keyType": data_type_to_json(dt.key_type),
            "valueType": data_type_to_json(dt.value_type),
            "valueContainsNull": dt.value_contains_null,
        }
    if isinstance(dt, StructType):
        return dt.to_json()
    raise TypeError(f"not a Delta data type: {dt!r}")


def _primitive_from_name(name: str) -> DataType:
    if name in PRIMITIVE_NAMES:
        return PrimitiveType(name)
    if name == "null":  # older spelling of Spark's NullType
        return VOID
    if name == "decimal":  # Spark's DecimalType.USER_DEFAULT
        return DecimalType(10, 0)
    m = _DECIMAL_RE.fullmatch(name)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        try:
            return DecimalType(precision, scale)
        except ValueError:
            raise CorruptLogError(f"invalid decimal type {name!r} in schema") from None
    for prefix, feature in _FEATURE_GATED:
        if name.startswith(prefix):
            raise UnsupportedTableFeatureError(
                f"data type {name!r} needs table feature {feature!r}, which is not supported",
                [feature],
            )
    if name.startswith("string collate"):
        raise UnsupportedTableFeatureError(
            f"collated string type {name!r} is not supported", ["collations"]
        )
    raise CorruptLogError(f"unknown data type {name!r} in schema")


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in obj:
        raise CorruptLogError(f"{what} lacks required key {key!r}: {json.dumps(obj)[:200]}")
    value = obj[key]
    if not isinstance(value, kind):
        raise CorruptLogError(f"{what} has a bad {key!r}: {value!r}")
    return value


def data_type_from_json(obj: Any) -> DataType:
    """Parse a type from its Spark JSON value; CorruptLogError names what is wrong."""
    if isinstance(obj, str):
        return _primitive_from_name(obj)
    if not isinstance(obj, Mapping):
        raise CorruptLogError(f"a data type must be a string or an object, got {obj!r}")
    kind = obj.get("type")
    if kind == "struct":
        raw_fields = _require(obj, "fields", list, "struct type")
        fields = tuple(_field_from_json(f) for f in raw_fields)
        seen: dict[str, str] = {}
        for f in fields:
            if f.name.lower() in seen:
                raise CorruptLogError(
                    f"duplicate column names {seen[f.name.lower()]!r} and {f.name!r} in schema "
                    "(names must be unique regardless of case)"
                )
            seen[f.name.lower()] = f.name
        return StructType(fields)
    if kind == "array":
        return ArrayType(
            data_type_from_json(_require(obj, "elementType", (str, Mapping), "array type")),
            _require(obj, "containsNull", bool, "array type"),
        )
    if kind == "map":
        return MapType(
            data_type_from_json(_require(obj, "keyType", (str, Mapping), "map type")),
            data_type_from_json(_require(obj, "valueType", (str, Mapping), "map type")),
            _require(obj, "valueContainsNull", bool, "map type"),
        )
    if isinstance(kind, str) and len(obj) == 1:  # e.g. {"type": "variant"} (spec example)
        return _primitive_from_name(kind)
    raise CorruptLogError(f"unknown data type {json.dumps(obj)[:200]} in schema")


def _field_from_json(obj: Any) -> StructField:
    if not isinstance(obj, Mapping):
        raise CorruptLogError(f"a struct field must be an object, got {obj!r}")
    name = _require(obj, "name", str, "struct field")
    what = f"struct field {name!r}"
    dt = data_type_from_json(_require(obj, "type", (str, Mapping), what))
    nullable = _require(obj, "nullable", bool, what)
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        raise CorruptLogError(f"{what} has a non-object metadata: {metadata!r}")
    return StructField(name, dt, nullable, metadata)


def parse_schema_string(s: str) -> StructType:
    """Parse ``metaData.schemaString``; malformed input raises CorruptLogError."""
    try:
        obj = json.loads(s)
    except (TypeError, ValueError) as e:
        raise CorruptLogError(f"schemaString is not valid JSON: {e}") from None
    except RecursionError:
        raise CorruptLogError("schemaString is nested too deeply to read") from None
    if not isinstance(obj, Mapping) or obj.get("type") != "struct":
        raise CorruptLogError(f"schemaString must be a struct type, got {str(s)[:200]!r}")
    try:
        return StructType.from_json(obj)
    except RecursionError:
        raise CorruptLogError("schemaString is nested too deeply to read") from None


def schema_to_string(schema: StructType) -> str:
    """Compact JSON with Spark's key order, so logs we write look like delta-spark's."""
    return json.dumps(schema.to_json(), separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- Arrow

_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
    # Unshredded variant in Parquet: struct of the two binaries, in the field order
    # delta-spark writes (PROTOCOL.md, "Variant data in Parquet").
    "variant": pa.struct(
        [
            pa.field("value", pa.binary(), nullable=False),
            pa.field("metadata", pa.binary(), nullable=False),
        ]
    ),
}


def to_arrow_type(dt: DataType) -> pa.DataType:
    """The Arrow type data files hold for a Delta type."""
    if isinstance(dt, PrimitiveType):
        return _TO_ARROW[dt.name]
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, ArrayType):
        return pa.list_(pa.field("element", to_arrow_type(dt.element_type), dt.contains_null))
    if isinstance(dt, MapType):
        return pa.map_(
            pa.field("key", to_arrow_type(dt.key_type), nullable=False),
            pa.field("value", to_arrow_type(dt.value_type), dt.value_contains_null),
        )
    if isinstance(dt, StructType):
        return pa.struct([to_arrow_field(f) for f in dt.fields])
    raise TypeError(f"not a Delta data type: {dt!r}")


def to_arrow_field(f: StructField) -> pa.Field:
    """An Arrow field; a column mapping id becomes the Parquet field id (pyarrow writes
    ``PARQUET:field_id`` field metadata as the Thrift ``field_id``)."""
    metadata = None
    field_id = f.metadata.get(COLUMN_MAPPING_ID_KEY)
    if isinstance(field_id, int) and not isinstance(field_id, bool):
        metadata = {PARQUET_FIELD_ID_KEY: str(field_id).encode()}
    return pa.field(f.name, to_arrow_type(f.type), f.nullable, metadata=metadata)


def to_arrow_schema(schema: StructType) -> pa.Schema:
    return pa.schema([to_arrow_field(f) for f in schema.fields])


def is_variant_struct(t: pa.StructType) -> bool:
    """Unshredded variant layout: exactly binaries ``value`` and ``metadata``, both required
    (either order: Spark writes value first, the Parquet spec lists metadata first)."""
    if t.num_fields != 2:
        return False
    by_name = {t.field(i).name: t.field(i) for i in range(2)}
    return set(by_name) == {"value", "metadata"} and all(
        pa.types.is_binary(f.type) and not f.nullable for f in by_name.values()
    )


def from_arrow_type(t: pa.DataType) -> DataType:
    """The Delta type for an Arrow type; types Delta cannot store raise
    DeltaAnalysisException (unsigned integers, float16, durations, ...)."""
    types = pa.types
    simple = (
        (types.is_int8, BYTE), (types.is_int16, SHORT), (types.is_int32, INTEGER),
        (types.is_int64, LONG), (types.is_float32, FLOAT), (types.is_float64, DOUBLE),
        (types.is_boolean, BOOLEAN), (types.is_date, DATE), (types.is_null, VOID),
    )  # fmt: skip
    for check, dt in simple:
        if check(t):
            return dt
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return STRING
    if (
        types.is_binary(t)
        or types.is_large_binary(t)
        or types.is_binary_view(t)
        or types.is_fixed_size_binary(t)
    ) and not types.is_decimal(t):
        return BINARY
    if types.is_timestamp(t):
        return TIMESTAMP if t.tz is not None else TIMESTAMP_NTZ
    if types.is_decimal(t):
        if t.precision > 38:
            raise DeltaAnalysisException(f"{t} exceeds Delta's maximum decimal precision 38")
        return DecimalType(t.precision, t.scale)
    if types.is_map(t):
        return MapType(
            from_arrow_type(t.key_type), from_arrow_type(t.item_type), t.item_field.nullable
        )
    if (
        types.is_list(t)
        or types.is_large_list(t)
        or types.is_fixed_size_list(t)
        or types.is_list_view(t)
        or types.is_large_list_view(t)
    ):
        return ArrayType(from_arrow_type(t.value_type), t.value_field.nullable)
    if types.is_struct(t):
        if is_variant_struct(t):
            return VARIANT
        return StructType(tuple(_from_arrow_field(t.field(i)) for i in range(t.num_fields)))
    if types.is_dictionary(t):
        return from_arrow_type(t.value_type)
    if isinstance(t, pa.ExtensionType):
        return from_arrow_type(t.storage_type)
    raise DeltaAnalysisException(f"Arrow type {t} has no Delta equivalent")


def _from_arrow_field(f: pa.Field) -> StructField:
    return StructField(f.name, from_arrow_type(f.type), f.nullable, {})


def from_arrow_schema(schema: pa.Schema) -> StructType:
    return StructType(tuple(_from_arrow_field(f) for f in schema))


# ---------------------------------------------------------------------- tree string


def schema_tree_string(schema: StructType) -> str:
    """Spark's ``printTreeString`` layout, for error messages people already know."""
    lines = ["root"]
    _tree(schema, " |", lines)
    return "\n".join(lines)


def _tree(dt: DataType, prefix: str, lines: list[str]) -> None:
    if isinstance(dt, StructType):
        for f in dt.fields:
            lines.append(f"{prefix}-- {f.name}: {type_name(f.type)} (nullable = {_b(f.nullable)})")
            _tree(f.type, prefix + "    |", lines)
    elif isinstance(dt, ArrayType):
        lines.append(
            f"{prefix}-- element: {type_name(dt.element_type)} "
            f"(containsNull = {_b(dt.contains_null)})"
        )
        _tree(dt.element_type, prefix + "    |", lines)
    elif isinstance(dt, MapType):
        lines.append(f"{prefix}-- key: {type_name(dt.key_type)}")
        _tree(dt.key_type, prefix + "    |", lines)
        lines.append(
            f"{prefix}-- value: {type_name(dt.value_type)} "
            f"(valueContainsNull = {_b(dt.value_contains_null)})"
        )
        _tree(dt.value_type, prefix + "    |", lines)


def _b(flag: bool) -> str:
    return "true" if flag else "false"


# ------------------------------------------------------------------ type widening

_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
# Integral types in Parquet INT32: delta-spark lets data of a narrower one be written
# into a wider column without any table feature.
_INT32_FAMILY = frozenset({"byte", "short", "integer"})


def _name(dt: DataType) -> str | None:
    return dt.name if isinstance(dt, PrimitiveType) else None


def is_type_widening_supported(
    from_type: DataType, to_type: DataType, automatic: bool = False
) -> bool:
    """Whether PROTOCOL.md's "Type Widening" allows changing ``from_type`` to ``to_type``.

    ``automatic=True`` narrows this to the changes delta-spark applies on its own during
    schema evolution: integer to decimal or double must be requested explicitly (ALTER),
    so that integers are not silently promoted.
    """
    src, dst = _name(from_type), _name(to_type)
    if src in _INTEGRAL_RANK and dst in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[src] < _INTEGRAL_RANK[dst]
    if src == "float" and dst == "double":
        return True
    if src == "date" and dst == "timestamp_ntz":
        return True
    if isinstance(from_type, DecimalType) and isinstance(to_type, DecimalType):
        k1 = to_type.precision - from_type.precision
        k2 = to_type.scale - from_type.scale
        return k1 >= k2 >= 0 and (k1, k2) != (0, 0)
    if automatic:
        return False
    if src in _INT32_FAMILY and dst == "double":
        return True
    if src in _INTEGRAL_RANK and isinstance(to_type, DecimalType):
        digits = 20 if src == "long" else 10
        return to_type.precision - to_type.scale >= digits
    return False


# ------------------------------------------------------------------ schema merging


def _path(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _as_nullable(dt: DataType) -> DataType:
    """What delta-spark's ``asNullable`` does to data written with schema evolution:
    files written before a column existed hold nulls for it."""
    if isinstance(dt, StructType):
        return StructType(
            tuple(StructField(f.name, _as_nullable(f.type), True, f.metadata) for f in dt.fields)
        )
    if isinstance(dt, ArrayType):
        return ArrayType(_as_nullable(dt.element_type), True)
    if isinstance(dt, MapType):
        return MapType(_as_nullable(dt.key_type), _as_nullable(dt.value_type), True)
    return dt


def merge_schemas(
    table: StructType, data: StructType, allow_type_widening: bool = True
) -> StructType:
    """The table schema evolved to accept ``data`` (the ``mergeSchema`` write option).

    Columns are matched case-insensitively and keep the table's spelling, nullability and
    metadata; new columns (also nested struct fields) are appended, nullable. A data type
    the table type can hold losslessly keeps the table type (the writer casts). A wider
    data type widens the column if ``allow_type_widening`` and delta-spark would apply
    that change automatically; the change is recorded under ``delta.typeChanges`` as the
    spec requires. Any other difference raises SchemaMismatchError.
    """
    return _merge_struct(table, data, "", allow_type_widening)


def _merge_struct(table: StructType, data: StructType, parent: str, widen: bool) -> StructType:
    by_name = {f.name.lower(): f for f in data.fields}
    if len(by_name) != len(data.fields):
        names = ", ".join(repr(_path(parent, f.name)) for f in data.fields)
        raise SchemaMismatchError(f"data has column names that differ only in case: {names}")
    out: list[StructField] = []
    for tf in table.fields:
        df = by_name.pop(tf.name.lower(), None)
        if df is None:
            out.append(tf)
            continue
        path = _path(parent, tf.name)
        changes: list[dict[str, str]] = []
        new_type = _merge_type(tf.type, df.type, path, "", widen, changes)
        metadata = tf.metadata
        if changes:
            metadata = dict(tf.metadata)
            history = metadata.get(TYPE_CHANGES_KEY)
            metadata[TYPE_CHANGES_KEY] = [*(history if isinstance(history, list) else []), *changes]
        out.append(StructField(tf.name, new_type, tf.nullable, metadata))
    for df in data.fields:
        if df.name.lower() in by_name:
            out.append(StructField(df.name, _as_nullable(df.type), True, df.metadata))
    return StructType(tuple(out))


def _merge_type(
    current: DataType,
    update: DataType,
    path: str,
    field_path: str,
    widen: bool,
    changes: list[dict[str, str]],
) -> DataType:
    """Merge one type; ``field_path`` is the spec's ``fieldPath`` below the nearest field."""
    if isinstance(current, StructType) and isinstance(update, StructType):
        return _merge_struct(current, update, path, widen)

    def child(part: str, cur: DataType, upd: DataType) -> DataType:
        return _merge_type(cur, upd, f"{path}.{part}", _path(field_path, part), widen, changes)

    if isinstance(current, ArrayType) and isinstance(update, ArrayType):
        element = child("element", current.element_type, update.element_type)
        return ArrayType(element, current.contains_null)
    if isinstance(current, MapType) and isinstance(update, MapType):
        key = child("key", current.key_type, update.key_type)
        value = child("value", current.value_type, update.value_type)
        return MapType(key, value, current.value_contains_null)
    if current == update or update == VOID:
        return current
    if current == VOID:
        return update
    if is_type_widening_supported(update, current):
        return current  # data narrower than the column: the writer casts it up
    if widen and is_type_widening_supported(current, update, automatic=True):
        change = {"fromType": type_name(current), "toType": type_name(update)}
        if field_path:
            change["fieldPath"] = field_path
        changes.append(change)
        return update
    hint = ""
    if is_type_widening_supported(current, update):
        hint = (
            " (a supported widening, but not one applied automatically: "
            "change the column type explicitly)"
            if widen
            else " (enable type widening on the table with delta.enableTypeWidening=true)"
        )
    raise SchemaMismatchError(
        f"Failed to merge incompatible data types for column {path!r}: "
        f"table has {_type_repr(current)}, data has {_type_repr(update)}{hint}"
    )


def _type_repr(dt: DataType) -> str:
    if isinstance(dt, PrimitiveType | DecimalType):
        return type_name(dt)
    return json.dumps(data_type_to_json(dt), separators=(",", ":"))


# -------------------------------------------------------------- write enforcement


def check_write_compatible(table: StructType, data: StructType) -> None:
    """Schema enforcement for writes without schema evolution.

    Data may lack nullable columns (they are written as null) and may carry an integer
    narrower than the column within Parquet's INT32 family (byte/short into integer) or
    a void column, as delta-spark allows; everything else must match the table exactly.
    """
    problems: list[str] = []
    _check_struct(table, data, "", problems)
    if not problems:
        return
    listing = "\n".join(f"- {p}" for p in problems)
    raise SchemaMismatchError(
        "A schema mismatch detected when writing to the Delta table.\n"
        f"{listing}\n\n"
        "To enable schema migration (add columns, widen types), set "
        '\'.option("mergeSchema", "true")\' on the write '
        "(or spark.databricks.delta.schema.autoMerge.enabled=true).\n"
        "To replace the table schema or partitioning with mode('overwrite'), set "
        '\'.option("overwriteSchema", "true")\'.\n\n'
        f"Table schema:\n{schema_tree_string(table)}\n\n"
        f"Data schema:\n{schema_tree_string(data)}"
    )


def _check_struct(table: StructType, data: StructType, parent: str, problems: list[str]) -> None:
    exact = {f.name: f for f in table.fields}
    folded = {f.name.lower(): f for f in table.fields}
    seen: set[str] = set()
    for df in data.fields:
        path = _path(parent, df.name)
        tf = exact.get(df.name)
        if tf is None:
            other = folded.get(df.name.lower())
            if other is not None:
                seen.add(other.name)
                problems.append(
                    f"column {path!r} differs only in case from table column "
                    f"{_path(parent, other.name)!r}"
                )
            else:
                problems.append(f"column {path!r} ({type_name(df.type)}) is not in the table")
            continue
        seen.add(tf.name)
        _check_type(tf.type, df.type, path, problems)
    for tf in table.fields:
        if tf.name not in seen and not tf.nullable:
            problems.append(
                f"non-nullable column {_path(parent, tf.name)!r} is missing from the data"
            )


def _int32_upcast(from_type: DataType, to_type: DataType) -> bool:
    src, dst = _name(from_type), _name(to_type)
    return (
        src in _INT32_FAMILY and dst in _INT32_FAMILY and _INTEGRAL_RANK[src] < _INTEGRAL_RANK[dst]
    )


def _check_type(current: DataType, update: DataType, path: str, problems: list[str]) -> None:
    if isinstance(current, StructType) and isinstance(update, StructType):
        _check_struct(current, update, path, problems)
    elif isinstance(current, ArrayType) and isinstance(update, ArrayType):
        _check_type(current.element_type, update.element_type, path + ".element", problems)
    elif isinstance(current, MapType) and isinstance(update, MapType):
        _check_type(current.key_type, update.key_type, path + ".key", problems)
        _check_type(current.value_type, update.value_type, path + ".value", problems)
    elif not (current == update or update == VOID or _int32_upcast(update, current)):
        problems.append(
            f"column {path!r} has type {_type_repr(update)} in the data "
            f"but {_type_repr(current)} in the table"
        )
