"""Per-file statistics: which columns get them, and the Arrow layout of parsed stats.

Stats are the ``add.stats`` JSON documents of the Delta protocol ("Per-file Statistics"):
``{"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"}`` with per-column values
nested like the data schema and keyed by physical column names. ``parsing`` reads them
into this layout; ``collection`` writes them from Parquet footers.

All schemas here are Arrow schemas with *physical* names (the caller maps column-mapping names).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa

from delta_pyspark.core.protocol.schema_arrow import is_variant_struct

STRING_PREFIX_LENGTH = 32  # delta-spark's spark.databricks.delta.stats.skipping.stringPrefixLength
ASCII_MAX_CHAR = "\x7f"
UTF8_MAX_CHAR = "\U0010ffff"

Path = tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# Which columns get stats, and the layout of the stats struct


def split_column_name(name: str) -> Path:
    """Split ``a.b`` / ``a.`b.c``` (as in ``delta.dataSkippingStatsColumns``) into path parts."""
    parts: list[str] = []
    buf: list[str] = []
    i, quoted = 0, False
    while i < len(name):
        ch = name[i]
        if ch == "`":
            if quoted and i + 1 < len(name) and name[i + 1] == "`":
                buf.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf).strip())
    return tuple(parts)


def _leaves(fields: Iterable[pa.Field], prefix: Path = ()) -> list[tuple[Path, pa.DataType]]:
    out: list[tuple[Path, pa.DataType]] = []
    for f in fields:
        if pa.types.is_struct(f.type) and not is_variant_struct(f.type):  # a variant is a leaf
            out.extend(_leaves(f.type.fields, (*prefix, f.name)))
        else:
            out.append(((*prefix, f.name), f.type))
    return out


def stats_leaves(
    schema: pa.Schema,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[str] | None = None,
    *,
    partition_columns: Sequence[str] = (),
) -> list[tuple[Path, pa.DataType]]:
    """The leaf columns that get statistics, in schema order, as delta-spark chooses them.

    ``stats_columns`` (``delta.dataSkippingStatsColumns``) wins over ``num_indexed_cols``
    (``delta.dataSkippingNumIndexedCols``, negative = all). Leaves are counted depth-first with
    arrays and maps counting as one leaf; partition columns are never indexed.
    """
    parts = {p.lower() for p in partition_columns}
    leaves = _leaves(f for f in schema if f.name.lower() not in parts)
    if stats_columns is not None:
        wanted = [tuple(p.lower() for p in split_column_name(c)) for c in stats_columns]
        return [
            (path, typ)
            for path, typ in leaves
            if any(tuple(p.lower() for p in path[: len(w)]) == w for w in wanted)
        ]
    if num_indexed_cols < 0:
        return leaves
    return leaves[:num_indexed_cols]


def has_min_max(typ: pa.DataType) -> bool:
    """Types delta-spark keeps min/max for (boolean, binary and nested types: nullCount only)."""
    return (
        (pa.types.is_integer(typ) and not pa.types.is_boolean(typ))
        or pa.types.is_floating(typ)
        or pa.types.is_decimal(typ)
        or pa.types.is_date(typ)
        or pa.types.is_timestamp(typ)
        or is_string(typ)
    )


def is_string(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ)


def _bound_type(typ: pa.DataType) -> pa.DataType:
    """Arrow type of a parsed min/max value (timestamps in microseconds, dates as date32)."""
    if pa.types.is_timestamp(typ):
        return pa.timestamp("us", tz=typ.tz)
    if pa.types.is_date(typ):
        return pa.date32()
    if is_string(typ):
        return pa.string()
    return typ


def _nest(leaves: Sequence[tuple[Path, pa.DataType]]) -> list[pa.Field]:
    groups: dict[str, list[tuple[Path, pa.DataType]]] = {}
    for path, typ in leaves:
        groups.setdefault(path[0], []).append((path[1:], typ))
    fields = []
    for name, items in groups.items():
        if len(items) == 1 and not items[0][0]:
            fields.append(pa.field(name, items[0][1]))
        else:
            fields.append(pa.field(name, pa.struct(_nest([i for i in items if i[0]]))))
    return fields


def _layout(leaves: Sequence[tuple[Path, pa.DataType]]) -> pa.Schema:
    bounds = [(p, _bound_type(t)) for p, t in leaves if has_min_max(t)]
    return pa.schema(
        [
            pa.field("numRecords", pa.int64()),
            pa.field("minValues", pa.struct(_nest(bounds))),
            pa.field("maxValues", pa.struct(_nest(bounds))),
            pa.field("nullCount", pa.struct(_nest([(p, pa.int64()) for p, _ in leaves]))),
            pa.field("tightBounds", pa.bool_()),
        ]
    )


def stats_schema(
    schema: pa.Schema,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[str] | None = None,
    *,
    partition_columns: Sequence[str] = (),
) -> pa.Schema:
    """Arrow layout of parsed stats: numRecords, minValues, maxValues, nullCount, tightBounds.

    min/max structs mirror the data schema for leaves with min/max support (timestamps become
    ``timestamp[us]`` keeping the column's time zone); nullCount has an int64 for every indexed
    leaf, arrays and maps included.
    """
    return _layout(
        stats_leaves(schema, num_indexed_cols, stats_columns, partition_columns=partition_columns)
    )


def _selected(schema: pa.Schema, columns: Iterable[Path] | None) -> list[tuple[Path, pa.DataType]]:
    leaves = _leaves(schema)
    if columns is None:
        return leaves
    wanted = [tuple(c) for c in columns]
    return [(p, t) for p, t in leaves if any(p[: len(w)] == w for w in wanted)]


def selected_layout(schema: pa.Schema, columns: Iterable[Path] | None) -> pa.Schema:
    """``stats_schema(schema, -1)`` restricted to ``columns`` and the leaves below them."""
    return _layout(_selected(schema, columns))
