"""Arrow arrays and scalars built from buffers, never from Python objects.

Building Arrow data from Python objects (``pa.array``, ``pa.scalar``, ``from_pylist``, a
Python literal passed to a compute function) makes pyarrow import pandas on first use,
which takes longer and more memory than loading a 100,000-file snapshot. Snapshot
loading (log replay, commit parsing, validation) therefore builds its Arrow data with
these helpers, or from Parquet or JSON.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from itertools import accumulate

import pyarrow as pa


def utf8_scalar(value: str) -> pa.StringScalar:
    """A string scalar built from buffers (see the module docstring)."""
    data = value.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


def combined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``column`` as one array, copying only when it has several chunks (and, unlike
    ``combine_chunks``, without Python objects when it has none: see above)."""
    if isinstance(column, pa.Array):
        return column
    if column.num_chunks == 1:
        return column.chunk(0)
    if column.num_chunks == 0:
        return pa.nulls(0, column.type)
    return column.combine_chunks()


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()`` without going through Python objects (see the module docstring)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def int64_array(values: Sequence[int]) -> pa.Array:
    """An int64 array built from a buffer (see the module docstring)."""
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(array("q", values))])


def int64_scalar(value: int) -> pa.Int64Scalar:
    return int64_array([value])[0]


def all_false(n: int) -> pa.Array:
    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bytes((n + 7) // 8))])


def _validity(flags: list[bool]) -> pa.Buffer:
    bits = int("".join("1" if f else "0" for f in reversed(flags)) or "0", 2)
    return pa.py_buffer(bits.to_bytes((len(flags) + 7) // 8, "little"))


def string_array(values: Sequence[str | None]) -> pa.Array:
    """A string array built from buffers (see the module docstring)."""
    data = [b"" if v is None else v.encode() for v in values]
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, data)))  # OverflowError past 2 GiB
    nulls = values.count(None)
    validity = _validity([v is not None for v in values]) if nulls else None
    return pa.Array.from_buffers(
        pa.string(),
        len(values),
        [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
        null_count=nulls,
    )
