"""Reading per-file statistics (PROTOCOL.md "Per-file Statistics") into Arrow.

``parse_stats`` reads ``add.stats`` JSON documents, ``stats_from_parsed`` a checkpoint's
``add.stats_parsed`` column, both into the layout of ``stats.layout.stats_schema`` (physical
names). Snapshots hold millions of documents, so parsing is one ``pyarrow.json`` call over
the whole column; a Python loop only runs to isolate rows pyarrow rejects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from delta_pyspark.core.stats.layout import UTF8_MAX_CHAR, Path, is_string, selected_layout


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
    layout = selected_layout(schema, columns)
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


def file_stats(
    files: pa.Table, schema: pa.Schema, columns: Sequence[Path]
) -> pa.StructArray | None:
    """The stats of ``files`` (``add`` actions) for ``columns``: a checkpoint's ``stats_parsed``
    where present, else the ``stats`` JSON; None when the files carry neither."""
    names = files.column_names
    if "stats_parsed" in names:
        parsed = stats_from_parsed(files.column("stats_parsed"), schema, columns)
        if "stats" not in names or parsed.null_count == 0:
            return parsed
        need = pc.and_(pc.is_null(parsed), pc.is_valid(files.column("stats").combine_chunks()))
        if not pc.any(need).as_py():
            return parsed
        idx = pc.indices_nonzero(need)
        extra = parse_stats(pc.take(files.column("stats").combine_chunks(), idx), schema, columns)
        rank = pc.subtract(pc.cumulative_sum(pc.cast(need, pa.int64())), 1)
        gather = pc.if_else(need, pc.add(rank, len(parsed)), pa.array(range(len(parsed))))
        return pc.take(pa.concat_arrays([parsed, extra]), gather)
    if "stats" in names:
        return parse_stats(files.column("stats"), schema, columns)
    return None


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
    layout = selected_layout(schema, columns)
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
    if pa.types.is_date(typ) and is_string(src.type):
        return _cast_where_valid(src, typ, r"^\d{4}-\d{2}-\d{2}$")
    out = cast_tolerant(src, typ)
    if adjust and pa.types.is_floating(typ) and role:
        out = pc.if_else(pc.is_nan(out), pa.scalar(None, typ), out)
    if adjust and role == "max" and pa.types.is_string(typ):
        out = pc.replace_substring_regex(out, "\ufffd$", UTF8_MAX_CHAR)
    return out


def cast_tolerant(arr: pa.Array, typ: pa.DataType) -> pa.Array:
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
    return cast_tolerant(pc.if_else(ok, strings, pa.scalar(None, strings.type)), typ)


_TS_STAT_RE = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$"
_OFFSET_RE = r"[+-]\d{2}:?\d{2}$"
_MINUTE_US = 60_000_000


def _to_timestamp(src: pa.Array, typ: pa.TimestampType, role: str, adjust: bool) -> pa.Array:
    """Strings (ISO-8601, maybe with offset) or timestamps -> ``timestamp[us, tz]`` bounds."""
    widen = None
    if is_string(src.type):
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
        values = cast_tolerant(src, pa.timestamp("us", tz=src.type.tz))
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
