"""Row tracking with Spark (PROTOCOL.md "Row Tracking"): enabling at creation and later,
appends assigning contiguous id ranges (read from the JSON commits), OPTIMIZE and
copy-on-write UPDATE/DELETE preserving each row's id through the materialized columns,
UPDATE giving changed rows the new commit version, and delta-rs reading the table."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake.exceptions import CommitFailedError
from pyspark.errors import AnalysisException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.tables import DeltaTable

pytestmark = pytest.mark.spark

ROW_ID_KEY = "delta.rowTracking.materializedRowIdColumnName"
VERSION_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"


def _commit(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _adds(path: str, version: int) -> list[dict[str, Any]]:
    return [a["add"] for a in _commit(path, version) if "add" in a]


def _mark(path: str, version: int) -> int | None:
    for a in _commit(path, version):
        if a.get("domainMetadata", {}).get("domain") == "delta.rowTracking":
            return int(json.loads(a["domainMetadata"]["configuration"])["rowIdHighWaterMark"])
    return None


def _ids(spark: Any, path: str) -> dict[int, tuple[int, int, str]]:
    """id -> (row id, row commit version, value), read as ``_metadata`` fields."""
    df = spark.read.format("delta").load(path)
    rows = df.select("id", "v", "_metadata.row_id", "_metadata.row_commit_version").collect()
    return {r["id"]: (r["row_id"], r["row_commit_version"], r["v"]) for r in rows}


def _create(spark: Any, path: str, n: int = 40, files: int = 4) -> None:
    df = spark.range(n).selectExpr("id", "concat('v', id) AS v").repartition(files, "id")
    df.write.format("delta").option("delta.enableRowTracking", "true").save(path)


def test_appends_assign_contiguous_ranges(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(spark, path)
    spark.range(100, 130).selectExpr("id", "'x' AS v").repartition(3).write.format("delta").mode(
        "append"
    ).save(path)
    snapshot = DeltaLog(path).snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(snapshot.protocol.writer_features or ())
    assert snapshot.configuration["delta.enableRowTracking"] == "true"
    ranges = []
    for version, expected_mark in ((0, 39), (1, 69)):
        for add in _adds(path, version):
            assert add["defaultRowCommitVersion"] == version
            ranges.append((add["baseRowId"], json.loads(add["stats"])["numRecords"]))
        assert _mark(path, version) == expected_mark
    ranges.sort()
    assert ranges[0][0] == 0
    for (base, n), (next_base, _) in itertools.pairwise(ranges):
        assert next_base == base + n  # contiguous, never overlapping
    assert sum(n for _, n in ranges) == 70
    ids = _ids(spark, path)
    assert sorted(r for r, _, _ in ids.values()) == list(range(70))
    assert {c for _, c, _ in ids.values()} == {0, 1}


def test_enabling_later_backfills(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(10).selectExpr("id", "'a' AS v").write.format("delta").save(path)
    with pytest.raises(AnalysisException, match=r"FIELD_NOT_FOUND.*`row_id`"):
        _ids(spark, path)  # as delta-spark: no row ids before row tracking is enabled
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableRowTracking = true)")
    readds = _adds(path, 1)
    assert readds and all(a["dataChange"] is False for a in readds)
    assert all(a["defaultRowCommitVersion"] == 1 for a in readds)
    conf = DeltaLog(path).snapshot().configuration
    assert conf[ROW_ID_KEY].startswith("_row-id-col-")
    assert conf[VERSION_KEY].startswith("_row-commit-version-col-")
    assert sorted(r for r, _, _ in _ids(spark, path).values()) == list(range(10))


def test_feature_support_alone_assigns_ids(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(5).selectExpr("id", "'a' AS v").write.format("delta").save(path)
    DeltaTable.forPath(spark, path).addFeatureSupport("rowTracking")
    spark.range(5, 8).selectExpr("id", "'b' AS v").write.format("delta").mode("append").save(path)
    files = DeltaLog(path).snapshot().files
    assert files.column("baseRowId").null_count == 0
    assert _mark(path, 2) == 7


def test_optimize_preserves_row_ids(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(spark, path, n=60, files=6)
    before = _ids(spark, path)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    adds = _adds(path, 1)
    assert len(adds) == 1 and adds[0]["defaultRowCommitVersion"] == 1
    assert adds[0]["baseRowId"] == 60  # fresh ids above the mark
    assert _ids(spark, path) == before  # every row keeps its id and commit version
    conf = DeltaLog(path).snapshot().configuration
    data = pq.read_table(Path(path) / adds[0]["path"])
    assert sorted(data.column(conf[ROW_ID_KEY]).to_pylist()) == list(range(60))


def test_zorder_preserves_row_ids(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(spark, path, n=30, files=3)
    before = _ids(spark, path)
    DeltaTable.forPath(spark, path).optimize().executeZOrderBy("v")
    assert _ids(spark, path) == before


@pytest.mark.parametrize("dv", [False, True])
def test_update_preserves_ids_and_bumps_versions(spark: Any, tmp_path: Path, dv: bool) -> None:
    path = str(tmp_path / "t")
    _create(spark, path, n=40, files=2)
    if dv:
        spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableDeletionVectors = true)"
        )
    before = _ids(spark, path)
    version = DeltaLog(path).snapshot().version + 1
    DeltaTable.forPath(spark, path).update("id % 4 = 0", {"v": "'changed'"})
    after = _ids(spark, path)
    assert after.keys() == before.keys()
    for key, (row_id, commit, value) in after.items():
        assert row_id == before[key][0]  # every row keeps its id
        if key % 4 == 0:
            assert (commit, value) == (version, "changed")
        else:
            assert (commit, value) == before[key][1:]  # copied rows keep their version too
    # a second UPDATE of moved rows keeps them again
    DeltaTable.forPath(spark, path).update("id = 1", {"v": "'again'"})
    assert _ids(spark, path)[1] == (before[1][0], version + 1, "again")


def test_delete_keeps_the_ids_of_the_rows_left(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(spark, path, n=40, files=2)
    before = _ids(spark, path)
    DeltaTable.forPath(spark, path).delete("id % 3 = 0")
    assert _ids(spark, path) == {k: v for k, v in before.items() if k % 3}


def test_deltalake_reads_the_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(spark, path, n=20, files=2)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    ours = sorted((r["id"], r["v"]) for r in spark.read.format("delta").load(path).collect())
    theirs = deltalake.DeltaTable(path).to_pyarrow_table(columns=["id", "v"])
    assert sorted(zip(*theirs.to_pydict().values(), strict=True)) == ours
    assert len(ours) == 20
    # delta-rs (deltalake 1.x) does not write row tracking tables: it refuses by feature name
    extra = pa.table({"id": pa.array([99], pa.int64()), "v": ["z"]})
    with pytest.raises(CommitFailedError, match="RowTracking"):
        deltalake.write_deltalake(path, extra, mode="append")
    assert DeltaLog(path).snapshot().version == 1


@pytest.mark.parametrize(
    ("inserted", "dv"),
    [(2, False), (2, True), (20, False)],  # positional copy-on-write, vectors, join
)
def test_merge_preserves_ids(spark: Any, tmp_path: Path, inserted: int, dv: bool) -> None:
    path = str(tmp_path / "t")
    _create(spark, path, n=40, files=2)
    if dv:
        DeltaTable.forPath(spark, path).setProperties({"delta.enableDeletionVectors": "true"})
    before = _ids(spark, path)
    version = DeltaLog(path).snapshot().version + 1
    updated = {0, 8, 16, 24, 32}
    source = spark.createDataFrame(
        [(i, "merged") for i in updated] + [(100 + i, "new") for i in range(inserted)],
        "id long, v string",
    )
    target = DeltaTable.forPath(spark, path).alias("t")
    target.merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(
        set={"v": "s.v"}
    ).whenNotMatchedInsertAll().execute()
    after = _ids(spark, path)
    assert after.keys() == before.keys() | {100 + i for i in range(inserted)}
    for key, (row_id, commit, value) in after.items():
        if key in before:
            assert row_id == before[key][0]
            expected = (version, "merged") if key in updated else before[key][1:]
            assert (commit, value) == expected
        else:
            assert row_id >= 40 and (commit, value) == (version, "new")
    assert len({r for r, _, _ in after.values()}) == len(after)  # ids stay unique


def test_column_mapping_table_keeps_ids_through_optimize_and_update(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    df = spark.range(30).selectExpr("id", "concat('v', id) AS v").repartition(3, "id")
    df.write.format("delta").option("delta.enableRowTracking", "true").option(
        "delta.columnMapping.mode", "name"
    ).save(path)
    before = _ids(spark, path)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    DeltaTable.forPath(spark, path).update("id < 5", {"v": "'u'"})
    after = _ids(spark, path)
    assert {k: r for k, (r, _, _) in after.items()} == {k: r for k, (r, _, _) in before.items()}
    assert {k for k, (_, c, _) in after.items() if c == 2} == set(range(5))
