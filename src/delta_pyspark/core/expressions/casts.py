"""Spark's cast rules for constants, as the predicate parser needs them.

``cast_literal`` gives the value Spark's ``CAST(<constant> AS <type>)`` has, for the types
file skipping models; ``parse_date``/``parse_timestamp`` read strings as Spark casts them to
DATE/TIMESTAMP; ``number_literal`` types a numeric literal as Spark's parser does. Anything
Spark would reject, or that depends on session settings, raises ``Unsupported`` (the parser
then keeps the sub-expression as ``Unknown``).
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any
from zoneinfo import ZoneInfo

from sqlglot import exp


class Unsupported(ValueError):
    """This sub-tree cannot be modelled (it becomes ``Unknown``)."""


_INT_RE = re.compile(r"^[+-]?\d+$")
_NUM_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE_RE = re.compile(r"^\s*([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[T ].*)?\s*$")
_TS_RE = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?"
    r"\s*(Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2})?|[A-Za-z_]+/[A-Za-z_/+-]+)?\s*$"
)
_INT_RANGES = {
    exp.DataType.Type.TINYINT: 8,
    exp.DataType.Type.SMALLINT: 16,
    exp.DataType.Type.INT: 32,
    exp.DataType.Type.BIGINT: 64,
}
_TIMESTAMP_TYPES = {
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPTZ,
    exp.DataType.Type.TIMESTAMPLTZ,
    exp.DataType.Type.DATETIME,
}


def number_literal(text: str) -> int | float | Decimal:
    if _INT_RE.match(text):
        return int(text)
    if not _NUM_RE.match(text):
        raise Unsupported
    if "e" in text or "E" in text:
        return float(text)
    return Decimal(text)  # Spark reads 1.5 as a DECIMAL literal


def cast_literal(value: Any, to: exp.DataType) -> Any:
    if value is None:
        return None
    t = to.this
    if t in _INT_RANGES:
        return _cast_int(value, _INT_RANGES[t])
    if t in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT):
        result = _cast_float(value)
        if t == exp.DataType.Type.FLOAT:
            result = struct.unpack("<f", struct.pack("<f", result))[0]
        return result
    if t == exp.DataType.Type.DECIMAL:
        return _cast_decimal(value, to)
    if t in (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR, exp.DataType.Type.TEXT):
        return _cast_string(value)
    if t == exp.DataType.Type.BOOLEAN:
        return _cast_bool(value)
    if t == exp.DataType.Type.DATE:
        return _cast_date(value)
    if t in _TIMESTAMP_TYPES:
        return _cast_timestamp(value, ntz=False)
    if t == exp.DataType.Type.TIMESTAMPNTZ:
        return _cast_timestamp(value, ntz=True)
    if t in (exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY):
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
    raise Unsupported


def _cast_int(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        raise Unsupported
    if isinstance(value, str):
        if not _INT_RE.match(value.strip()):
            raise Unsupported
        value = int(value.strip())
    elif isinstance(value, float | Decimal):
        if not Decimal(value).is_finite():
            raise Unsupported
        value = int(value)  # Spark truncates toward zero
    if not isinstance(value, int):
        raise Unsupported
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise Unsupported
    return value


def _cast_float(value: Any) -> float:
    if isinstance(value, bool):
        raise Unsupported
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUM_RE.match(text) or text in ("NaN", "Infinity", "-Infinity", "+Infinity"):
            return float(text.replace("Infinity", "inf"))
    raise Unsupported


def _cast_decimal(value: Any, to: exp.DataType) -> Decimal:
    params = [p.this for p in to.expressions]
    try:
        precision = int(params[0].this) if params else 10
        scale = int(params[1].this) if len(params) > 1 else 0
    except (AttributeError, ValueError, TypeError):
        raise Unsupported from None
    if isinstance(value, bool):
        raise Unsupported
    if isinstance(value, str):
        value = value.strip()
        if not _NUM_RE.match(value):
            raise Unsupported
    try:
        dec = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
        with localcontext(prec=100):
            dec = dec.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError, TypeError):
        raise Unsupported from None
    if not dec.is_finite() or len(dec.as_tuple().digits) > precision:
        raise Unsupported
    return dec


def _cast_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return format(value, "f") if isinstance(value, Decimal) else str(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    raise Unsupported


def _cast_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("t", "true", "y", "yes", "1"):
            return True
        if text in ("f", "false", "n", "no", "0"):
            return False
    raise Unsupported


def _cast_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise Unsupported  # would depend on the session time zone
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return parse_date(value)
    raise Unsupported


def _cast_timestamp(value: Any, ntz: bool) -> dt.datetime:
    if isinstance(value, dt.datetime):
        if ntz and value.tzinfo is not None:
            raise Unsupported
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        result = parse_timestamp(value)
        if ntz and result.tzinfo is not None:
            raise Unsupported
        return result
    raise Unsupported


def parse_date(text: str) -> dt.date:
    """Parse a date as Spark casts a string to DATE; ValueError if it is not one."""
    m = _DATE_RE.match(text)
    if not m:
        raise Unsupported
    try:
        return dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        raise Unsupported from None


def parse_timestamp(text: str) -> dt.datetime:
    """Parse a timestamp string; naive unless it has a zone (Z, offset, region); else ValueError."""
    m = _TS_RE.match(text)
    if not m:
        raise Unsupported
    year, month, day, hour, minute, sec, frac, zone = m.groups()
    micro = int((frac or "").ljust(6, "0")[:6] or 0)
    try:
        result = dt.datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(sec or 0), micro
        )
    except ValueError:
        raise Unsupported from None
    if zone is None:
        return result
    if zone in ("Z", "UTC", "GMT"):
        return result.replace(tzinfo=dt.UTC)
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        hours, minutes = (
            (int(digits[:-2] or 0), int(digits[-2:]))
            if len(digits) > 2
            else (
                int(digits),
                0,
            )
        )
        offset = dt.timedelta(hours=hours, minutes=minutes)
        return result.replace(tzinfo=dt.timezone(offset if zone[0] == "+" else -offset))
    try:
        return result.replace(tzinfo=ZoneInfo(zone))
    except Exception:
        raise Unsupported from None
