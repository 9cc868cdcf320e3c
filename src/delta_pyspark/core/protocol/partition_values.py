"""Partition values: the strings in ``add.partitionValues`` and in Hive-style paths.

PROTOCOL.md ("Partition Value Serialization") stores every partition value as a
string, with an empty string meaning null. Reading must be fast on millions of
files, so ``partition_column_to_arrow`` parses a whole column with pyarrow.compute;
the scalar ``parse_partition_value`` accepts exactly the same grammar (the regular
expressions below are shared), so both paths agree value for value.

Timestamps (with time zone) written without an offset are read as UTC: the spec
says they are in "the time zone of the system which wrote to the table", which a
reader cannot know; delta-spark's golden tables, delta-kernel and delta-rs all
treat them as UTC. We write the form the spec recommends, ISO-8601 in UTC.

The module is a little over 500 lines because the scalar and the vectorised parsers must
share one grammar (the patterns below) to agree value for value, and the serializer is
their inverse.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.protocol.schema import DataType, DecimalType, PrimitiveType, type_name
from delta_pyspark.core.protocol.schema_arrow import to_arrow_type
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
)

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "escape_path_name",
    "hive_partition_path",
    "parse_hive_partition_path",
    "parse_partition_value",
    "partition_column_to_arrow",
    "serialize_partition_value",
    "unescape_path_name",
]

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}

# The accepted grammar, written once for Python's ``re`` and Arrow's RE2 alike.
_INT_PATTERN = r"^[+-]?[0-9]+$"
# Specials in any case, as Spark's cast reads them: Java writes NaN/Infinity, delta-rs inf.
_FLOAT_PATTERN = (
    r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?(?i:nan|inf|infinity)$"
)
_DECIMAL_PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_BOOL_PATTERN = r"(?i)^(true|false)$"
_DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TS_PATTERN = (
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(\.[0-9]{1,9})?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$"
)
_TS_NTZ_PATTERN = (
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?$"
)
_OFFSET_PATTERN = r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"
_LONG_FRACTION = r"(\.[0-9]{6})[0-9]+"
# Decimal spellings pyarrow's string->decimal128 cast must not see: an exponent, or more
# than 38 digits (see _arrow_cast).
_ARROW_UNSAFE_DECIMAL = r"[eE]|([0-9]\.?){39}"

_INT_RE = re.compile(_INT_PATTERN)
_FLOAT_RE = re.compile(_FLOAT_PATTERN)
_DECIMAL_RE = re.compile(_DECIMAL_PATTERN)
_BOOL_RE = re.compile(r"^(true|false)$", re.IGNORECASE)
_DATE_RE = re.compile(_DATE_PATTERN)
_TS_RE = re.compile(_TS_PATTERN)
_TS_NTZ_RE = re.compile(_TS_NTZ_PATTERN)


def _kind(dtype: DataType) -> str:
    """The partition-value category of a type; non-partitionable types raise."""
    if isinstance(dtype, DecimalType):
        return "decimal"
    if isinstance(dtype, PrimitiveType) and dtype.name not in ("variant", "void"):
        return dtype.name
    raise DeltaAnalysisException(
        f"cannot use a column of type {type_name(dtype)} as a partition column"
    )


# ------------------------------------------------------------------- serialization


def _shortest_float32(x: float) -> str:
    """The shortest decimal string that reads back as the same float32 (like Java)."""
    for digits in range(1, 10):
        s = f"{x:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(s)))[0] == x:
            return s
    return repr(x)


def _java_number(x: float, shortest: str) -> str:
    """Format like Java's ``Double.toString``/``Float.toString`` (what Spark writes):
    plain notation for 1e-3 <= |x| < 1e7, else ``d.dddE<n>``; always a fraction digit."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(shortest).as_tuple()
    digits = "".join(map(str, digit_tuple))
    stripped = digits.rstrip("0")
    exponent = int(exponent) + len(digits) - len(stripped)
    digits = stripped
    sci = len(digits) - 1 + exponent  # exponent of the leading digit
    minus = "-" if sign else ""
    if -3 <= sci < 7:
        if exponent >= 0:
            return f"{minus}{digits}{'0' * exponent}.0"
        point = len(digits) + exponent
        if point > 0:
            return f"{minus}{digits[:point]}.{digits[point:]}"
        return f"{minus}0.{'0' * -point}{digits}"
    return f"{minus}{digits[0]}.{digits[1:] or '0'}E{sci}"


def _to_float32(x: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # rounds beyond float32's range
        return math.copysign(math.inf, x)


def _format_fraction(micro: int, trim: bool) -> str:
    if not micro:
        return "" if trim else ".000000"
    text = f".{micro:06d}"
    return text.rstrip("0") if trim else text


def _format_datetime(value: dt.datetime, sep: str, trim: bool) -> str:
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}{sep}"
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
        f"{_format_fraction(value.microsecond, trim)}"
    )


