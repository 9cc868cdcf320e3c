"""Planning OPTIMIZE: which files to rewrite and how to group them (Spark-free).

This is delta-spark's bin-packing. Per partition, the candidate files (sorted by size,
smallest first) are packed greedily into bins of at most ``max_bin_size`` bytes; each
bin is rewritten as one new file. A bin holding a single file is dropped unless
rewriting that file purges soft-deleted rows (it carries a deletion vector), which is
what makes OPTIMIZE idempotent: run again without new data, it finds nothing to do.

Everything works on the snapshot's Arrow file list; loops are over files, never rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.exceptions import DeltaIllegalArgumentException

PartitionKey = tuple[tuple[str, str | None], ...]
"""A file's partition values as sorted ``(physical column, value)`` pairs."""

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

_UNITS = {
    "b": 1,
    "k": KIB,
    "kb": KIB,
    "kib": KIB,
    "m": MIB,
    "mb": MIB,
    "mib": MIB,
    "g": GIB,
    "gb": GIB,
    "gib": GIB,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_bytes(value: str | int | float, default_unit: int = 1) -> int:
    """A byte size written as Spark writes them (``134217728``, ``128m``, ``1g``, ``100mb``).

    A bare number counts in ``default_unit`` (delta-spark's ``bytesConf(MiB)`` settings,
    such as ``optimizeWrite.binSize``, read ``128`` as 128 MiB).
    """
    match = _SIZE.fullmatch(str(value))
    if match is None:
        raise DeltaIllegalArgumentException(
            f"invalid size {value!r}: expected a number of bytes or a size such as 128mb or 1g"
        )
    number, unit = match.groups()
    factor = _UNITS.get(unit.lower()) if unit else default_unit
    if factor is None:
        raise DeltaIllegalArgumentException(f"invalid size {value!r}: unknown unit {unit!r}")
    size = int(float(number) * factor)
    if size <= 0:
        raise DeltaIllegalArgumentException(f"invalid size {value!r}: must be positive")
    return size


@dataclass(frozen=True)
class Bin:
    """Files of one partition rewritten together: ``rows`` index the file table."""

    partition: PartitionKey
    rows: tuple[int, ...]
    size: int


def partition_keys(files: pa.Table) -> list[PartitionKey]:
    """Each file's partition values, as a hashable, order-independent key."""
    return [tuple(sorted(pv or [])) for pv in files.column("partitionValues").to_pylist()]


def num_records(files: pa.Table) -> pa.Array:
    """``numRecords`` from each file's stats (physical rows, before deletion vectors)."""
    stats = files.column("stats").combine_chunks() if files.num_rows else pa.array([], pa.string())
    found = pc.extract_regex(stats, r'"numRecords"\s*:\s*"?(?P<n>\d+)')
    return pc.cast(pc.struct_field(found, "n"), pa.int64())


def has_deletion_vector(files: pa.Table) -> pa.BooleanArray:
    dv = files.column("deletionVector").combine_chunks() if files.num_rows else None
    if dv is None:
        return pa.array([], pa.bool_())
    return pc.is_valid(dv)


def deleted_rows(files: pa.Table) -> pa.Array:
    """Rows each file's deletion vector removes (0 without one)."""
    if files.num_rows == 0:
        return pa.array([], pa.int64())
    dv = files.column("deletionVector").combine_chunks()
    return pc.fill_null(pc.cast(pc.struct_field(dv, "cardinality"), pa.int64()), 0)


def deleted_ratio(files: pa.Table) -> pa.Array:
    """Fraction of each file's rows its deletion vector removes.

    0 without a deletion vector; 1 when the file has one but no row count in its stats
    (unknown: assume it is worth purging).
    """
    if files.num_rows == 0:
        return pa.array([], pa.float64())
    deleted = pc.cast(deleted_rows(files), pa.float64())
    total = pc.cast(num_records(files), pa.float64())
    ratio = pc.divide(deleted, pc.if_else(pc.greater(total, 0), total, None))
    ratio = pc.fill_null(ratio, 1.0)
    return pc.if_else(has_deletion_vector(files), ratio, 0.0)


def compaction_candidates(
    files: pa.Table, min_file_size: int, max_deleted_ratio: float
) -> pa.BooleanArray:
    """Files OPTIMIZE may rewrite: smaller than ``min_file_size``, or with more than
    ``max_deleted_ratio`` of their rows deleted (whatever their size)."""
    if files.num_rows == 0:
        return pa.array([], pa.bool_())
    small = pc.less(files.column("size").combine_chunks(), min_file_size)
    return pc.or_(small, pc.greater(deleted_ratio(files), max_deleted_ratio))


def pack_bins(
    files: pa.Table,
    candidates: pa.BooleanArray | None = None,
    max_bin_size: float = math.inf,
    keep_single: pa.BooleanArray | None = None,
) -> list[Bin]:
    """Greedy per-partition bin-packing of the ``candidates`` (all files when None).

    A bin closes when the next file would push it past ``max_bin_size`` (a file larger
    than that gets a bin of its own). Single-file bins survive only where
    ``keep_single`` is true (default: never). Bins come out ordered by partition.
    """
    n = files.num_rows
    chosen = [True] * n if candidates is None else candidates.to_pylist()
    single = [False] * n if keep_single is None else keep_single.to_pylist()
    sizes = files.column("size").to_pylist()
    by_partition: dict[PartitionKey, list[int]] = {}
    for i, key in enumerate(partition_keys(files)):
        if chosen[i]:
            by_partition.setdefault(key, []).append(i)
    bins: list[Bin] = []
    for key in sorted(by_partition, key=_sortable):
        rows = sorted(by_partition[key], key=lambda i: (int(sizes[i] or 0), i))
        current: list[int] = []
        total = 0
        for i in rows:
            size = int(sizes[i] or 0)
            if current and total + size > max_bin_size:
                bins.append(Bin(key, tuple(current), total))
                current, total = [], 0
            current.append(i)
            total += size
        if current:
            bins.append(Bin(key, tuple(current), total))
    return [b for b in bins if len(b.rows) > 1 or (len(b.rows) == 1 and single[b.rows[0]])]


def _sortable(key: PartitionKey) -> tuple[Any, ...]:
    return tuple((name, value is None, value or "") for name, value in key)


def bin_rows(bins: Sequence[Bin]) -> list[int]:
    """Every file row the bins rewrite, bin after bin."""
    return [i for b in bins for i in b.rows]


def size_summary(sizes: Sequence[int]) -> dict[str, Any]:
    """delta-spark's ``FileSizeStats``: min, max, avg, totalFiles, totalSize."""
    if not sizes:
        return {"min": None, "max": None, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    total = int(sum(sizes))
    return {
        "min": int(min(sizes)),
        "max": int(max(sizes)),
        "avg": total / len(sizes),
        "totalFiles": len(sizes),
        "totalSize": total,
    }


def size_percentiles(sizes: Sequence[int]) -> dict[str, int]:
    """min/p25/p50/p75/max file size (nearest rank) for ``operationMetrics``."""
    if not sizes:
        return {}
    ordered = sorted(int(s) for s in sizes)

    def rank(q: float) -> int:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    return {
        "minFileSize": ordered[0],
        "p25FileSize": rank(0.25),
        "p50FileSize": rank(0.5),
        "p75FileSize": rank(0.75),
        "maxFileSize": ordered[-1],
    }


# ---------------------------------------------------------------------------------------------
# Z-order: cutting a partition's Z-ordered rows into files


def range_bits(num_columns: int, max_files: int, num_ranges: int) -> int:
    """Bits of range id per Z-order column: enough for ~64 Z-value cells per file, at
    most ``log2(num_ranges)`` and 16 bits over all columns. Each bit is one step of the
    per-row search; past ~16 steps Spark's generated code outgrows what the JVM compiles
    well and every row gets several times slower."""
    wanted = math.ceil((math.log2(max(1, max_files)) + 6) / num_columns)
    cap = max(1, min(int(math.log2(num_ranges)), 16 // num_columns))
    return max(1, min(wanted, cap))


def block_bits(num_files: int, z_bits: int) -> int:
    """How many leading Z-value bits make the blocks a bin's files are cut from: about 64
    blocks per file, at most 16 bits (a 65,536-entry lookup), 0 for a single file."""
    if num_files <= 1:
        return 0
    return min(z_bits, 16, max(6, math.ceil(math.log2(num_files)) + 6))


def lookup_block_bits(
    file_counts: Sequence[int], z_bits: int, max_entries: int = 1 << 20
) -> list[int]:
    """``block_bits`` per bin, coarsened (never below two blocks per file) until all
    bins' lookups together hold at most ``max_entries`` blocks."""
    bits = [block_bits(n, z_bits) for n in file_counts]
    floor = [
        min(b, math.ceil(math.log2(n)) + 1) if n > 1 else 0
        for b, n in zip(bits, file_counts, strict=True)
    ]
    while sum(1 << b for b, n in zip(bits, file_counts, strict=True) if n > 1) > max_entries:
        shrinkable = [i for i, (b, f) in enumerate(zip(bits, floor, strict=True)) if b > f]
        if not shrinkable:
            break
        for i in shrinkable:
            bits[i] -= 1
    return bits


def split_blocks(
    blocks: Sequence[int], counts: Sequence[int], num_files: int, tolerance: float = 0.25
) -> list[int]:
    """Where to cut Z-value blocks into ``num_files`` files of near-equal row counts.

    ``blocks`` are the leading bits of the Z-values present (any order), ``counts`` their
    rows. Each cut ideally falls one file's share of the remaining rows past the last cut;
    within ``tolerance`` of a file's rows around that point it moves to the most aligned
    block position available (the most trailing zero bits), so files cover whole aligned
    Z-order cells,
    whose min/max boxes are tight on every column, instead of spilling slivers into the
    next cell. Returns the first block position of every file but the first (ascending);
    a block's file is the number of cuts <= it.
    """
    import numpy as np

    order = np.argsort(np.asarray(blocks, dtype=np.int64), kind="stable")
    b = np.asarray(blocks, dtype=np.int64)[order]
    c = np.asarray(counts, dtype=np.int64)[order]
    if num_files <= 1 or len(b) <= 1:
        return []
    rows_before = np.cumsum(c)[:-1]  # rows before each gap (gap g sits before block g + 1)
    prev, nxt = b[:-1], b[1:]
    # highest differing bit of neighbours (exact: block numbers stay far below 2**53)
    level = (np.frexp((prev ^ nxt).astype(np.float64))[1] - 1).astype(np.int64)
    aligned = (nxt >> level) << level  # the most aligned position in (prev, next]
    total = float(c.sum())
    cuts: list[int] = []
    first = 0  # gaps before this one are taken
    consumed = 0.0
    for i in range(1, num_files):
        if first >= len(rows_before):
            break
        # aim a file's share of what is left past the last cut (not i / num_files of the
        # whole): an aligned cut then keeps the next one aligned, drift does not pile up
        per_file = (total - consumed) / (num_files - i + 1)
        target = consumed + per_file
        window = tolerance * per_file
        lo = max(first, int(np.searchsorted(rows_before, target - window, "left")))
        hi = int(np.searchsorted(rows_before, target + window, "right"))
        if lo < hi:
            distance = np.abs(rows_before[lo:hi] - target)
            best = lo + int(np.lexsort((distance, -level[lo:hi]))[0])
        else:
            near = int(np.searchsorted(rows_before, target, "left"))
            options = [g for g in (near - 1, near) if first <= g < len(rows_before)]
            if not options:
                continue
            best = min(options, key=lambda g: abs(rows_before[g] - target))
        cuts.append(int(aligned[best]))
        consumed = float(rows_before[best])
        first = best + 1
    return cuts
