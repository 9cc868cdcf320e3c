"""Delta schema <-> Spark types. Delta's schema JSON is Spark's, so conversion is
a JSON round trip; column metadata (column mapping ids, invariants) rides along."""

from __future__ import annotations

from typing import Any

from delta_pyspark.core.schema import DataType, StructField, StructType


def to_spark_type(dt: DataType) -> Any:
    from pyspark.sql.types import StructType as SparkStruct
    from pyspark.sql.types import _parse_datatype_json_value

    if isinstance(dt, StructType):
        return SparkStruct.fromJson(dt.to_json())
    type_json = StructType((StructField("x", dt),)).to_json()["fields"][0]["type"]
    return _parse_datatype_json_value(type_json)


def from_spark_schema(schema: Any) -> StructType:
    return StructType.from_json(schema.jsonValue())
