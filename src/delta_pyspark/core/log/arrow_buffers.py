"""Arrow arrays and scalars built from buffers, never from Python objects.

Building Arrow data from Python objects (``pa.array``, ``pa.scalar``, ``from_pylist``, a
Python literal passed to a compute function) makes pyarrow import pandas on first use,
which takes longer and more memory than loading a 100,000-file snapshot. Snapshot
loading (log replay, commit parsing, validation) therefore builds its Arrow data with
these helpers, or from Parquet or JSON.
"""

from __future__ import annotations

import struct
import threading
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


_pool_lock = threading.Lock()
_pool_users = 0
_pool_saved: pa.MemoryPool | None = None
_jemalloc: pa.MemoryPool | None = None


def _jemalloc_pool() -> pa.MemoryPool:
    """pyarrow's jemalloc pool, set (once, before its first use here) to give freed pages
    back at once: its default time-based decay only runs when jemalloc is called again,
    which after a load may be never, so a dropped snapshot would stay resident."""
    global _jemalloc
    if _jemalloc is None:
        pa.jemalloc_set_decay_ms(0)
        _jemalloc = pa.jemalloc_memory_pool()
    return _jemalloc


@contextmanager
def bulk_allocations() -> Iterator[None]:
    """Arrow allocations made inside go to jemalloc when pyarrow's default pool is mimalloc.

    Decoding a large checkpoint allocates and frees hundreds of MiB of buffers; mimalloc
    (pyarrow's default) returns freed memory to the kernel and faults it back in, which
    on Linux costs more system time than the decoding itself (a 1,000,000-file checkpoint:
    about 2 s of system time against 0.3 s with jemalloc, and a higher peak). Buffers
    remember their pool, so those made here are freed correctly whatever the default is
    later. The default pool is swapped only while some load is inside (nested and
    concurrent loads share one swap) and only from mimalloc, so a pool the application
    chose is left alone.
    """
    global _pool_users, _pool_saved
    with _pool_lock:
        if _pool_users == 0:
            current = pa.default_memory_pool()
            if current.backend_name == "mimalloc" and "jemalloc" in pa.supported_memory_backends():
                _pool_saved = current
                pa.set_memory_pool(_jemalloc_pool())
        _pool_users += 1
    try:
        yield
    finally:
        with _pool_lock:
            _pool_users -= 1
            if _pool_users == 0 and _pool_saved is not None:
                pa.set_memory_pool(_pool_saved)
                _pool_saved = None
