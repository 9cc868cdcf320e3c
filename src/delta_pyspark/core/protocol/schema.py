"""Delta table schemas: the types and their JSON form (the Arrow mapping is in
``schema_arrow``, the evolution rules in ``schema_evolution``).

A Delta schema is serialised in ``metaData.schemaString`` with Spark's JSON schema
layout (PROTOCOL.md, "Schema Serialization Format"). The types here are immutable
values so snapshots can share and compare them freely.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from delta_pyspark.exceptions import (
    CorruptLogError,
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
    "data_type_from_json",
    "data_type_to_json",
    "map_fields",
    "parse_schema_string",
    "schema_to_string",
    "schema_tree_string",
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


def map_fields(dt: DataType, fn: Callable[[StructField], StructField]) -> DataType:
    """``dt`` with ``fn`` applied to every struct field, nested ones included (in structs,
    arrays and maps); ``fn`` sees each field with its own type already mapped."""
    if isinstance(dt, StructType):
        return StructType(
            tuple(
                fn(StructField(f.name, map_fields(f.type, fn), f.nullable, f.metadata))
                for f in dt.fields
            )
        )
    if isinstance(dt, ArrayType):
        return ArrayType(map_fields(dt.element_type, fn), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(
            map_fields(dt.key_type, fn), map_fields(dt.value_type, fn), dt.value_contains_null
        )
    return dt


#: field metadata that only writers use (generated and identity columns, column mapping,
#: type changes): a read's schema leaves it out, as delta-spark's does, so a DataFrame read
#: from a table compares equal to the schema its user declared and written elsewhere makes
#: no generated or identity column there
_WRITER_ONLY_METADATA = (
    "delta.generationExpression",
    "delta.identity.",
    "delta.columnMapping.",
    "delta.typeChanges",
)


def read_schema(schema: StructType) -> StructType:
    """``schema`` as a read of the table shows it: without writer-only field metadata."""

    def clean(field: StructField) -> StructField:
        kept = {k: v for k, v in field.metadata.items() if not k.startswith(_WRITER_ONLY_METADATA)}
        if len(kept) == len(field.metadata):
            return field
        return StructField(field.name, field.type, field.nullable, kept)

    mapped = map_fields(schema, clean)
    assert isinstance(mapped, StructType)
    return mapped


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
