"""Delta schema <-> Spark types. Delta's schema JSON is Spark's, so conversion is
a JSON round trip; column metadata (column mapping ids, invariants) rides along."""

from __future__ import annotations

from typing import Any

from delta_pyspark.core.protocol import identity_columns as identity
from delta_pyspark.core.protocol.generated_columns import GENERATION_EXPRESSION_KEY
from delta_pyspark.core.protocol.schema import DataType, StructField, StructType


def to_spark_type(dt: DataType) -> Any:
    from pyspark.sql.types import StructType as SparkStruct
    from pyspark.sql.types import _parse_datatype_json_value

    if isinstance(dt, StructType):
        return SparkStruct.fromJson(dt.to_json())
    type_json = StructType((StructField("x", dt),)).to_json()["fields"][0]["type"]
    return _parse_datatype_json_value(type_json)


def from_spark_schema(schema: Any) -> StructType:
    return StructType.from_json(schema.jsonValue())


# Spark's parser's column metadata for GENERATED ALWAYS AS (expr) and GENERATED ... AS
# IDENTITY (for its V2 catalogs), and the Delta keys each becomes
_SPARK_COLUMN_KEYS = {
    "GENERATION_EXPRESSION": GENERATION_EXPRESSION_KEY,
    "identity.start": identity.START,
    "identity.step": identity.STEP,
    "identity.allowExplicitInsert": identity.ALLOW_EXPLICIT_INSERT,
}


def with_delta_keys(schema_json: dict[str, Any]) -> dict[str, Any]:
    """A schema (JSON) Spark's parser made of column definitions, its generated and identity
    columns marked with Delta's metadata keys instead of Spark's."""
    fields = []
    for f in schema_json.get("fields", []):
        metadata = dict(f.get("metadata") or {})
        for spark_key, delta_key in _SPARK_COLUMN_KEYS.items():
            if spark_key in metadata:
                metadata[delta_key] = metadata.pop(spark_key)
        fields.append({**f, "metadata": metadata})
    return {**schema_json, "fields": fields}


def relaxed(spark_type: Any) -> Any:
    """``spark_type`` with every nested field, array element and map value nullable.

    Casting incoming data to a struct with a NOT NULL field fails in Spark's analyzer
    even when no value is null; nullability is enforced row by row instead, by the
    write's constraint check.
    """
    from pyspark.sql.types import ArrayType, MapType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    if isinstance(spark_type, SparkStruct):
        return SparkStruct(
            [SparkField(f.name, relaxed(f.dataType), True, f.metadata) for f in spark_type.fields]
        )
    if isinstance(spark_type, ArrayType):
        return ArrayType(relaxed(spark_type.elementType), True)
    if isinstance(spark_type, MapType):
        return MapType(relaxed(spark_type.keyType), relaxed(spark_type.valueType), True)
    return spark_type
