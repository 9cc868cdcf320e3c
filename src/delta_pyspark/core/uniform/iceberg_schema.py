"""A Delta table's schema, partitioning, partition values and statistics in Iceberg's terms.

Iceberg identifies columns by id, so the ids come from column mapping
(``delta.columnMapping.id``) and are the Parquet field ids our writes put in the data files:
Iceberg readers then find every column whatever its logical or physical name. Partitioning
is identity on each partition column. Statistics become Iceberg bounds only where they are
exact bounds: Delta keeps timestamps to the millisecond and cuts long strings, so a
timestamp's upper bound is widened to the end of its millisecond and a string that may
have been cut has no upper bound (an upper bound below a real value would make Iceberg
readers skip rows).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pyiceberg import types as it
from pyiceberg.conversions import to_bytes
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.name_mapping import MappedField, NameMapping
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record

from delta_pyspark.core.protocol.column_mapping import COLUMN_MAPPING_ID_KEY, physical_name
from delta_pyspark.core.protocol.partition_values import parse_partition_value
from delta_pyspark.core.protocol.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructField,
    StructType,
)
from delta_pyspark.core.stats.layout import STRING_PREFIX_LENGTH

#: Iceberg's first partition field id (its spec reserves the ids below for columns)
FIRST_PARTITION_FIELD_ID = 1000

_PRIMITIVES: dict[str, it.PrimitiveType] = {
    "boolean": it.BooleanType(),
    "byte": it.IntegerType(),
    "short": it.IntegerType(),
    "integer": it.IntegerType(),
    "long": it.LongType(),
    "float": it.FloatType(),
    "double": it.DoubleType(),
    "string": it.StringType(),
    "binary": it.BinaryType(),
    "date": it.DateType(),
    "timestamp": it.TimestamptzType(),
    "timestamp_ntz": it.TimestampType(),
}

#: the primitive types IcebergCompatV2 allows (PROTOCOL.md "Iceberg Compatibility V2")
ALLOWED_PRIMITIVES = frozenset(_PRIMITIVES)


def field_id(field: StructField) -> int:
    """The column mapping id a field must have on an IcebergCompat table."""
    value = field.metadata.get(COLUMN_MAPPING_ID_KEY)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"column {field.name!r} has no column mapping id")
    return value


def iceberg_type(dtype: DataType) -> it.IcebergType:
    """The Iceberg type of a Delta type (primitives, decimals and structs: the compat check
    refuses the rest before any table gets here)."""
    if isinstance(dtype, PrimitiveType):
        return _PRIMITIVES[dtype.name]
    if isinstance(dtype, DecimalType):
        return it.DecimalType(dtype.precision, dtype.scale)
    if isinstance(dtype, StructType):
        return it.StructType(*(_nested_field(f) for f in dtype.fields))
    raise ValueError(f"no Iceberg type for {dtype!r}")


def _nested_field(f: StructField) -> it.NestedField:
    return it.NestedField(field_id(f), f.name, iceberg_type(f.type), required=not f.nullable)


def iceberg_schema(schema: StructType, schema_id: int) -> Schema:
    """The table's schema, logical names, column mapping ids as field ids."""
    return Schema(*(_nested_field(f) for f in schema.fields), schema_id=schema_id)


def name_mapping(schema: StructType, mode: str) -> NameMapping:
    """Physical name to field id, for readers of data files written without field ids
    (files that predate IcebergCompatV2 on the table)."""

    def mapped(fields: tuple[StructField, ...]) -> list[MappedField]:
        out = []
        for f in fields:
            nested = mapped(f.type.fields) if isinstance(f.type, StructType) else []
            names = [physical_name(f, mode)]
            out.append(MappedField(field_id=field_id(f), names=names, fields=nested))
        return out

    return NameMapping(mapped(schema.fields))


def partition_spec(schema: StructType, partition_columns: list[str], spec_id: int) -> PartitionSpec:
    """Identity partitioning on each partition column, in the table's order."""
    fields = [
        PartitionField(
            source_id=field_id(schema.field(name)),
            field_id=FIRST_PARTITION_FIELD_ID + i,
            transform=IdentityTransform(),
            name=name,
        )
        for i, name in enumerate(partition_columns)
    ]
    return PartitionSpec(*fields, spec_id=spec_id)