def _bad_value(value: Any, dtype: DataType) -> DeltaIllegalArgumentException:
    return DeltaIllegalArgumentException(
        f"cannot store {value!r} ({type(value).__name__}) as a {type_name(dtype)} partition value"
    )


def serialize_partition_value(value: Any, dtype: DataType) -> str | None:
    """The string the log stores for ``value``; None for null.

    Spark writes an empty string partition value as null, so ``""`` gives None too.
    Timestamps need an aware datetime and are written as ISO-8601 UTC with
    microseconds (the spec's recommended form); timestamp_ntz needs a naive one.
    Binary values must be UTF-8: the spec stores them as the string they decode to.
    """
    kind = _kind(dtype)
    if value is None:
        return None
    serialize = _SERIALIZERS.get(kind)
    if serialize is None:
        raise _bad_value(value, dtype)
    return serialize(value, dtype, kind)


def _serialize_string(value: Any, dtype: DataType, kind: str) -> str | None:
    if not isinstance(value, str):
        raise _bad_value(value, dtype)
    return value or None


def _serialize_boolean(value: Any, dtype: DataType, kind: str) -> str:
    if not isinstance(value, bool):
        raise _bad_value(value, dtype)
    return "true" if value else "false"


def _serialize_int(value: Any, dtype: DataType, kind: str) -> str:
    low, high = _INT_RANGES[kind]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad_value(value, dtype)
    return str(value)


