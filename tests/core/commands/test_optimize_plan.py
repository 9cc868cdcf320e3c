"""OPTIMIZE planning without Spark: sizes, candidates and delta-spark's bin-packing."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from delta_pyspark.core.commands.optimize_plan import (
    GIB,
    KIB,
    MIB,
    bin_rows,
    block_bits,
    compaction_candidates,
    deleted_ratio,
    deleted_rows,
    has_deletion_vector,
    lookup_block_bits,
    num_records,
    pack_bins,
    parse_bytes,
    partition_keys,
    range_bits,
    size_percentiles,
    size_summary,
    split_blocks,
)
from delta_pyspark.core.protocol.actions import ADD_SCHEMA, file_actions_to_arrow
from delta_pyspark.exceptions import DeltaIllegalArgumentException


def _dv(cardinality: int) -> dict[str, Any]:
    return {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": cardinality,
    }


def _files(specs: list[tuple[int, dict[str, str | None], int | None, int | None]]) -> pa.Table:
    """(size, partition values, numRecords or None, deleted rows or None) per file."""
    rows = []
    for i, (size, parts, records, deleted) in enumerate(specs):
        add: dict[str, Any] = {
            "path": f"f{i}.parquet",
            "partitionValues": parts,
            "size": size,
            "modificationTime": 0,
            "dataChange": True,
        }
        if records is not None:
            add["stats"] = json.dumps({"numRecords": records})
        if deleted is not None:
            add["deletionVector"] = _dv(deleted)
        rows.append(add)
    return file_actions_to_arrow(rows, ADD_SCHEMA)


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        ("134217728", 1, 128 * MIB),
        (1024, 1, KIB),
        ("128m", 1, 128 * MIB),
        ("128mb", 1, 128 * MIB),
        ("1g", 1, GIB),
        (" 2 GiB ", 1, 2 * GIB),
        ("512k", 1, 512 * KIB),
        ("128", MIB, 128 * MIB),  # delta-spark's bytesConf(MiB): a bare number is MiB
        ("1.5k", 1, 1536),
    ],
)
def test_parse_bytes(text: Any, unit: int, expected: int) -> None:
    assert parse_bytes(text, unit) == expected


@pytest.mark.parametrize("text", ["", "abc", "12 parsecs", "-5", "0"])
def test_parse_bytes_rejects_garbage(text: str) -> None:
    with pytest.raises(DeltaIllegalArgumentException, match="invalid size"):
        parse_bytes(text)


def test_pack_bins_is_greedy_by_size_per_partition() -> None:
    files = _files(
        [
            (40, {"p": "a"}, 10, None),  # 0
            (10, {"p": "a"}, 10, None),  # 1
            (30, {"p": "a"}, 10, None),  # 2
            (20, {"p": "a"}, 10, None),  # 3
            (50, {"p": "b"}, 10, None),  # 4
            (5, {"p": "b"}, 10, None),  # 5
        ]
    )
    bins = pack_bins(files, max_bin_size=60)
    # partition a sorted by size: 10, 20, 30 (=60) | 40 ; partition b: 5, 50 (=55)
    assert [(dict(b.partition), b.rows, b.size) for b in bins] == [
        ({"p": "a"}, (1, 3, 2), 60),
        ({"p": "b"}, (5, 4), 55),
    ]  # the lone 40-byte file of partition a is dropped: rewriting it alone gains nothing
    assert bin_rows(bins) == [1, 3, 2, 5, 4]


def test_single_file_bins_survive_only_where_asked() -> None:
    files = _files([(10, {}, 5, None), (100, {}, 5, 2), (100, {}, 5, None)])
    assert pack_bins(files, max_bin_size=50) == []
    keep = pa.array([False, True, False])
    bins = pack_bins(files, max_bin_size=50, keep_single=keep)
    assert [b.rows for b in bins] == [(1,)]


def test_oversized_file_gets_its_own_bin_and_candidates_filter() -> None:
    files = _files([(500, {}, 1, None), (10, {}, 1, None), (20, {}, 1, None)])
    candidates = pa.array([True, True, True])
    bins = pack_bins(files, candidates, max_bin_size=100, keep_single=pa.array([True] * 3))
    assert [b.rows for b in bins] == [(1, 2), (0,)]
    only_small = pack_bins(files, pa.array([False, True, True]), max_bin_size=100)
    assert [b.rows for b in only_small] == [(1, 2)]


def test_whole_partition_bins_for_zorder() -> None:
    files = _files(
        [(10, {"p": None}, 1, None), (20, {"p": "x"}, 1, None), (5, {"p": None}, 1, None)]
    )
    bins = pack_bins(files, keep_single=pa.array([True] * 3))
    assert [(dict(b.partition), b.rows) for b in bins] == [
        ({"p": "x"}, (1,)),
        ({"p": None}, (2, 0)),
    ]


def test_deletion_vector_ratios_and_candidates() -> None:
    files = _files(
        [
            (1000, {}, 100, None),  # big, no DV
            (1000, {}, 100, 3),  # big, 3% deleted
            (1000, {}, 100, 10),  # big, 10% deleted
            (10, {}, 100, None),  # small
            (1000, {}, None, 1),  # DV but no row count: assume worth purging
        ]
    )
    assert has_deletion_vector(files).to_pylist() == [False, True, True, False, True]
    assert deleted_rows(files).to_pylist() == [0, 3, 10, 0, 1]
    assert num_records(files).to_pylist() == [100, 100, 100, 100, None]
    assert deleted_ratio(files).to_pylist() == [0.0, 0.03, 0.1, 0.0, 1.0]
    assert compaction_candidates(files, 500, 0.05).to_pylist() == [False, False, True, True, True]
    assert compaction_candidates(files, 500, 0.0).to_pylist() == [False, True, True, True, True]


def test_num_records_reads_quoted_and_plain_counts() -> None:
    files = _files([(1, {}, None, None), (1, {}, None, None)])
    stats = pa.array(['{"numRecords":"42","minValues":{}}', '{"numRecords": 7}'])
    files = files.set_column(files.schema.get_field_index("stats"), "stats", stats)
    assert num_records(files).to_pylist() == [42, 7]


def test_partition_keys_ignore_map_order() -> None:
    files = _files([(1, {"a": "1", "b": "2"}, 1, None), (1, {"b": "2", "a": "1"}, 1, None)])
    keys = partition_keys(files)
    assert keys[0] == keys[1] == (("a", "1"), ("b", "2"))


def test_size_summary_and_percentiles() -> None:
    assert size_summary([]) == {
        "min": None,
        "max": None,
        "avg": 0.0,
        "totalFiles": 0,
        "totalSize": 0,
    }
    assert size_summary([10, 30, 20]) == {
        "min": 10,
        "max": 30,
        "avg": 20.0,
        "totalFiles": 3,
        "totalSize": 60,
    }
    assert size_percentiles([]) == {}
    assert size_percentiles([40, 10, 30, 20]) == {
        "minFileSize": 10,
        "p25FileSize": 10,
        "p50FileSize": 20,
        "p75FileSize": 30,
        "maxFileSize": 40,
    }


def test_empty_file_list() -> None:
    files = _files([])
    assert pack_bins(files) == []
    assert compaction_candidates(files, 10, 0.05).to_pylist() == []
    assert deleted_ratio(files).to_pylist() == []


# ----------------------------------------------------------------------------- Z-order cuts


def test_split_blocks_cuts_at_aligned_cells() -> None:
    # 256 blocks (a 16 x 16 grid in Morton order), equal rows: quadrants exactly
    assert split_blocks(list(range(256)), [10] * 256, 4) == [64, 128, 192]
    # jittered rows: cuts still land on aligned boundaries near the equal-count points
    rng = np.random.default_rng(1)
    counts = rng.integers(5, 15, 256)
    assert split_blocks(list(range(256)), counts, 4) == [64, 128, 192]
    cuts = split_blocks(list(range(256)), counts, 10)
    assert len(cuts) == 9 and cuts == sorted(set(cuts))
    assert all(c % 8 == 0 for c in cuts)  # never inside an 8-block cell
    rows = np.add.reduceat(counts, [0, *cuts])
    assert rows.max() <= 1.5 * rows.min()


def test_split_blocks_sparse_and_unsorted_input() -> None:
    # only three blocks hold rows; a cut may fall anywhere between neighbours: the most
    # aligned spot (a power of two) is chosen
    assert split_blocks([200, 5, 9], [1, 1, 1], 3) == [8, 128]
    assert split_blocks([200, 5, 9], [1, 1, 1], 5) == [8, 128]  # never more files than blocks
    assert split_blocks([3], [100], 4) == []
    assert split_blocks([1, 2], [5, 5], 1) == []


def test_split_blocks_keeps_every_block_in_one_file() -> None:
    rng = np.random.default_rng(7)
    blocks = np.sort(rng.choice(1 << 12, size=900, replace=False))
    counts = rng.integers(1, 50, size=900)
    cuts = split_blocks(blocks, counts, 16)
    files = np.searchsorted(np.asarray(cuts), blocks, "right")
    assert files.min() == 0 and files.max() == len(cuts) == 15
    assert (np.diff(files) >= 0).all()  # a file is a contiguous run of the Z-order


def test_block_and_range_bits() -> None:
    assert block_bits(1, 20) == 0
    assert block_bits(2, 20) == 7  # about 64 blocks per file
    assert block_bits(100, 20) == 13
    assert block_bits(100, 10) == 10  # never more bits than the Z-value has
    assert block_bits(10**6, 40) == 16  # a 65,536-entry lookup at most
    assert range_bits(2, 16, 1000) == 5  # 10 Z bits: 64 cells per file
    assert range_bits(2, 100, 1000) == 7
    assert range_bits(2, 10**6, 1000) == 8  # at most 16 search steps in all
    assert range_bits(4, 100, 1000) == 4
    assert range_bits(1, 10**6, 1000) == 9  # log2(rangeId.max)
    assert range_bits(2, 100, 8) == 3


def test_lookup_block_bits_stay_within_budget() -> None:
    assert lookup_block_bits([1, 4, 100], 20) == [0, 8, 13]
    bits = lookup_block_bits([1000] * 100, 20, max_entries=1 << 18)
    assert sum(1 << b for b in bits) <= 1 << 18
    assert all(1 << b >= 2 * 1000 for b in bits)  # still several blocks per file
    # when even two blocks per file do not fit, it stops there rather than lose cuts
    assert lookup_block_bits([1000] * 10, 20, max_entries=16) == [11] * 10