def partition_record(
    schema: StructType, partition_columns: list[str], mode: str, values: Mapping[str, Any]
) -> Record:
    """An add's partition values (strings keyed by physical name) as Iceberg values."""
    out = []
    for name in partition_columns:
        f = schema.field(name)
        out.append(
            _iceberg_value(parse_partition_value(values.get(physical_name(f, mode)), f.type))
        )
    return Record(*out)


def _iceberg_value(value: Any) -> Any:
    """Python values as pyiceberg's partition records hold them (dates as days, timestamps as
    microseconds since the epoch)."""
    if isinstance(value, dt.datetime):
        epoch = dt.datetime(1970, 1, 1, tzinfo=value.tzinfo)
        return (value - epoch) // dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return value


def file_metrics(
    schema: StructType, mode: str, stats_json: str | None
) -> tuple[int, dict[str, dict[int, Any]]]:
    """``(numRecords, {"null_value_counts"|"lower_bounds"|"upper_bounds": {id: value}})``
    from an add's stats (IcebergCompatV2 requires every add to have ``numRecords``)."""
    stats = json.loads(stats_json) if stats_json else {}
    metrics: dict[str, dict[int, Any]] = {
        "null_value_counts": {},
        "lower_bounds": {},
        "upper_bounds": {},
    }
    _leaf_metrics(
        schema.fields,
        mode,
        stats.get("nullCount") or {},
        stats.get("minValues") or {},
        stats.get("maxValues") or {},
        metrics,
    )
    return int(stats["numRecords"]), metrics


def _leaf_metrics(
    fields: tuple[StructField, ...],
    mode: str,
    nulls: Mapping[str, Any],
    lows: Mapping[str, Any],
    highs: Mapping[str, Any],
    out: dict[str, dict[int, Any]],
) -> None:
    for f in fields:
        key = physical_name(f, mode)
        if isinstance(f.type, StructType):
            _leaf_metrics(
                f.type.fields,
                mode,
                _sub(nulls, key),
                _sub(lows, key),
                _sub(highs, key),
                out,
            )
            continue
        fid = field_id(f)
        if isinstance(nulls.get(key), int):
            out["null_value_counts"][fid] = nulls[key]
        low = _bound(f.type, lows.get(key), upper=False)
        high = _bound(f.type, highs.get(key), upper=True)
        if low is not None:
            out["lower_bounds"][fid] = low
        if high is not None:
            out["upper_bounds"][fid] = high


def _sub(stats: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = stats.get(key)
    return value if isinstance(value, Mapping) else {}


def _bound(dtype: DataType, value: Any, upper: bool) -> bytes | None:
    """A Delta min/max as an Iceberg bound's bytes; None where it is not an exact bound."""
    if value is None or isinstance(value, Mapping | list):
        return None
    try:
        if isinstance(dtype, DecimalType):
            return to_bytes(it.DecimalType(dtype.precision, dtype.scale), Decimal(str(value)))
        if not isinstance(dtype, PrimitiveType):
            return None
        name = dtype.name
        if name in ("byte", "short", "integer", "long", "boolean"):
            return to_bytes(_PRIMITIVES[name], value)
        if name in ("float", "double") and isinstance(value, int | float):
            return to_bytes(_PRIMITIVES[name], float(value))
        if name == "string" and isinstance(value, str):
            # a string at the prefix length may have been cut (and given a tie-breaker)
            if upper and len(value) >= STRING_PREFIX_LENGTH:
                return None
            return to_bytes(it.StringType(), value)
        if name == "date":
            return to_bytes(it.DateType(), _iceberg_value(dt.date.fromisoformat(value)))
        if name in ("timestamp", "timestamp_ntz"):
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if name == "timestamp" and moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
            micros = _iceberg_value(moment)
            if upper:  # Delta keeps milliseconds: the real maximum may be 999 µs later
                micros += 999
            return to_bytes(_PRIMITIVES[name], micros)
    except (TypeError, ValueError, ArithmeticError):
        return None
    return None