def _serialize_float(value: Any, dtype: DataType, kind: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad_value(value, dtype)
    x = float(value)
    if kind == "float":
        x = _to_float32(x)
        return _java_number(x, _shortest_float32(x) if math.isfinite(x) else "0")
    return _java_number(x, repr(x) if math.isfinite(x) else "0")


def _serialize_date(value: Any, dtype: DataType, kind: str) -> str:
    if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
        raise _bad_value(value, dtype)
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _serialize_timestamp(value: Any, dtype: DataType, kind: str) -> str:
    if not isinstance(value, dt.datetime) or value.utcoffset() is None:
        raise _bad_value(value, dtype)
    try:
        utc = value.astimezone(dt.UTC)
    except OverflowError:  # leaves years 1..9999 once in UTC
        raise _bad_value(value, dtype) from None
    return _format_datetime(utc, "T", trim=False) + "Z"


def _serialize_timestamp_ntz(value: Any, dtype: DataType, kind: str) -> str:
    if not isinstance(value, dt.datetime) or value.utcoffset() is not None:
        raise _bad_value(value, dtype)
    return _format_datetime(value, " ", trim=True)


def _serialize_binary(value: Any, dtype: DataType, kind: str) -> str | None:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _bad_value(value, dtype)
    try:
        return bytes(value).decode("utf-8") or None
    except UnicodeDecodeError:
        raise DeltaIllegalArgumentException(
            "binary partition values must be valid UTF-8: the log stores them as text"
        ) from None


def _exact_decimal(d: Decimal, dtype: DecimalType) -> Decimal | None:
    """``d`` at the column's scale, or None when that would round or overflow."""
    if not d.is_finite():
        return None
    with decimal.localcontext() as ctx:
        ctx.prec = 100  # wider than any decimal(38, s) so quantize never rounds
        ctx.Emax, ctx.Emin = 10_000, -10_000
        try:
            q = d.quantize(Decimal(1).scaleb(-dtype.scale))
        except InvalidOperation:
            return None
    if q != d or len(q.as_tuple().digits) > dtype.precision:
        return None
    return abs(q) if q == 0 else q  # no negative zero, as in Java's BigDecimal


def _serialize_decimal(value: Any, dtype: DecimalType) -> str:
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise _bad_value(value, dtype)
    q = _exact_decimal(Decimal(value), dtype)
    if q is None:
        raise _bad_value(value, dtype)
    return format(q, "f")


_SERIALIZERS: dict[str, Callable[[Any, DataType, str], str | None]] = {
    "string": _serialize_string,
    "boolean": _serialize_boolean,
    **{k: _serialize_int for k in _INT_RANGES},
    "float": _serialize_float,
    "double": _serialize_float,
    "decimal": lambda value, dtype, kind: _serialize_decimal(value, dtype),  # type: ignore[arg-type]
    "date": _serialize_date,
    "timestamp": _serialize_timestamp,
    "timestamp_ntz": _serialize_timestamp_ntz,
    "binary": _serialize_binary,
}


# ------------------------------------------------------------------------- parsing


def _corrupt(s: str, dtype: DataType) -> CorruptLogError:
    return CorruptLogError(f"invalid partition value {s!r} for type {type_name(dtype)}")


def parse_partition_value(s: str | None, dtype: DataType) -> Any:
    """The Python value of a serialized partition value; None and "" are null for
    every type, strings included (the spec: "An empty string for any type translates
    to a null partition value"). Timestamps without an offset are UTC."""
    kind = _kind(dtype)
    if s is None or s == "":
        return None
    if kind == "string":
        return s
    if kind == "binary":
        return s.encode("utf-8")
    try:
        return _parse(s, kind, dtype)
    except (ValueError, ArithmeticError):
        raise _corrupt(s, dtype) from None


def _parse(s: str, kind: str, dtype: DataType) -> Any:
    if kind in ("date", "timestamp", "timestamp_ntz"):
        return _parse_datetime(s, kind)
    if kind == "boolean":
        if not _BOOL_RE.match(s):
            raise ValueError(s)
        return s.lower() == "true"
    if kind in _INT_RANGES:
        if not _INT_RE.match(s):
            raise ValueError(s)
        n = int(s)
        low, high = _INT_RANGES[kind]
        if not low <= n <= high:
            raise ValueError(s)
        return n
    if kind in ("float", "double"):
        if not _FLOAT_RE.match(s):
            raise ValueError(s)
        x = float(s)
        return _to_float32(x) if kind == "float" else x
    if kind == "decimal":
        assert isinstance(dtype, DecimalType)
        if not _DECIMAL_RE.match(s):
            raise ValueError(s)
        q = _exact_decimal(Decimal(s), dtype)
        if q is None:
            raise ValueError(s)
        return q
    raise ValueError(s)


def _parse_datetime(s: str, kind: str) -> dt.date | dt.datetime:
    if kind == "date":
        if not _DATE_RE.match(s):
            raise ValueError(s)
        return dt.date(int(s[0:4]), int(s[5:7]), int(s[8:10]))
    m = (_TS_RE if kind == "timestamp" else _TS_NTZ_RE).match(s)
    if not m:
        raise ValueError(s)
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = m.group(7)
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    value = dt.datetime(year, month, day, hour, minute, second, micro)
    if kind == "timestamp_ntz":
        return value
    return value.replace(tzinfo=_offset(m.group(8))).astimezone(dt.UTC)


def _offset(text: str | None) -> dt.tzinfo:
    if not text or text == "Z":
        return dt.UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
    return dt.timezone(sign * dt.timedelta(minutes=minutes))


# ---------------------------------------------------------------- vectorised parse

_PATTERNS = {
    "boolean": _BOOL_PATTERN,
    "float": _FLOAT_PATTERN,
    "double": _FLOAT_PATTERN,
    "decimal": _DECIMAL_PATTERN,
    "date": _DATE_PATTERN,
    "timestamp": _TS_PATTERN,
    "timestamp_ntz": _TS_NTZ_PATTERN,
    **{k: _INT_PATTERN for k in _INT_RANGES},
}


def _fail_at(
    values: pa.Array | pa.ChunkedArray, bad: pa.Array | pa.ChunkedArray, dtype: DataType
) -> CorruptLogError:
    index = pc.index(bad, True).as_py()
    return _corrupt(values[index].as_py(), dtype)


def partition_column_to_arrow(
    values: pa.Array | pa.ChunkedArray, dtype: DataType
) -> pa.Array | pa.ChunkedArray:
    """A column of serialized partition values as a typed Arrow array, vectorised.

    Nulls and empty strings become nulls; an unparseable value raises CorruptLogError
    naming it. Accepts the same grammar as ``parse_partition_value``.
    """
    kind = _kind(dtype)
    target = to_arrow_type(dtype)
    if pa.types.is_dictionary(values.type):
        values = (
            values.dictionary_decode()
            if isinstance(values, pa.Array)
            else pc.cast(values, values.type.value_type)
        )
    if pa.types.is_null(values.type):
        return pc.cast(values, target)
    if not pa.types.is_string(values.type):
        values = pc.cast(values, pa.string())
    values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
    if kind == "string":
        return values
    if kind == "binary":
        return pc.cast(values, pa.binary())

    bad = pc.invert(pc.match_substring_regex(values, _PATTERNS[kind]))
    if pc.any(bad).as_py():
        raise _fail_at(values, bad, dtype)
    text = values
    if kind in _INT_RANGES:
        text = pc.replace_substring_regex(text, r"^\+", "")
    elif kind in ("timestamp", "timestamp_ntz"):
        text = pc.replace_substring_regex(text, _LONG_FRACTION, r"\1")
        if kind == "timestamp":
            has_offset = pc.match_substring_regex(text, _OFFSET_PATTERN)
            text = pc.if_else(has_offset, text, pc.binary_join_element_wise(text, "Z", ""))
    elif kind == "boolean":
        text = pc.utf8_lower(text)
    try:
        if kind == "float":  # via double, exactly as the scalar parse rounds
            return pc.cast(pc.cast(text, pa.float64()), pa.float32())
        result = _arrow_cast(text, kind, target)
    except (pa.ArrowInvalid, OverflowError):
        # Out of range, or a spelling Arrow's parser declines (such as "0E40" for a
        # decimal): the scalar parse names the bad value or reads them all.
        return _parse_each(values, dtype, target)
    if kind in _RANGES:
        low, high = _RANGES[kind]
        outside = pc.or_(pc.less(result, low.cast(target)), pc.greater(result, high.cast(target)))
        if pc.any(outside).as_py():
            raise _fail_at(values, outside, dtype)
    return result


def _arrow_cast(
    text: pa.Array | pa.ChunkedArray, kind: str, target: pa.DataType
) -> pa.Array | pa.ChunkedArray:
    """``pc.cast(text, target)``, declining (ArrowInvalid) what that cast misreads.

    pc.cast(string -> decimal128) rescales from the parsed scale (fraction digits minus
    exponent) with an unchecked table of 39 powers of ten: "0e-99999999" segfaults,
    "1e-39" reads garbage (0 for decimal(38, 0)); and more than 38 digits wrap silently
    (2**128 + 1 gives 1). Without an exponent and within 38 digits it is exact.
    """
    if kind == "decimal" and pc.any(pc.match_substring_regex(text, _ARROW_UNSAFE_DECIMAL)).as_py():
        raise pa.ArrowInvalid("a decimal spelling pyarrow's cast misreads")
    return pc.cast(text, target)


def _parse_each(
    values: pa.Array | pa.ChunkedArray, dtype: DataType, target: pa.DataType
) -> pa.Array | pa.ChunkedArray:
    parsed = [parse_partition_value(s, dtype) for s in values.to_pylist()]
    array = pa.array(parsed, target)
    return pa.chunked_array([array]) if isinstance(values, pa.ChunkedArray) else array


# Calendar range Python (and Spark) represent: years 1 to 9999.
_RANGES = {
    "date": (pa.scalar(dt.date(1, 1, 1)), pa.scalar(dt.date(9999, 12, 31))),
    "timestamp": (
        pa.scalar(dt.datetime(1, 1, 1, tzinfo=dt.UTC), pa.timestamp("us", "UTC")),
        pa.scalar(dt.datetime.max.replace(tzinfo=dt.UTC), pa.timestamp("us", "UTC")),
    ),
    "timestamp_ntz": (pa.scalar(dt.datetime(1, 1, 1)), pa.scalar(dt.datetime.max)),
}


# ------------------------------------------------------------------ Hive-style paths

# Characters Hive (and Spark's ExternalCatalogUtils.escapePathName) escape as %XX.
_ESCAPED = frozenset(chr(c) for c in range(0x01, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")


def escape_path_name(name: str) -> str:
    """Escape a partition column name or value for a directory name, as Spark does."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


_HEX = frozenset("0123456789abcdefABCDEF")


def unescape_path_name(name: str) -> str:
    """Inverse of ``escape_path_name``: ``%XX`` becomes the character, anything else stays."""
    out: list[str] = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "%" and i + 2 < len(name) and name[i + 1] in _HEX and name[i + 2] in _HEX:
            out.append(chr(int(name[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def hive_partition_path(
    partition_values: dict[str, str | None], partition_columns: list[str]
) -> str:
    """``col=value/`` directories for a file (empty for an unpartitioned table);
    null and empty values are ``__HIVE_DEFAULT_PARTITION__``."""
    parts = []
    for column in partition_columns:
        value = partition_values.get(column)
        text = escape_path_name(value) if value else HIVE_DEFAULT_PARTITION
        parts.append(f"{escape_path_name(column)}={text}/")
    return "".join(parts)


def parse_hive_partition_path(path: str) -> dict[str, str | None]:
    """Partition values spelled by the ``col=value`` segments of a relative path (a
    directory or a file path; segments without ``=``, such as the file name or a
    random prefix, are skipped)."""
    values: dict[str, str | None] = {}
    for segment in path.split("/"):
        if "=" not in segment:
            continue
        column, _, raw = segment.partition("=")
        value = None if raw == HIVE_DEFAULT_PARTITION else unescape_path_name(raw)
        values[unescape_path_name(column)] = value
    return values
