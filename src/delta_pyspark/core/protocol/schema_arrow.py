"""Delta types as the Arrow types data files hold, and back (PROTOCOL.md, "Delta Data
Type to Parquet Type Mappings"): the writer's file schema, footer statistics and
CONVERT's inference of a table schema from Parquet files all use this one mapping."""

from __future__ import annotations

import pyarrow as pa

from delta_pyspark.core.protocol.schema import (
    BINARY,
    BOOLEAN,
    BYTE,
    COLUMN_MAPPING_ID_KEY,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONG,
    PARQUET_FIELD_ID_KEY,
    SHORT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    VOID,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)
from delta_pyspark.exceptions import DeltaAnalysisException

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
