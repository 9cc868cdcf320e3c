"""Type changes recorded in a schema (PROTOCOL.md "Type Widening", "Type Change Metadata").

A widened column carries ``delta.typeChanges`` in the metadata of its nearest struct field;
files written before the change still hold the narrower type. Readers convert those values,
and dropping the feature rewrites such files and removes the metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from delta_pyspark.core.protocol.schema import (
    TYPE_CHANGES_KEY,
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    map_fields,
)

_INTEGRAL = frozenset({"byte", "short", "integer", "long"})


def _fields(dt: DataType) -> Iterator[StructField]:
    """Every struct field in ``dt``, nested ones too (in arrays and maps)."""
    if isinstance(dt, StructType):
        for f in dt.fields:
            yield f
            yield from _fields(f.type)
    elif isinstance(dt, ArrayType):
        yield from _fields(dt.element_type)
    elif isinstance(dt, MapType):
        yield from _fields(dt.key_type)
        yield from _fields(dt.value_type)


def type_changes(schema: StructType) -> list[dict[str, Any]]:
    """Every recorded type change of the schema (the entries of all ``delta.typeChanges``)."""
    out: list[dict[str, Any]] = []
    for f in _fields(schema):
        changes = f.metadata.get(TYPE_CHANGES_KEY)
        if isinstance(changes, list):
            out.extend(c for c in changes if isinstance(c, dict))
    return out


def has_type_changes(schema: StructType) -> bool:
    return any(TYPE_CHANGES_KEY in f.metadata for f in _fields(schema))


def needs_row_reader(schema: StructType) -> bool:
    """Whether Spark's vectorized Parquet reader cannot convert some file of this table:
    it refuses integers widened to decimals (its row-based reader converts them)."""
    return any(
        str(c.get("fromType")) in _INTEGRAL and str(c.get("toType", "")).startswith("decimal")
        for c in type_changes(schema)
    )


def without_type_changes(dt: DataType) -> Any:
    """``dt`` with every ``delta.typeChanges`` entry removed (done when dropping the feature,
    once no file holds a narrower type)."""
    return without_field_metadata(dt, lambda key: key == TYPE_CHANGES_KEY)


def without_field_metadata(dt: DataType, drop: Callable[[str], bool]) -> Any:
    """``dt`` with the field metadata keys ``drop`` selects removed, nested fields too."""
    return map_fields(
        dt,
        lambda f: StructField(
            f.name, f.type, f.nullable, {k: v for k, v in f.metadata.items() if not drop(k)}
        ),
    )
