"""Per-file statistics: Arrow layout, vectorised parsing, and writing them from Parquet footers.

Stats are the ``add.stats`` JSON documents of the Delta protocol ("Per-file Statistics"):
``{"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"}`` with per-column values
nested like the data schema and keyed by physical column names. Snapshots hold millions of
them, so parsing is one ``pyarrow.json`` call over the whole column; a Python loop only runs to
isolate rows pyarrow rejects.

All schemas here are Arrow schemas with *physical* names (the caller maps column-mapping names).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

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
        if pa.types.is_struct(f.type):
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
        or _is_string(typ)
    )


def _is_string(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ)


def _bound_type(typ: pa.DataType) -> pa.DataType:
    """Arrow type of a parsed min/max value (timestamps in microseconds, dates as date32)."""
    if pa.types.is_timestamp(typ):
        return pa.timestamp("us", tz=typ.tz)
    if pa.types.is_date(typ):
        return pa.date32()
    if _is_string(typ):
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


# ---------------------------------------------------------------------------------------------
# Parsing stats JSON


def parse_stats(
    stats_json: pa.Array | pa.ChunkedArray,
    schema: pa.Schema,
    columns: Iterable[Path] | None = None,
    *,
    adjust_bounds: bool = True,
) -> pa.StructArray:
    """Parse ``add.stats`` JSON strings into a StructArray laid out as ``stats_schema(schema, -1)``.

    ``columns`` restricts the result to those column paths (and leaves below them) - parse only
    what a predicate needs. Null, empty, non-object or unparseable documents give a null row;
    a value of the wrong type is dropped (null) without losing the rest of its row.

    With ``adjust_bounds`` the min/max become safe bounds for skipping: timestamp max + 1 ms
    (delta-spark truncates to milliseconds), timestamps written with a numeric UTC offset widened
    by a minute (offsets may have lost their seconds), the old U+FFFD string tie-breaker replaced
    by U+10FFFF, and NaN bounds dropped.
    """
    layout = _layout(_selected(schema, columns))
    texts = _as_string_array(stats_json)
    valid = pc.fill_null(pc.starts_with(texts, "{"), False)
    texts = pc.if_else(valid, texts, pa.scalar("{}", texts.type))
    found = _bytes_found(texts, (b"\n", b"\r", b'NaN"', b'Infinity"'))
    if found & {b"\n", b"\r"}:
        texts = _single_line(texts)
    if found & {b'NaN"', b'Infinity"'}:
        texts = _null_out_special_floats(texts)
    read_type = pa.struct([_json_field(f) for f in layout])
    raw = _read_json_documents(texts, read_type)
    return _finish(raw, layout, pc.and_(valid, pc.is_valid(raw)), adjust_bounds)


def _bytes_found(texts: pa.Array, needles: tuple[bytes, ...], window: int = 64 << 20) -> set[bytes]:
    """The needles some element contains: a memchr-speed scan of the character data (per-element
    ``match_substring`` is several times slower), in bounded windows."""
    found: set[bytes] = set()
    if len(texts) == 0:
        return found
    _, offset_buf, data = texts.buffers()[:3]
    width = pa.int64() if pa.types.is_large_string(texts.type) else pa.int32()
    offsets = pa.Array.from_buffers(width, len(texts) + 1, [None, offset_buf], offset=texts.offset)
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if data is None:
        return found
    overlap = max(len(n) for n in needles) - 1
    for lo in range(start, end, window):
        chunk = data.slice(lo, min(end, lo + window + overlap) - lo).to_pybytes()
        found.update(n for n in needles if n in chunk)
    return found


def _single_line(texts: pa.Array) -> pa.Array:
    """Line breaks inside a document become spaces (JSON whitespace; raw ones are invalid
    inside strings anyway). Each document must be one line starting with "{": pyarrow crashes
    the process when a parse block starts with a non-object such as ``null``."""
    hit = pc.or_(pc.match_substring(texts, "\n"), pc.match_substring(texts, "\r"))
    fixed = pc.replace_substring_regex(texts.filter(hit), r"[\r\n]", " ")
    return pc.replace_with_mask(texts, hit, fixed)


def _null_out_special_floats(texts: pa.Array) -> pa.Array:
    """Jackson writes NaN/Infinity bounds as strings, which pyarrow rejects for float fields;
    turn them into nulls up front (unknown bound) rather than falling back row by row."""
    hit = pc.or_(pc.match_substring(texts, 'NaN"'), pc.match_substring(texts, 'Infinity"'))
    hit = pc.fill_null(hit, False)
    pattern = r':\s*"(NaN|-?Infinity)"'
    fixed = pc.replace_substring_regex(texts.filter(hit), pattern, ":null")
    return pc.replace_with_mask(texts, hit, fixed)


def stats_from_parsed(
    stats_parsed: pa.Array | pa.ChunkedArray,
    schema: pa.Schema,
    columns: Iterable[Path] | None = None,
    *,
    adjust_bounds: bool = True,
) -> pa.StructArray:
    """Normalise a checkpoint's ``add.stats_parsed`` column to the layout ``parse_stats`` returns.

    Missing fields become null; values are cast to the canonical types (e.g. naive checkpoint
    timestamps are UTC instants for a ``timestamp`` column), then adjusted like ``parse_stats``.
    """
    arr = (
        stats_parsed.combine_chunks() if isinstance(stats_parsed, pa.ChunkedArray) else stats_parsed
    )
    layout = _layout(_selected(schema, columns))
    return _finish(arr, layout, pc.is_valid(arr), adjust_bounds)


def _as_string_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_string_view(arr.type) or pa.types.is_binary(arr.type):
        arr = arr.cast(pa.string())
    elif pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_string())
    return arr


def _json_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, _json_type(f.type))


def _json_type(typ: pa.DataType) -> pa.DataType:
    """pyarrow.json cannot produce dates or offset timestamps: read those as strings."""
    if pa.types.is_struct(typ):
        return pa.struct([_json_field(f) for f in typ.fields])
    if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
        return pa.string()
    return typ


class _RowCountMismatch(Exception):
    pass


_JSON_BLOCK_BYTES = 16 << 20


def _read_json_documents(texts: pa.Array, read_type: pa.StructType) -> pa.StructArray:
    """One JSON object per element -> StructArray; bisects around rows pyarrow rejects."""
    if len(texts) == 0:
        return pa.array([], read_type)
    lengths = pc.binary_length(texts)
    if pc.sum(lengths).as_py() + len(texts) >= 2**31:
        texts = texts.cast(pa.large_string())
    elif not pa.types.is_string(texts.type):
        texts = texts.cast(pa.string())
    block = max(_JSON_BLOCK_BYTES, 2 * (pc.max(lengths).as_py() or 0) + 1024)
    schema = pa.schema(list(read_type))
    newline = pa.scalar("\n", texts.type)

    def batch(chunk: pa.Array) -> pa.StructArray:
        # Elements are single lines starting with "{" (see _single_line), so every parse block
        # starts with an object: pyarrow segfaults on a block starting with e.g. "null".
        joined = pc.binary_join(pa.ListArray.from_arrays([0, len(chunk)], chunk), newline)
        table = pa_json.read_json(
            pa.BufferReader(joined[0].as_buffer()),
            read_options=pa_json.ReadOptions(block_size=block),
            parse_options=pa_json.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
        if table.num_rows != len(chunk):
            raise _RowCountMismatch  # some element held several documents
        return table.to_struct_array().combine_chunks().cast(read_type)

    def rows(chunk: pa.Array) -> pa.StructArray:
        return pa.array([_parse_row_python(t, read_type) for t in chunk.to_pylist()], read_type)

    return _bisect(texts, batch, rows, (pa.ArrowInvalid, _RowCountMismatch))


def _bisect(
    arr: pa.Array,
    fast: Callable[[pa.Array], pa.Array],
    slow: Callable[[pa.Array], pa.Array],
    errors: tuple[type[BaseException], ...],
    small: int = 16,
) -> pa.Array:
    """``fast(arr)``; where it fails, halve until chunks of ``small`` rows get ``slow``."""
    try:
        return fast(arr)
    except errors:
        if len(arr) <= small:
            return slow(arr)
    mid = len(arr) // 2
    left = _bisect(arr.slice(0, mid), fast, slow, errors, small)
    right = _bisect(arr.slice(mid), fast, slow, errors, small)
    return pa.concat_arrays([left, right])


def _parse_row_python(text: str | None, typ: pa.StructType) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    result = _coerce(value, typ)
    return result if isinstance(result, dict) else None


def _coerce(value: Any, typ: pa.DataType) -> Any:
    """Keep a JSON value only if it fits ``typ`` exactly; None otherwise."""
    if value is None:
        return None
    if pa.types.is_struct(typ):
        if not isinstance(value, dict):
            return None
        return {f.name: _coerce(value.get(f.name), f.type) for f in typ.fields}
    if pa.types.is_boolean(typ):
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if pa.types.is_integer(typ):
        if not isinstance(value, int):
            return None
        try:
            pa.scalar(value, typ)
        except (pa.ArrowInvalid, OverflowError):
            return None
        return value
    if pa.types.is_floating(typ):
        return float(value) if isinstance(value, int | float) else None
    if pa.types.is_decimal(typ):
        try:
            dec = Decimal(str(value)) if isinstance(value, int | float | str) else None
            if dec is None or not dec.is_finite():
                return None
            with localcontext(prec=100):
                exact = dec.quantize(Decimal(1).scaleb(-typ.scale))
            pa.scalar(exact, typ)
        except (InvalidOperation, pa.ArrowInvalid, ValueError):
            return None
        return exact if exact == dec else None
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return value if isinstance(value, str) else None
    return None


# -- converting the raw JSON shapes to the final layout -----------------------------------------

_ROLE_BY_FIELD = {"minValues": "min", "maxValues": "max"}


def _finish(raw: pa.Array, layout: pa.Schema, valid: pa.Array, adjust: bool) -> pa.StructArray:
    children = []
    for f in layout:
        src = _child(raw, f.name)
        children.append(_convert(src, f.type, _ROLE_BY_FIELD.get(f.name, ""), adjust, len(raw)))
    mask = pc.invert(pc.fill_null(valid, False))
    return pa.StructArray.from_arrays(children, fields=list(layout), mask=mask)


def _child(arr: pa.Array, name: str) -> pa.Array | None:
    typ = arr.type
    if not pa.types.is_struct(typ) or typ.get_field_index(name) < 0:
        return None
    return pc.struct_field(arr, [typ.get_field_index(name)])


def _convert(src: pa.Array | None, typ: pa.DataType, role: str, adjust: bool, n: int) -> pa.Array:
    if pa.types.is_struct(typ):
        if typ.num_fields == 0:
            return pa.Array.from_buffers(typ, n, [None], children=[])
        kids = [
            _convert(None if src is None else _child(src, f.name), f.type, role, adjust, n)
            for f in typ.fields
        ]
        mask = None if src is None or src.null_count == 0 else pc.is_null(src)
        return pa.StructArray.from_arrays(kids, fields=list(typ.fields), mask=mask)
    if src is None or pa.types.is_struct(src.type):
        return pa.nulls(n, typ)
    if pa.types.is_timestamp(typ):
        return _to_timestamp(src, typ, role, adjust)
    if pa.types.is_date(typ) and _is_string(src.type):
        return _cast_where_valid(src, typ, r"^\d{4}-\d{2}-\d{2}$")
    out = _cast_tolerant(src, typ)
    if adjust and pa.types.is_floating(typ) and role:
        out = pc.if_else(pc.is_nan(out), pa.scalar(None, typ), out)
    if adjust and role == "max" and pa.types.is_string(typ):
        out = pc.replace_substring_regex(out, "\ufffd$", UTF8_MAX_CHAR)
    return out


def _cast_tolerant(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    """Cast; values that do not convert become null (a type mismatch must not fail the batch)."""
    if arr.type == typ:
        return arr

    def one(chunk: pa.Array) -> pa.Array:
        out = []
        for i in range(len(chunk)):
            try:
                out.append(pc.cast(chunk.slice(i, 1), typ))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                out.append(pa.nulls(1, typ))
        return pa.concat_arrays(out) if out else pa.array([], typ)

    try:
        return _bisect(arr, lambda c: pc.cast(c, typ), one, (pa.ArrowInvalid,))
    except pa.ArrowNotImplementedError:
        return pa.nulls(len(arr), typ)


def _cast_where_valid(strings: pa.Array, typ: pa.DataType, pattern: str) -> pa.Array:
    ok = pc.fill_null(pc.match_substring_regex(strings, pattern), False)
    return _cast_tolerant(pc.if_else(ok, strings, pa.scalar(None, strings.type)), typ)


_TS_STAT_RE = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$"
_OFFSET_RE = r"[+-]\d{2}:?\d{2}$"
_MINUTE_US = 60_000_000


def _to_timestamp(src: pa.Array, typ: pa.TimestampType, role: str, adjust: bool) -> pa.Array:
    """Strings (ISO-8601, maybe with offset) or timestamps -> ``timestamp[us, tz]`` bounds."""
    widen = None
    if _is_string(src.type):
        src = src.cast(pa.string())
        zoned = pc.fill_null(pc.match_substring_regex(src, r"(Z|[+-]\d{2}:?\d{2})$"), True)
        if typ.tz is None:  # timestamp_ntz stats carry no zone; tolerate a stray "Z"
            src = pc.replace_substring_regex(src, "Z$", "")
            pattern = _TS_STAT_RE.replace("(Z|[+-]\\d{2}:?\\d{2})?", "")
            values = _cast_where_valid(src, pa.timestamp("us"), pattern)
        else:
            src = pc.if_else(zoned, src, pc.binary_join_element_wise(src, "Z", ""))
            values = _cast_where_valid(src, pa.timestamp("us", tz="UTC"), _TS_STAT_RE)
            widen = pc.fill_null(pc.match_substring_regex(src, _OFFSET_RE), False)
    elif pa.types.is_timestamp(src.type):
        values = _cast_tolerant(src, pa.timestamp("us", tz=src.type.tz))
    else:
        return pa.nulls(len(src), typ)
    micros = values.cast(pa.int64())
    if adjust and role:
        delta = 1000 if role == "max" else 0  # max was truncated down to milliseconds
        if widen is not None:
            shift = pc.if_else(widen, _MINUTE_US, 0)
            delta = pc.add(shift, delta) if role == "max" else pc.negate(shift)
        micros = _saturating_add(micros, delta)
    return micros.cast(pa.timestamp("us", tz=typ.tz))


def _saturating_add(values: pa.Array, delta: int | pa.Array) -> pa.Array:
    """values + delta; null (unknown) where that would overflow int64."""
    if isinstance(delta, int) and delta == 0:
        return values
    lo, hi = pa.scalar(-(2**63) + _MINUTE_US + 1000), pa.scalar(2**63 - _MINUTE_US - 1000)
    safe = pc.and_(pc.greater_equal(values, lo), pc.less_equal(values, hi))
    return pc.if_else(safe, pc.add(values, delta), pa.scalar(None, pa.int64()))


# ---------------------------------------------------------------------------------------------
# Writing stats from a Parquet footer


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
