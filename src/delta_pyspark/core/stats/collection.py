"""Writing per-file statistics (PROTOCOL.md "Per-file Statistics") from a Parquet footer.

``collect_parquet_stats`` gives the ``add.stats`` JSON of a data file from its footer
alone, for the columns ``stats.stats_leaves`` chooses, with delta-spark's truncation of
string bounds (``truncate_min_string``/``truncate_max_string``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyspark.core.protocol.schema_arrow import is_variant_struct
from delta_pyspark.core.stats.layout import (
    ASCII_MAX_CHAR,
    STRING_PREFIX_LENGTH,
    UTF8_MAX_CHAR,
    Path,
    has_min_max,
    stats_leaves,
)


def truncate_min_string(value: str, prefix_length: int = STRING_PREFIX_LENGTH) -> str:
    """Lower bound for ``value``: its prefix (delta-spark's min truncation)."""
    return value[:prefix_length]


def truncate_max_string(value: str, prefix_length: int = STRING_PREFIX_LENGTH) -> str | None:
    """Upper bound for ``value``: a prefix plus a tie-breaker (delta-spark's max truncation).

    Like delta-spark: U+007F when the next character is below it, else U+10FFFF; characters
    equal to U+10FFFF extend the prefix; give up (None) past twice the prefix length.
    Lengths count code points (delta-spark counts UTF-16 units; both are valid bounds).
    """
    if len(value) <= prefix_length:
        return value
    i = prefix_length
    while i <= 2 * prefix_length:
        if i >= len(value):
            return value
        if value[i] == UTF8_MAX_CHAR:
            i += 1
        elif value[i] < ASCII_MAX_CHAR:
            return value[:i] + ASCII_MAX_CHAR
        else:
            return value[:i] + UTF8_MAX_CHAR
    return None


def collect_parquet_stats(
    metadata: pq.FileMetaData,
    schema: pa.Schema,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[str] | None = None,
    *,
    partition_columns: Sequence[str] = (),
    tight_bounds: bool | None = None,
    string_prefix_length: int = STRING_PREFIX_LENGTH,
) -> str:
    """The ``add.stats`` JSON for a Parquet data file, from its footer alone.

    ``schema`` is the table's Arrow schema with physical names (partition columns, if present,
    must be named in ``partition_columns``). Bounds are aggregated over row groups; a column
    loses min/max if any non-empty row group lacks them (INT96 timestamps never have them).
    Timestamps are written in milliseconds (max rounded up so it stays a bound); float max is
    only trusted from parquet-mr, which keeps NaN in it (other writers drop NaN from bounds).
    Array/map nullCount is only known when it is 0. ``tight_bounds`` adds that flag (DV tables).
    """
    leaves = stats_leaves(
        schema, num_indexed_cols, stats_columns, partition_columns=partition_columns
    )
    index = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    writer = (metadata.created_by or "").lower()
    nan_safe_max = writer.startswith(("parquet-mr", "parquet-java"))
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for path, typ in leaves:
        key = ".".join(path)
        nested = pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_map(typ)
        sub = [i for p, i in index.items() if p.startswith(key + ".")]
        if key not in index and not sub:
            _put(nulls, path, str(metadata.num_rows))  # column absent from the file: all null
            continue
        if pa.types.is_struct(typ) and is_variant_struct(typ):
            # nullCount only (PROTOCOL.md): a null variant is a null in its required ``value``
            value = index.get(key + ".value")
            count = None if value is None else _null_count(metadata, value)
            if count is not None:
                _put(nulls, path, str(count))
            continue
        if nested or key not in index:
            if sub and _nested_has_no_nulls(metadata, sub):
                _put(nulls, path, "0")
            continue
        col = index[key]
        count = _null_count(metadata, col)
        if count is not None:
            _put(nulls, path, str(count))
        if has_min_max(typ):
            low, high = _bounds(metadata, col, typ, nan_safe_max, string_prefix_length)
            if low is not None:
                _put(mins, path, low)
            if high is not None:
                _put(maxs, path, high)
    doc: dict[str, Any] = {"numRecords": str(metadata.num_rows)}
    for name, part in (("minValues", mins), ("maxValues", maxs), ("nullCount", nulls)):
        if part:
            doc[name] = part
    if tight_bounds is not None:
        doc["tightBounds"] = "true" if tight_bounds else "false"
    return _dump(doc)


def _put(tree: dict[str, Any], path: Path, token: str) -> None:
    for name in path[:-1]:
        tree = tree.setdefault(name, {})
    tree[path[-1]] = token


def _dump(tree: dict[str, Any]) -> str:
    items = (
        json.dumps(k, ensure_ascii=False) + ":" + (_dump(v) if isinstance(v, dict) else v)
        for k, v in tree.items()
    )
    return "{" + ",".join(items) + "}"


def _chunks(metadata: pq.FileMetaData, col: int) -> Iterable[pq.ColumnChunkMetaData]:
    for r in range(metadata.num_row_groups):
        rg = metadata.row_group(r)
        if rg.num_rows > 0:
            yield rg.column(col)


def _null_count(metadata: pq.FileMetaData, col: int) -> int | None:
    total = 0
    for chunk in _chunks(metadata, col):
        st = chunk.statistics
        if st is None or not st.has_null_count:
            return None
        total += st.null_count
    return total


def _nested_has_no_nulls(metadata: pq.FileMetaData, cols: list[int]) -> bool:
    """An array/map has no null values in a row group if one of its leaves has no nulls there
    (a null array/map is a null in every leaf; leaf counts also include empty/null elements)."""
    for r in range(metadata.num_row_groups):
        rg = metadata.row_group(r)
        if rg.num_rows == 0:
            continue
        stats = [rg.column(c).statistics for c in cols]
        if not any(s is not None and s.has_null_count and s.null_count == 0 for s in stats):
            return False
    return True


def _file_kind(chunk: pq.ColumnChunkMetaData) -> str | None:
    st = chunk.statistics
    if st is None:
        return None
    logical = st.logical_type.type
    physical = chunk.physical_type
    if logical == "DECIMAL":
        return "decimal"
    if logical in ("DATE", "TIMESTAMP"):
        return logical.lower()
    if physical in ("INT32", "INT64") and logical in ("NONE", "INT"):
        return "int"
    if physical in ("FLOAT", "DOUBLE"):
        return "float"
    if physical == "BYTE_ARRAY" and (logical == "STRING" or st.converted_type == "UTF8"):
        return "string"
    return None


def _table_kind(typ: pa.DataType) -> str:
    if pa.types.is_integer(typ):
        return "int"
    if pa.types.is_floating(typ):
        return "float"
    if pa.types.is_decimal(typ):
        return "decimal"
    if pa.types.is_date(typ):
        return "date"
    if pa.types.is_timestamp(typ):
        return "timestamp"
    return "string"


_COMPATIBLE = {
    ("int", "int"),
    ("float", "float"),
    ("float", "int"),
    ("decimal", "decimal"),
    ("decimal", "int"),
    ("date", "date"),
    ("timestamp", "timestamp"),
    ("string", "string"),
}


def _bounds(
    metadata: pq.FileMetaData, col: int, typ: pa.DataType, nan_safe_max: bool, prefix: int
) -> tuple[str | None, str | None]:
    """JSON tokens for the column's min and max over all row groups (None where unknown)."""
    table_kind = _table_kind(typ)
    lows: list[Any] = []
    highs: list[Any] = []
    for chunk in _chunks(metadata, col):
        st = chunk.statistics
        if st is None:
            return None, None
        if not st.has_min_max:
            if st.has_null_count and st.null_count >= chunk.num_values:
                continue  # all null: nothing to bound
            return None, None
        file_kind = _file_kind(chunk)
        if file_kind is None or (table_kind, file_kind) not in _COMPATIBLE:
            return None, None
        try:
            low, high = _decode(st, file_kind)
        except (ValueError, OverflowError, UnicodeDecodeError, InvalidOperation):
            return None, None
        lows.append(low)
        highs.append(high)
    if not lows:
        return None, None
    low, high = min(lows), max(highs)
    if table_kind == "float":
        if any(isinstance(v, float) and math.isnan(v) for v in lows):
            return None, None
        high_nan = any(isinstance(v, float) and math.isnan(v) for v in highs)
        low_token = _float_token(low, typ) if math.isfinite(low) else None
        high_ok = nan_safe_max and not high_nan and math.isfinite(high)
        return low_token, _float_token(high, typ) if high_ok else None
    if table_kind == "string":
        top = truncate_max_string(high, prefix)
        return (
            json.dumps(truncate_min_string(low, prefix), ensure_ascii=False),
            None if top is None else json.dumps(top, ensure_ascii=False),
        )
    if table_kind == "timestamp":
        utc = typ.tz is not None  # min rounds down, max up, to milliseconds
        return _ts_token(low // 1000, utc), _ts_token(-((-high) // 1000), utc)
    if table_kind == "date":
        return _date_token(low), _date_token(high)
    if table_kind == "decimal":
        return format(Decimal(low), "f"), format(Decimal(high), "f")
    return str(int(low)), str(int(high))


_UNIT_TO_MICROS = {"milliseconds": (1000, 1), "microseconds": (1, 1), "nanoseconds": (1, 1000)}


def _decode(st: pq.Statistics, kind: str) -> tuple[Any, Any]:
    """(min, max) of one chunk: ints, floats, Decimals, str, day numbers or microseconds."""
    if kind == "timestamp":
        unit = json.loads(st.logical_type.to_json()).get("timeUnit", "microseconds")
        mul, div = _UNIT_TO_MICROS[unit]
        return st.min_raw * mul // div, -((-st.max_raw * mul) // div)
    if kind == "date":
        return int(st.min_raw), int(st.max_raw)
    if kind == "string":
        return _utf8(st.min_raw), _utf8(st.max_raw)
    if kind == "decimal":
        return Decimal(st.min), Decimal(st.max)
    return st.min, st.max


def _utf8(raw: bytes | str) -> str:
    return raw.decode("utf-8") if isinstance(raw, bytes) else raw


def _float_token(value: float, typ: pa.DataType) -> str:
    if pa.types.is_float32(typ):
        for digits in range(1, 10):  # shortest text that reads back as the same float32
            text = f"{value:.{digits}g}"
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
                return _json_float(text)
    return _json_float(repr(float(value)))


def _json_float(text: str) -> str:
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text if ("." in text or "e" in text) else text + ".0"


_EPOCH = dt.datetime(1970, 1, 1)


def _ts_token(millis: int, utc: bool) -> str | None:
    try:
        value = _EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError:
        return None
    text = value.isoformat(timespec="milliseconds")
    return json.dumps(text + ("Z" if utc else ""))


def _date_token(days: int) -> str | None:
    try:
        return json.dumps((_EPOCH + dt.timedelta(days=days)).date().isoformat())
    except OverflowError:
        return None
