"""Which columns of a table get statistics: ``delta.dataSkippingNumIndexedCols`` and
``delta.dataSkippingStatsColumns`` applied to the table's schema (PROTOCOL.md "Per-file
Statistics"). Writers collect stats for these leaves; Z-ordering and liquid clustering refuse
columns outside them (the stats would not let readers skip files on them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
    logical_to_physical_names,
    physical_name,
    to_physical_schema,
)
from delta_pyspark.core.protocol.schema import DataType, StructType
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.stats.layout import split_column_name, stats_leaves


def stats_settings(
    configuration: Mapping[str, str], schema: StructType | None = None
) -> tuple[int, list[str] | None]:
    """``delta.dataSkippingNumIndexedCols`` and ``delta.dataSkippingStatsColumns``; the
    latter names logical columns, so with column mapping (and ``schema``, the logical
    schema) they are translated to the physical paths stats are keyed by."""
    num = int(configuration.get("delta.dataSkippingNumIndexedCols", "32"))
    text = configuration.get("delta.dataSkippingStatsColumns")
    if not text:
        return num, None
    cols = [c.strip() for c in text.split(",") if c.strip()]
    mode = column_mapping_mode(configuration)
    if schema is None or mode == "none":
        return num, cols
    paths = {
        tuple(p.lower() for p in logical): physical
        for logical, physical in logical_to_physical_names(schema, mode).items()
    }
    mapped = []
    for c in cols:
        physical = paths.get(tuple(p.lower() for p in split_column_name(c)))
        mapped.append(".".join(f"`{p}`" for p in physical) if physical else c)
    return num, mapped


def indexed_paths(
    schema: StructType, partition_columns: Sequence[str], configuration: Mapping[str, str]
) -> set[tuple[str, ...]]:
    """Physical leaf paths (lower case) a writer collects stats for, as ``write_files``."""
    mode = column_mapping_mode(configuration)
    physical = to_physical_schema(schema, mode)
    part_physical = {physical_name(schema.field(c), mode) for c in partition_columns}
    data = StructType(tuple(f for f in physical.fields if f.name not in part_physical))
    num, cols = stats_settings(configuration, schema)
    return {
        tuple(p.lower() for p in path) for path, _ in stats_leaves(to_arrow_schema(data), num, cols)
    }


def resolve_leaf(
    schema: StructType, path: tuple[str, ...], mode: str = "none"
) -> tuple[tuple[str, ...], tuple[str, ...], DataType] | None:
    """A leaf column path resolved as Spark resolves names (case-insensitively): its
    logical path as the schema spells it, its physical path and its type; None if absent."""
    struct: DataType = schema
    logical: list[str] = []
    physical: list[str] = []
    for part in path:
        if not isinstance(struct, StructType):
            return None
        field = struct.find_field(part, case_sensitive=False)
        if field is None:
            return None
        logical.append(field.name)
        physical.append(physical_name(field, mode))
        struct = field.type
    if isinstance(struct, StructType):
        return None  # a struct is not a leaf: nothing to order by
    return tuple(logical), tuple(physical), struct
