"""Spark's coercion of a literal against a column type, as file skipping needs it.

``comparison_type`` is the type Spark compares a column of a given Arrow type with the given
literals in (None where the pairing is not modelled: then nothing is proven);
``literal_scalar`` is a literal as an Arrow scalar of that type; ``timestamp_micros`` places
a timestamp literal on a column's time line (UTC instants, or wall clock for
``timestamp_ntz``; naive literals in the session time zone).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal, localcontext
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa

from delta_pyspark.core.expressions.casts import parse_date, parse_timestamp


def plain_type(typ: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return pa.string()
    if pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        return pa.binary()
    return typ


def is_number(v: Any) -> bool:
    return isinstance(v, int | float | Decimal) and not isinstance(v, bool)


def comparison_type(typ: pa.DataType, values: list[Any]) -> pa.DataType | None:
    if pa.types.is_integer(typ) or pa.types.is_decimal(typ):
        return _exact_comparison_type(typ, values)
    if pa.types.is_floating(typ):
        return pa.float64()
    if pa.types.is_string(typ):
        return typ if all(isinstance(v, str) for v in values) else None
    if pa.types.is_binary(typ):
        return typ if all(isinstance(v, bytes) for v in values) else None
    if pa.types.is_boolean(typ):
        return typ if all(isinstance(v, bool) for v in values) else None
    if pa.types.is_date(typ):
        if all(isinstance(v, dt.date) and not isinstance(v, dt.datetime) for v in values):
            return pa.date32()
        if all(isinstance(v, str) for v in values):
            return pa.date32()
        if all(isinstance(v, dt.datetime) and v.tzinfo is None for v in values):
            return pa.timestamp("us")  # DATE vs TIMESTAMP compares as timestamps
        return None
    if pa.types.is_timestamp(typ):
        return pa.timestamp("us", tz=typ.tz)
    return None


def _exact_comparison_type(typ: pa.DataType, values: list[Any]) -> pa.DataType | None:
    """``comparison_type`` of an integer or decimal column."""
    if not all(is_number(v) or isinstance(v, str) for v in values):
        return None
    nums = [number_of(v) for v in values]
    if any(n is None for n in nums):
        return None
    if any(isinstance(n, float) for n in nums):
        return pa.float64()  # Spark compares exact numbers with a double as doubles
    scale = max([typ.scale if pa.types.is_decimal(typ) else 0] + [_scale(n) for n in nums])  # type: ignore[arg-type]
    if pa.types.is_integer(typ) and scale == 0:
        return pa.int64()
    digits = (typ.precision - typ.scale) if pa.types.is_decimal(typ) else 19
    if digits + scale > 38:
        return None
    return pa.decimal128(38, scale)


def number_of(v: Any) -> int | float | Decimal | None:
    if isinstance(v, str):
        text = v.strip()
        try:
            return int(text)
        except ValueError:
            return None  # Spark's string-to-number coercion varies with ANSI mode
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _scale(n: int | float | Decimal) -> int:
    if isinstance(n, Decimal):
        exponent = n.as_tuple().exponent
        return max(0, -exponent) if isinstance(exponent, int) else 0
    return 0


def literal_scalar(v: Any, typ: pa.DataType, cmp_type: pa.DataType, tz: ZoneInfo) -> pa.Scalar:
    if pa.types.is_timestamp(cmp_type):
        return pa.scalar(timestamp_micros(v, cmp_type.tz, tz), cmp_type)
    if pa.types.is_date(cmp_type):
        return pa.scalar(parse_date(v) if isinstance(v, str) else v, cmp_type)
    if pa.types.is_floating(cmp_type):
        return pa.scalar(float(number_of(v)), cmp_type)  # type: ignore[arg-type]
    if pa.types.is_decimal(cmp_type) or pa.types.is_integer(cmp_type):
        n = number_of(v)
        if pa.types.is_integer(cmp_type):
            return pa.scalar(int(n), cmp_type)  # type: ignore[arg-type]
        with localcontext(prec=100):
            exact = Decimal(n).quantize(Decimal(1).scaleb(-cmp_type.scale))  # type: ignore[arg-type]
        return pa.scalar(exact, cmp_type)
    return pa.scalar(v, cmp_type)


def timestamp_micros(v: Any, column_tz: str | None, session: ZoneInfo) -> int:
    """A literal as microseconds on the column's time line (UTC instants or wall clock)."""
    if isinstance(v, str):
        v = parse_timestamp(v)
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day)
    if not isinstance(v, dt.datetime):
        raise TypeError("not a timestamp")
    if column_tz is None:  # timestamp_ntz: compare wall clocks
        if v.tzinfo is not None:
            raise TypeError("zoned literal against timestamp_ntz")
        base = dt.datetime(1970, 1, 1)
    else:
        if v.tzinfo is None:
            v = v.replace(tzinfo=session)
        base = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    delta = v - base
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
