"""Per-file masks of file skipping, and their algebra.

A ``Mask`` is a per-file boolean array (never null) or a constant that stands for every file;
the functions combine them without materialising constants. ``maybe``/``surely`` turn a
comparison with an unknown (null) bound into "possibly" or "not proven".
"""

from __future__ import annotations

from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

Mask: TypeAlias = pa.Array | bool  # a per-file boolean array (never null), or a constant


def mask_and(a: Mask, b: Mask) -> Mask:
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return pc.and_(a, b)


def mask_or(a: Mask, b: Mask) -> Mask:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return pc.or_(a, b)


def mask_not(a: Mask) -> Mask:
    return (not a) if isinstance(a, bool) else pc.invert(a)


def maybe(cond: pa.Array | None) -> Mask:
    """A comparison result where null (unknown bound) counts as possibly true."""
    return True if cond is None else pc.fill_null(cond, True)


def surely(cond: pa.Array | None) -> Mask:
    """A comparison result where null (unknown bound) counts as not proven."""
    return False if cond is None else pc.fill_null(cond, False)


_CMP = {
    "=": pc.equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def compare_bound(op: str, bound: pa.Array | None, value: pa.Scalar) -> pa.Array | None:
    return None if bound is None else _CMP[op](bound, value)


def materialise(mask: Mask, n: int) -> pa.BooleanArray:
    if isinstance(mask, bool):
        nulls = pa.nulls(n, pa.bool_())
        return pc.is_null(nulls) if mask else pc.is_valid(nulls)
    return mask
