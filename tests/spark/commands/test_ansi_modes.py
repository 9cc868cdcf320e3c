"""Delta statements under both ANSI settings. The suite runs with Spark's default (ANSI on:
overflow, invalid casts and division by zero fail the statement); users who turn it off get
Spark's lenient semantics in Delta's DML too, and a failed statement commits nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import ArithmeticException, NumberFormatException

from delta_pyspark.core.snapshot.delta_log import DeltaLog

ROWS = [(1, 2_000_000_000, "7"), (2, 5, "x")]


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, "id INT, v INT, s STRING").write.format("delta").save(path)
    return path


def _rows(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _unchanged(spark: Any, path: str) -> None:
    assert DeltaLog(path).snapshot().version == 0
    assert _rows(spark, path) == ROWS


def test_ansi_is_on_in_this_suite(spark: Any) -> None:
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"


def test_overflow_in_update(spark: Any, conf: Callable[[str, str], None], table: str) -> None:
    with pytest.raises(ArithmeticException, match="ARITHMETIC_OVERFLOW"):
        spark.sql(f"UPDATE delta.`{table}` SET v = v * 2")
    _unchanged(spark, table)
    conf("spark.sql.ansi.enabled", "false")
    spark.sql(f"UPDATE delta.`{table}` SET v = v * 2")
    assert _rows(spark, table) == [(1, -294_967_296, "7"), (2, 10, "x")]  # wrapped


def test_invalid_cast_in_delete(spark: Any, conf: Callable[[str, str], None], table: str) -> None:
    with pytest.raises(NumberFormatException, match="CAST_INVALID_INPUT"):
        spark.sql(f"DELETE FROM delta.`{table}` WHERE CAST(s AS INT) = 7")
    _unchanged(spark, table)
    conf("spark.sql.ansi.enabled", "false")
    spark.sql(f"DELETE FROM delta.`{table}` WHERE CAST(s AS INT) = 7")  # 'x' casts to NULL
    assert _rows(spark, table) == [(2, 5, "x")]


def test_division_by_zero_in_merge(
    spark: Any, conf: Callable[[str, str], None], table: str
) -> None:
    merge = (
        f"MERGE INTO delta.`{table}` t USING (SELECT 2 AS id, 0 AS d) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v DIV s.d"
    )
    with pytest.raises(ArithmeticException, match="DIVIDE_BY_ZERO"):
        spark.sql(merge)
    _unchanged(spark, table)
    conf("spark.sql.ansi.enabled", "false")
    spark.sql(merge)
    assert _rows(spark, table) == [(1, 2_000_000_000, "7"), (2, None, "x")]
