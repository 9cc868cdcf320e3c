"""Tables other writers made with the table features of issue 21 read through Spark with the
rows delta-rs's own reader (its SQL engine, which applies column mapping) returns: identity
columns (``checkpoint-v2-table``, ``issue-2152``), liquid clustering with row tracking
(``table_with_liquid_clustering``), generated columns with column mapping
(``table_with_partitioning_mapping``). The kernel's type-widening table, which delta-rs
refuses, is read in ``test_type_widening_read.py``."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from data_paths import TESTDATA

TABLES = [
    "delta-rs/checkpoint-v2-table",
    "delta-rs/issue-2152",
    "delta-rs/table_with_liquid_clustering",
    "delta-rs/table_with_partitioning_mapping",
]


def _key(row: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(repr(v) for v in row)


def _instants(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Timestamps as UTC instants: PySpark collects them as naive local times, delta-rs as
    UTC-aware values."""
    return tuple(v.astimezone(UTC) if isinstance(v, datetime) else v for v in row)


@pytest.mark.parametrize("name", TABLES)
def test_rows_equal_delta_rs(spark: Any, tmp_path: Path, name: str) -> None:
    from deltalake import DeltaTable as RsTable
    from deltalake import QueryBuilder

    path = tmp_path / "t"
    shutil.copytree(TESTDATA / name, path)
    theirs = QueryBuilder().register("t", RsTable(str(path))).execute("select * from t")
    expected = pa.table(theirs.read_all())
    ours = spark.read.format("delta").load(str(path))
    assert ours.columns == expected.schema.names
    got = sorted((_instants(tuple(r)) for r in ours.collect()), key=_key)
    want = sorted((_instants(tuple(r.values())) for r in expected.to_pylist()), key=_key)
    assert got == want
    assert len(got) == expected.num_rows


def test_preview_clustering_table_is_refused_for_writes_by_name(spark: Any, tmp_path: Path) -> None:
    """delta-rs's clustered table declares the preview writer feature ``liquid`` (delta-spark
    3.0): its clustering columns are read, but a write is refused by the feature's name and
    leaves the log as it was."""
    from delta_pyspark.exceptions import UnsupportedTableFeatureError
    from delta_pyspark.tables import DeltaTable

    path = tmp_path / "t"
    shutil.copytree(TESTDATA / "delta-rs/table_with_liquid_clustering", path)
    assert DeltaTable.forPath(spark, str(path)).detail().collect()[0]["clusteringColumns"] == ["id"]
    commits = sorted(p.name for p in (path / "_delta_log").glob("*.json"))
    with pytest.raises(UnsupportedTableFeatureError, match=r"writer feature.*liquid"):
        spark.range(100, 103).write.format("delta").mode("append").save(str(path))
    assert sorted(p.name for p in (path / "_delta_log").glob("*.json")) == commits
