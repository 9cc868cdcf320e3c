"""Every golden table with ``expected/`` reads back equal to the reference reader's
output (a multiset of rows, same column names); broken ones are refused by type."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from data_paths import GOLDEN
from delta_pyspark.exceptions import DeltaError

# Tables of more rows than this are compared in Spark (one has a million rows).
BIG = 100_000
WITH_EXPECTED = sorted(p.name for p in GOLDEN.iterdir() if (p / "expected").is_dir())


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((_norm(k), _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    if hasattr(value, "asDict"):
        return tuple(sorted((k, _norm(v)) for k, v in value.asDict().items()))
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _rows(df: Any) -> Counter:
    cols = sorted(df.columns)
    return Counter(tuple(_norm(r[c]) for c in cols) for r in df.select(*cols).collect())


@pytest.mark.parametrize("name", WITH_EXPECTED)
def test_golden_table_reads_as_expected(spark: Any, name: str) -> None:
    table = GOLDEN / name / "delta"
    try:
        actual = spark.read.format("delta").load(str(table))
    except DeltaError as e:
        pytest.fail(f"{name}: refused with {type(e).__name__}: {e}")
    expected = spark.read.parquet(str(GOLDEN / name / "expected"))
    assert sorted(c.lower() for c in actual.columns) == sorted(c.lower() for c in expected.columns)
    rows = expected.count()
    if rows > BIG:  # compared in Spark: the same multiset, without collecting it
        cols = sorted(expected.columns, key=str.lower)
        actual, expected = actual.select(*cols), expected.select(*cols)
        assert actual.count() == rows
        assert actual.exceptAll(expected).isEmpty() and expected.exceptAll(actual).isEmpty()
    else:
        assert _rows(actual) == _rows(expected)
