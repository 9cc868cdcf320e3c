"""Phase 1's positions on the driver: grouping by file, repeated positions, distinct ids
(pure Arrow and numpy: no Spark session)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from delta_pyspark.spark.commands.merge.matching import _distinct, _repeats
from delta_pyspark.spark.commands.rewrite import group_by_number
from delta_pyspark.spark.files.scan import FILE_PATH


def _summary(rows: list[tuple[str, int, bool, list[int]]]) -> pa.Table:
    columns = [
        pa.array([r[0] for r in rows]),
        pa.array([r[1] for r in rows], pa.int32()),
        pa.array([r[2] for r in rows]),
        pa.array([r[3] for r in rows], pa.list_(pa.int64())),  # as Spark's toArrow gives it
    ]
    return pa.table(columns, names=[FILE_PATH, "a", "m", "ids"])


def test_group_by_number_keeps_each_groups_order_and_absent_numbers() -> None:
    numbers = np.array([2, 0, 2, 0, 2])
    groups = group_by_number(numbers, np.array([50, 10, 40, 30, 60]), 4)
    assert [g.tolist() for g in groups] == [[10, 30], [], [50, 40, 60], []]
    assert [g.tolist() for g in group_by_number(np.array([], np.int64), np.array([]))] == [[]]


def test_distinct_sorts_and_drops_repeats() -> None:
    assert _distinct(np.array([7, 3, 7, 1, 3])).tolist() == [1, 3, 7]
    assert _distinct(np.array([], np.int64)).tolist() == []


def test_a_position_repeats_only_within_one_files_matched_rows() -> None:
    # position 5 of a.parquet in two clauses' rows: a target row matched twice
    assert _repeats(_summary([("a.parquet", 0, True, [5, 3]), ("a.parquet", 1, True, [5])]))
    # the same position in two files, or among unmatched rows, is no repeat
    assert not _repeats(_summary([("a.parquet", 0, True, [5, 3]), ("b.parquet", 0, True, [5])]))
    assert not _repeats(_summary([("a.parquet", 0, True, [5]), ("a.parquet", -1, False, [5])]))
    assert not _repeats(_summary([("a.parquet", 0, True, [])]))
