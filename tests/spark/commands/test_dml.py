"""DELETE, UPDATE and MERGE through DeltaTable: results row by row, files touched, metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaUnsupportedOperationException,
    InvariantViolationError,
)
from delta_pyspark.tables import DeltaTable

SCHEMA = "id long, v long, s string, p string"


def _rows(spark: Any, path: str) -> list[tuple]:
    df = spark.read.format("delta").load(path)
    return sorted(
        (tuple(r) for r in df.select("id", "v", "s", "p").collect()),
        key=lambda r: (r[0] is None, r[0] if r[0] is not None else 0, str(r)),
    )


def _make(spark: Any, path: str, rows: list[tuple], partitioned: bool, files: int = 4) -> None:
    df = spark.createDataFrame(rows, SCHEMA).repartition(files)
    writer = df.write.format("delta")
    if partitioned:
        writer = writer.partitionBy("p")
    writer.save(path)


def _base() -> list[tuple]:
    return [(i, i * 10, f"s{i}" if i % 4 else None, "a" if i < 10 else "b") for i in range(20)]


def _paths(path: str) -> set[str]:
    return set(DeltaLog(path).snapshot().files.column("path").to_pylist())


def _rows_added_by_last_commit(path: str) -> int:
    version = DeltaLog(path).snapshot().version
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in lines if '"add"' in line[:10]]
    return sum(json.loads(a["stats"])["numRecords"] for a in adds)


def _last(path: str) -> dict[str, Any]:
    """The last commitInfo, operation metrics as ints (the log stores them as strings)."""
    info = dict(DeltaLog(path).history(1)[0])
    info["operationMetrics"] = {k: int(v) for k, v in info["operationMetrics"].items()}
    return info


@pytest.fixture(params=[False, True], ids=["unpartitioned", "partitioned"])
def table(request: pytest.FixtureRequest, spark: Any, tmp_path: Path) -> tuple[str, bool]:
    path = str(tmp_path / "t")
    _make(spark, path, _base(), request.param)
    return path, request.param


def _model(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: (r[0] is None, r[0] if r[0] is not None else 0, str(r)))


# ---------------------------------------------------------------------------------- DELETE


def test_delete_data_predicate_rewrites_only_files_with_matches(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    rows = [(i, i, None, "x") for i in range(40)]
    spark.createDataFrame(rows, SCHEMA).repartitionByRange(4, "id").write.format("delta").save(path)
    before = _paths(path)
    out = DeltaTable.forPath(spark, path).delete("id = 3 OR id = 5")
    assert out.collect()[0]["num_affected_rows"] == 2
    assert _rows(spark, path) == [r for r in rows if r[0] not in (3, 5)]
    after = _paths(path)
    assert len(before - after) == 1 and len(after - before) == 1  # one file rewritten
    info = _last(path)
    m = info["operationMetrics"]
    assert (info["operation"], m["numDeletedRows"], m["numCopiedRows"]) == ("DELETE", 2, 8)
    assert (m["numRemovedFiles"], m["numAddedFiles"]) == (1, 1)


def test_delete_partition_predicate_is_metadata_only(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _make(spark, path, _base(), partitioned=True)
    before = DeltaLog(path).snapshot().files
    DeltaTable.forPath(spark, path).delete("p = 'a'")
    assert _rows(spark, path) == [r for r in _base() if r[3] != "a"]
    m = _last(path)["operationMetrics"]
    assert m["numAddedFiles"] == 0 and m["numDeletedRows"] == 10
    removed = [p for p in before.column("path").to_pylist() if p.startswith("p=a/")]
    assert m["numRemovedFiles"] == len(removed)
    assert _paths(path) == {p for p in before.column("path").to_pylist() if p.startswith("p=b/")}


def test_delete_with_unmodelled_partition_function_still_exact(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _make(spark, path, _base(), partitioned=True)
    DeltaTable.forPath(spark, path).delete("upper(p) = 'A' AND id % 2 = 0")
    assert _rows(spark, path) == [r for r in _base() if not (r[3] == "a" and r[0] % 2 == 0)]


def test_delete_without_condition_and_with_column(spark: Any, table: tuple[str, bool]):
    from pyspark.sql import functions as F

    path, _ = table
    dt = DeltaTable.forPath(spark, path)
    dt.delete(F.col("s").isNull())
    assert _rows(spark, path) == [r for r in _base() if r[2] is not None]
    dt.delete()
    assert _rows(spark, path) == []
    assert _last(path)["operationMetrics"]["numAddedFiles"] == 0


def test_delete_matching_nothing_commits_nothing(spark: Any, table: tuple[str, bool]):
    path, _ = table
    version = DeltaLog(path).snapshot().version
    DeltaTable.forPath(spark, path).delete("id > 1000")
    assert DeltaLog(path).snapshot().version == version


# ---------------------------------------------------------------------------------- UPDATE


def test_update_condition_and_values(spark: Any, table: tuple[str, bool]):
    path, _ = table
    out = DeltaTable.forPath(spark, path).update("id < 3 OR s IS NULL", {"v": "v + 1", "s": "'u'"})
    expected = [
        (i, v + 1, "u", p) if (i < 3 or s is None) else (i, v, s, p) for i, v, s, p in _base()
    ]
    assert _rows(spark, path) == _model(expected)
    touched = sum(1 for i, _, s, _ in _base() if i < 3 or s is None)
    assert out.collect()[0]["num_affected_rows"] == touched
    m = _last(path)["operationMetrics"]
    assert m["numUpdatedRows"] == touched
    assert m["numUpdatedRows"] + m["numCopiedRows"] == _rows_added_by_last_commit(path)


def test_update_all_rows_with_columns(spark: Any, table: tuple[str, bool]):
    from pyspark.sql import functions as F

    path, _ = table
    DeltaTable.forPath(spark, path).update(set={"v": F.col("v") * 2})
    assert _rows(spark, path) == _model([(i, v * 2, s, p) for i, v, s, p in _base()])


def test_update_partition_column_moves_rows(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _make(spark, path, _base(), partitioned=True)
    DeltaTable.forPath(spark, path).update("id = 1", {"p": "'c'"})
    assert ("p=c/" in " ".join(_paths(path))) is True
    got = spark.read.format("delta").load(path).where("p = 'c'").collect()
    assert [(r.id, r.v) for r in got] == [(1, 10)]


def test_update_nested_field(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.createDataFrame(
        [(1, (1, "x")), (2, (2, "y"))], "id long, st struct<a:int, b:string>"
    ).write.format("delta").save(path)
    DeltaTable.forPath(spark, path).update("id = 2", {"st.b": "'z'"})
    got = sorted((r.id, r.st.a, r.st.b) for r in spark.read.format("delta").load(path).collect())
    assert got == [(1, 1, "x"), (2, 2, "z")]


def test_update_unknown_column_is_rejected(spark: Any, table: tuple[str, bool]):
    path, _ = table
    version = DeltaLog(path).snapshot().version
    with pytest.raises(DeltaAnalysisException, match="`nope` cannot be resolved"):
        DeltaTable.forPath(spark, path).update("id = 1", {"nope": "1"})
    assert DeltaLog(path).snapshot().version == version


def test_update_violating_not_null_commits_nothing(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "long", nullable=False)
        .addColumn("v", "long")
        .execute()
    )
    spark.createDataFrame([(1, 1), (2, 2)], "id long, v long").write.format("delta").mode(
        "append"
    ).save(path)
    version = DeltaLog(path).snapshot().version
    files = _paths(path)
    with pytest.raises(InvariantViolationError, match=r"NOT NULL constraint violated.*id"):
        DeltaTable.forPath(spark, path).update("id = 1", {"id": "NULL"})
    assert DeltaLog(path).snapshot().version == version and _paths(path) == files
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [
        (1, 1),
        (2, 2),
    ]


def test_update_respects_check_constraint(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, 1)], "id long, v long").write.format("delta").option(
        "delta.constraints.v_positive", "v > 0"
    ).save(path)
    with pytest.raises(InvariantViolationError, match="v_positive"):
        DeltaTable.forPath(spark, path).update(set={"v": "-1"})
    assert [tuple(r) for r in spark.read.format("delta").load(path).collect()] == [(1, 1)]


# ---------------------------------------------------------------------------------- MERGE


def _source(spark: Any, rows: list[tuple]) -> Any:
    return spark.createDataFrame(rows, SCHEMA).alias("s")


def _merge(spark: Any, path: str, rows: list[tuple], cond: str = "t.id = s.id") -> Any:
    return DeltaTable.forPath(spark, path).alias("t").merge(_source(spark, rows), cond)


def _counts(result: Any) -> tuple[int, int, int, int]:
    r = result.collect()[0]
    return (r.num_affected_rows, r.num_updated_rows, r.num_deleted_rows, r.num_inserted_rows)


def test_merge_upsert(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = [(1, 100, "new", "a"), (15, 150, None, "b"), (30, 300, "ins", "b")]
    result = _merge(spark, path, src).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _counts(result) == (3, 2, 0, 1)
    by_id = {r[0]: r for r in _base()} | {r[0]: r for r in src}
    assert _rows(spark, path) == _model(list(by_id.values()))
    m = _last(path)["operationMetrics"]
    assert (m["numSourceRows"], m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == (3, 2, 1)
    assert m["numOutputRows"] == m["numTargetRowsCopied"] + 3
    params = _last(path)["operationParameters"]
    assert json.loads(params["predicate"]) == ["t.id = s.id"]
    assert json.loads(params["matchedPredicates"]) == [{"actionType": "updateAll"}]


def test_merge_clauses_first_match_wins(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = [(i, -i, "src", "a") for i in (1, 2, 3, 4, 40, 41)]
    result = (
        _merge(spark, path, src)
        .whenMatchedDelete("t.id = 1")
        .whenMatchedUpdate("t.id <= 2", {"v": "s.v"})
        .whenMatchedUpdate("t.id <= 3", {"s": "'third'"})
        .whenNotMatchedInsert("s.id = 40", {"id": "s.id", "v": "0", "p": "'a'"})
        .whenNotMatchedInsert(values={"id": "s.id + 100", "p": "'b'"})
        .execute()
    )
    expected = []
    for i, v, s, p in _base():
        if i == 1:
            continue
        if i == 2:
            v = -2
        elif i == 3:
            s = "third"
        expected.append((i, v, s, p))
    expected += [(40, 0, None, "a"), (141, None, None, "b")]
    assert _rows(spark, path) == _model(expected)
    assert _counts(result) == (5, 2, 1, 2)


def test_merge_null_keys_never_match(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = [(None, 1, "n", "a"), (2, 22, None, "a")]
    result = _merge(spark, path, src).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _counts(result) == (2, 1, 0, 1)
    rows = _rows(spark, path)
    assert (None, 1, "n", "a") in rows and (2, 22, None, "a") in rows and len(rows) == 21


def test_merge_not_matched_by_source(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = [(i, 0, "keep", "a") for i in range(5)]
    result = (
        _merge(spark, path, src)
        .whenMatchedUpdate(set={"s": "s.s"})
        .whenNotMatchedBySourceDelete("t.id >= 15")
        .whenNotMatchedBySourceUpdate(set={"v": "-1"})
        .execute()
    )
    expected = []
    for i, v, s, p in _base():
        if i < 5:
            expected.append((i, v, "keep", p))
        elif i < 15:
            expected.append((i, -1, s, p))
    assert _rows(spark, path) == _model(expected)
    assert _counts(result) == (20, 15, 5, 0)
    m = _last(path)["operationMetrics"]
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == 5
    assert m["numTargetRowsNotMatchedBySourceUpdated"] == 10
    assert m["numTargetRowsMatchedUpdated"] == 5


def test_merge_insert_only_touches_no_file(spark: Any, table: tuple[str, bool]):
    path, _ = table
    before = _paths(path)
    src = [(1, 0, "dup", "a"), (50, 5, "x", "b"), (51, 5, "y", "a")]
    result = _merge(spark, path, src).whenNotMatchedInsertAll().execute()
    assert _counts(result) == (2, 0, 0, 2)
    assert before <= _paths(path)
    info = _last(path)
    assert info["operationMetrics"]["numTargetFilesRemoved"] == 0
    assert info["isBlindAppend"] is False  # it read the target to find matches
    assert _rows(spark, path) == _model([*_base(), (50, 5, "x", "b"), (51, 5, "y", "a")])


def test_merge_multiple_source_matches_fail_and_commit_nothing(spark: Any, table: tuple[str, bool]):
    path, _ = table
    version = DeltaLog(path).snapshot().version
    src = [(3, 1, None, "a"), (3, 2, None, "a")]
    with pytest.raises(DeltaUnsupportedOperationException, match="several source rows matched"):
        _merge(spark, path, src).whenMatchedUpdateAll().execute()
    assert DeltaLog(path).snapshot().version == version
    assert _rows(spark, path) == _model(_base())


def test_merge_multiple_matches_allowed_for_unconditional_delete(
    spark: Any, table: tuple[str, bool]
):
    path, _ = table
    src = [(3, 1, None, "a"), (3, 2, None, "a"), (99, 0, None, "b")]
    result = _merge(spark, path, src).whenMatchedDelete().whenNotMatchedInsertAll().execute()
    assert _counts(result) == (2, 0, 1, 1)
    assert _rows(spark, path) == _model([r for r in _base() if r[0] != 3] + [(99, 0, None, "b")])


def test_merge_multiple_matches_without_matched_clause_keep_target_once(
    spark: Any, table: tuple[str, bool]
):
    path, _ = table
    src = [(3, 1, None, "a"), (3, 2, None, "a")]
    _merge(spark, path, src).whenNotMatchedBySourceUpdate("t.id = 4", {"v": "0"}).execute()
    expected = [(i, 0 if i == 4 else v, s, p) for i, v, s, p in _base()]
    assert _rows(spark, path) == _model(expected)


def test_merge_only_last_clause_may_omit_condition(spark: Any, table: tuple[str, bool]):
    path, _ = table
    builder = _merge(spark, path, [(1, 1, None, "a")]).whenMatchedDelete().whenMatchedUpdateAll()
    with pytest.raises(DeltaAnalysisException, match="only the last one may omit"):
        builder.execute()
    with pytest.raises(DeltaAnalysisException, match="at least one WHEN clause"):
        _merge(spark, path, [(1, 1, None, "a")]).execute()


def test_merge_update_all_requires_source_columns(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = spark.createDataFrame([(1, 5)], "id long, v long").alias("s")
    builder = DeltaTable.forPath(spark, path).alias("t").merge(src, "t.id = s.id")
    with pytest.raises(DeltaAnalysisException, match="the source has no column 's'"):
        builder.whenMatchedUpdateAll().execute()


def test_merge_schema_evolution(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = spark.createDataFrame(
        [(1, 100, "n", "a", True), (77, 7, "x", "b", False)],
        SCHEMA + ", flag boolean",
    ).alias("s")
    dt = DeltaTable.forPath(spark, path).alias("t")
    # without evolution the extra column is ignored
    dt.merge(src, "t.id = s.id").whenMatchedUpdateAll().execute()
    assert "flag" not in spark.read.format("delta").load(path).columns
    (
        dt.merge(src, "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .withSchemaEvolution()
        .execute()
    )
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "v", "s", "p", "flag"]
    flags = {r.id: r.flag for r in df.collect()}
    assert flags[1] is True and flags[77] is False and flags[2] is None
    assert len(flags) == 21


def test_merge_schema_evolution_by_session_conf(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _make(spark, path, _base()[:3], partitioned=False, files=1)
    src = spark.createDataFrame([(5, 1, "z", "a", 9)], SCHEMA + ", extra int").alias("s")
    spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
    try:
        _ = (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(src, "t.id = s.id")
            .whenNotMatchedInsertAll()
            .execute()
        )
    finally:
        spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    got = {r.id: r.extra for r in spark.read.format("delta").load(path).collect()}
    assert got == {0: None, 1: None, 2: None, 5: 9}


def test_merge_not_null_violation_commits_nothing(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "long")
        .addColumn("v", "long", nullable=False)
        .execute()
    )
    src = spark.createDataFrame([(1, None)], "id long, v long").alias("s")
    with pytest.raises(InvariantViolationError, match=r"NOT NULL constraint violated.*v"):
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(src, "t.id = s.id")
            .whenNotMatchedInsertAll()
            .execute()
        )
    assert DeltaLog(path).snapshot().version == 0


def test_merge_key_range_prunes_files_and_sets_read_predicate(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    rows = [(i, i, None, "x") for i in range(400)]
    spark.createDataFrame(rows, SCHEMA).repartitionByRange(8, "id").write.format("delta").save(path)
    before = _paths(path)
    src = [(i, -1, None, "x") for i in (10, 11, 12)]
    _merge(spark, path, src).whenMatchedUpdate(set={"v": "s.v"}).execute()
    after = _paths(path)
    assert len(before - after) == 1  # only the file holding ids 10-12 was rewritten
    m = _last(path)["operationMetrics"]
    assert m["numTargetFilesRemoved"] == 1 and m["numTargetRowsUpdated"] == 3
    got = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    assert all(got[i] == (-1 if i in (10, 11, 12) else i) for i in range(400))


def test_merge_cdc_pattern(spark: Any, table: tuple[str, bool]):
    path, _ = table
    changes = spark.createDataFrame(
        [(1, "D", None), (2, "U", 222), (50, "I", 500), (51, "U", 510)],
        "id long, op string, v long",
    ).alias("c")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(changes, "t.id = c.id")
        .whenMatchedDelete("c.op = 'D'")
        .whenMatchedUpdate(set={"v": "c.v"})
        .whenNotMatchedInsert("c.op != 'D'", {"id": "c.id", "v": "c.v", "p": "'b'"})
        .execute()
    )
    expected = [(i, 222 if i == 2 else v, s, p) for i, v, s, p in _base() if i != 1]
    expected += [(50, 500, None, "b"), (51, 510, None, "b")]
    assert _rows(spark, path) == _model(expected)


def test_merge_scd_type2(spark: Any, tmp_path: Path):
    """The classic "upsert new and changed customers, close out old rows" example."""
    path = str(tmp_path / "customers")
    spark.createDataFrame(
        [(1, "old-1", True, None), (2, "addr-2", True, None)],
        "customerId long, address string, current boolean, endDate string",
    ).write.format("delta").save(path)
    updates = spark.createDataFrame(
        [(1, "new-1", "2024-02-01"), (2, "addr-2", "2024-02-01"), (3, "addr-3", "2024-02-01")],
        "customerId long, address string, effectiveDate string",
    )
    customers = DeltaTable.forPath(spark, path)
    current = customers.toDF().where("current = true")
    changed = (
        updates.alias("u")
        .join(current.alias("c"), "customerId")
        .where("u.address <> c.address")
        .selectExpr("NULL AS mergeKey", "u.*")
    )
    staged = changed.unionByName(updates.selectExpr("customerId AS mergeKey", "*"))
    (
        customers.alias("c")
        .merge(staged.alias("s"), "c.customerId = s.mergeKey")
        .whenMatchedUpdate(
            "c.current = true AND c.address <> s.address",
            {"current": "false", "endDate": "s.effectiveDate"},
        )
        .whenNotMatchedInsert(
            values={
                "customerId": "s.customerId",
                "address": "s.address",
                "current": "true",
                "endDate": "NULL",
            }
        )
        .execute()
    )
    got = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert got == [
        (1, "new-1", True, None),
        (1, "old-1", False, "2024-02-01"),
        (2, "addr-2", True, None),
        (3, "addr-3", True, None),
    ]


def test_merge_nondeterministic_source_is_read_once(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _make(spark, path, [(i, i, None, "a") for i in range(50)], partitioned=False, files=2)
    src = (
        spark.range(0, 200)
        .selectExpr("id", "CAST(rand() * 1000 AS BIGINT) AS v", "'r' AS s", "'a' AS p")
        .where("rand() < 0.5")
    )
    result = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    _, updated, _, inserted = _counts(result)
    m = _last(path)["operationMetrics"]
    df = spark.read.format("delta").load(path)
    assert df.count() == 50 + inserted
    assert df.where("s = 'r'").count() == updated + inserted == m["numSourceRows"]


def test_merge_releases_the_materialised_source_and_matches(spark: Any, tmp_path: Path):
    """The source's checkpointed rows and the persisted matches are freed when the merge
    ends, whether it commits or fails."""
    path = str(tmp_path / "t")
    _make(spark, path, [(i, i, None, "a") for i in range(50)], partitioned=False, files=2)

    def persisted() -> set[int]:
        return set(spark.sparkContext._jsc.getPersistentRDDs().keySet())

    before = persisted()
    src = spark.range(40, 60).selectExpr("id", "id AS v", "'r' AS s", "'a' AS p")
    dt = DeltaTable.forPath(spark, path)
    dt.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert persisted() == before
    twice = src.unionByName(src)
    with pytest.raises(DeltaUnsupportedOperationException, match="several source rows"):
        dt.alias("t").merge(twice.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert persisted() == before


def test_merge_with_column_conditions_unaliased_source(spark: Any, table: tuple[str, bool]):
    from pyspark.sql import functions as F

    path, _ = table
    src = spark.createDataFrame([(5, 55)], "key long, nv long")
    (
        DeltaTable.forPath(spark, path)
        .merge(src, F.col("id") == F.col("key"))
        .whenMatchedUpdate(F.col("nv") > 0, {"v": F.col("nv")})
        .execute()
    )
    got = {r[0]: r[1] for r in _rows(spark, path)}
    assert got[5] == 55 and got[6] == 60


def _ranged_table(spark: Any, path: str, dv: bool) -> None:
    """Ids 0-39 (v = 10 * id), one file per ten ids, with or without deletion vectors."""
    for lo in range(0, 40, 10):
        rows = [(i, i * 10, f"s{i}", "a" if i < 20 else "b") for i in range(lo, lo + 10)]
        writer = spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta")
        if dv and lo == 0:
            writer = writer.option("delta.enableDeletionVectors", "true")
        writer.mode("append").save(path)


@pytest.mark.parametrize(
    "dv, padding, counted",
    [(False, 20, False), (False, 20, True), (False, 0, False), (True, 0, False)],
    ids=[
        "copy-on-write-join",
        "copy-on-write-join-counted",
        "copy-on-write-by-position",
        "deletion-vectors",
    ],
)
@pytest.mark.long  # CI's second step, for the quick run's time
def test_merge_row_matched_twice_fails_whatever_the_clauses_do(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dv: bool,
    padding: int,
    counted: bool,
):
    """Two source rows match target row 5, and only one pair meets the update's condition:
    the merge still fails. The source's keys are not checked for uniqueness: every path
    finds the repeat among the matched rows' positions, and frees the matches persisted on
    the way (the join path: a source of over a quarter of the candidate files' rows, with
    ``padding`` unmatched ones). A source too large for its positions to be collected
    (``counted``: the bound lowered) counts the matches per target row instead."""
    import delta_pyspark.spark.commands.merge.command as command_module

    if counted:
        monkeypatch.setattr(command_module, "_MAX_COLLECTED_SOURCE_ROWS", -1)
    path = str(tmp_path / "t")
    _ranged_table(spark, path, dv)
    version = DeltaLog(path).snapshot().version
    persisted = set(spark.sparkContext._jsc.getPersistentRDDs().keySet())
    src = [(5, 55, "upd", "a"), (5, -1, "skip", "a")]
    src += [(100 + i, 0, "unmatched", "b") for i in range(padding)]
    with pytest.raises(DeltaUnsupportedOperationException, match="several source rows matched"):
        _merge(spark, path, src).whenMatchedUpdate("s.v > 0", {"v": "s.v"}).execute()
    assert DeltaLog(path).snapshot().version == version
    assert set(spark.sparkContext._jsc.getPersistentRDDs().keySet()) == persisted
    # an unconditional delete may match a row twice: it is deleted once
    result = _merge(spark, path, src).whenMatchedDelete().execute()
    assert _counts(result) == (1, 0, 1, 0)
    m = _last(path)["operationMetrics"]
    assert (m["numTargetRowsDeleted"], m["numTargetFilesRemoved"]) == (1, 0 if dv else 1)
    expected = [(i, i * 10, f"s{i}", "a" if i < 20 else "b") for i in range(40)]
    assert _rows(spark, path) == _model([r for r in expected if r[0] != 5])


@pytest.mark.long  # slow: CI's second step
@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write-by-position", "deletion-vectors"])
def test_merge_update_all_by_a_source_row_matching_several_target_rows(
    spark: Any, tmp_path: Path, dv: bool
):
    """UPDATE SET * writes one new row per target row it updates: the updated rows are
    read from the source rows phase 1 found updating, each once, so a source row updating
    two target rows (the target holds id 7 twice) sends phase 1 back to keep the pairs."""
    path = str(tmp_path / "t")
    _ranged_table(spark, path, dv)
    spark.createDataFrame([(7, 700, "twin", "a")], SCHEMA).write.format("delta").mode(
        "append"
    ).save(path)
    src = [(7, 77, "new", "a"), (12, 120, "upd", "b"), (50, 5, "ins", "b")]
    result = _merge(spark, path, src).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _counts(result) == (4, 3, 0, 1)
    expected = [(i, i * 10, f"s{i}", "a" if i < 20 else "b") for i in range(40) if i not in (7, 12)]
    expected += [
        (7, 77, "new", "a"),
        (7, 77, "new", "a"),
        (12, 120, "upd", "b"),
        (50, 5, "ins", "b"),
    ]
    assert _rows(spark, path) == _model(expected)
    # without the twin, the same merge writes the updated rows straight from the source
    clean = str(tmp_path / "clean")
    _ranged_table(spark, clean, dv)
    result = _merge(spark, clean, src).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _counts(result) == (3, 2, 0, 1)
    assert _rows(spark, clean) == _model([r for r in expected if r[2] != "new"] + [src[0]])


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write-by-position", "deletion-vectors"])
@pytest.mark.parametrize(
    "clauses", ["upsert", "insert-condition", "update-condition", "delete-clause", "all-new"]
)
def test_merge_update_all_and_insert_all_write_the_rows_their_conditions_pick(
    spark: Any, tmp_path: Path, dv: bool, clauses: str
):
    """An unconditional UPDATE SET * with one unconditional INSERT * writes every source
    row once, updating or inserted, straight from the source; a condition on either
    clause, or a second matched clause, leaves some source rows out."""
    path = str(tmp_path / "t")
    _ranged_table(spark, path, dv)
    src = [
        (3, 33, "upd", "a"),
        (4, -4, "neg", "a"),
        (25, 0, "del", "b"),
        (50, 5, "ins", "b"),
        (51, -5, "neg", "b"),
        (None, 7, "nokey", "a"),
    ]
    if clauses == "all-new":
        src = [(i + 100, v, s, p) for i, v, s, p in src if i is not None]
    merge = _merge(spark, path, src)
    if clauses == "delete-clause":
        merge = merge.whenMatchedDelete("s.s = 'del'")
    merge = merge.whenMatchedUpdateAll("s.v > 0" if clauses == "update-condition" else None)
    merge = merge.whenNotMatchedInsertAll("s.v > 0" if clauses == "insert-condition" else None)
    result = merge.execute()

    def passes(row: tuple, clause: str) -> bool:  # a condition ``s.v > 0`` on ``clause``
        return clauses != clause or row[1] > 0

    target = {i: (i, i * 10, f"s{i}", "a" if i < 20 else "b") for i in range(40)}
    matched = [r for r in src if r[0] in target]
    deleted = [r for r in matched if clauses == "delete-clause" and r[2] == "del"]
    updated = [r for r in matched if passes(r, "update-condition") and r not in deleted]
    inserted = [r for r in src if r[0] not in target and passes(r, "insert-condition")]
    for r in updated + deleted:
        del target[r[0]]
    assert _rows(spark, path) == _model(list(target.values()) + updated + inserted)
    assert _counts(result) == (
        len(updated) + len(deleted) + len(inserted),
        len(updated),
        len(deleted),
        len(inserted),
    )


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("unique", [True, False], ids=["unique-keys", "duplicate-keys"])
def test_merge_metrics_exact(spark: Any, tmp_path: Path, dv: bool, unique: bool):
    """Every clause kind at once, with unique source keys and with a repeated key that
    matches no target row (counted once per target row all the same)."""
    path = str(tmp_path / "t")
    _ranged_table(spark, path, dv)
    src = [
        (1, 11, "upd", "a"),  # matched, updated
        (5, -5, "upd", "a"),  # matched, update condition false: unchanged, not inserted
        (22, 222, "upd", "b"),  # matched, updated
        (30, 0, "del", "b"),  # matched, deleted
        (100, 1, "new", "b"),  # inserted
        (None, 2, "nokey", "a"),  # null key: never matches, inserted
        (None, 3, "nokey", "a"),  # a second null key does not make the keys non-unique
    ]
    if not unique:
        src.append((100, 4, "new", "b"))  # duplicate key, no target row: both inserted
    result = (
        _merge(spark, path, src)
        .whenMatchedDelete("s.s = 'del'")
        .whenMatchedUpdate("s.v > 0", {"v": "s.v", "s": "s.s"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    inserted = 4 if not unique else 3
    assert _counts(result) == (3 + inserted, 2, 1, inserted)
    expected = [(i, i * 10, f"s{i}", "a" if i < 20 else "b") for i in range(40) if i != 30]
    expected = [(1, 11, "upd", "a") if r[0] == 1 else r for r in expected]
    expected = [(22, 222, "upd", "b") if r[0] == 22 else r for r in expected]
    expected += [r for r in src if r[0] is None or r[0] == 100]
    assert _rows(spark, path) == _model(expected)
    m = _last(path)["operationMetrics"]
    # copy-on-write rewrites the three files with matches (ids 0-9, 20-29, 30-39)
    copied = 0 if dv else 30 - 2 - 1
    assert {
        k: m[k]
        for k in (
            "numSourceRows",
            "numTargetRowsInserted",
            "numTargetRowsUpdated",
            "numTargetRowsMatchedUpdated",
            "numTargetRowsDeleted",
            "numTargetRowsMatchedDeleted",
            "numTargetRowsCopied",
            "numOutputRows",
            "numTargetFilesRemoved",
        )
    } == {
        "numSourceRows": len(src),
        "numTargetRowsInserted": inserted,
        "numTargetRowsUpdated": 2,
        "numTargetRowsMatchedUpdated": 2,
        "numTargetRowsDeleted": 1,
        "numTargetRowsMatchedDeleted": 1,
        "numTargetRowsCopied": copied,
        "numOutputRows": copied + 2 + inserted,
        "numTargetFilesRemoved": 0 if dv else 3,
    }
    version = DeltaLog(path).snapshot().version
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in lines if line.startswith('{"add"')]
    new_files = [a for a in adds if not a.get("deletionVector")]
    assert sum(json.loads(a["stats"])["numRecords"] for a in new_files) == copied + 2 + inserted
    if dv:  # the three matched files are re-added with vectors of their changed rows only
        vectors = [a["deletionVector"]["cardinality"] for a in adds if a.get("deletionVector")]
        assert sorted(vectors) == [1, 1, 1] and m["numTargetDeletionVectorsAdded"] == 3


def test_merge_source_rows_of_many_partitions_keep_distinct_ids(spark: Any, tmp_path: Path):
    """Unmatched source rows are found by their ids: rows of every partition count."""
    path = str(tmp_path / "t")
    _ranged_table(spark, path, dv=False)
    src = spark.range(0, 200, 1, numPartitions=8).selectExpr(
        "id", "-id AS v", "'src' AS s", "'c' AS p"
    )
    result = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert _counts(result) == (200, 40, 0, 160)
    assert _rows(spark, path) == [(i, -i, "src", "c") for i in range(200)]


@pytest.mark.long  # CI's second step, for the quick run's time
@pytest.mark.parametrize("extra", [2, 200], ids=["small-source", "large-source"])
def test_merge_inserts_with_not_matched_by_source(spark: Any, tmp_path: Path, extra: int):
    """Without persisted pairs the insert step anti-joins the files with matches (large
    source) or joins them with the source for the matched ids (small source)."""
    path = str(tmp_path / "t")
    _ranged_table(spark, path, dv=False)
    src = [(i, -i, "src", "c") for i in (3, 17)] + [(100 + i, i, "new", "c") for i in range(extra)]
    result = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(_source(spark, src), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete("t.id >= 30")
        .execute()
    )
    assert _counts(result) == (2 + 10 + extra, 2, 10, extra)
    expected = [(i, i * 10, f"s{i}", "a" if i < 20 else "b") for i in range(30) if i not in (3, 17)]
    assert _rows(spark, path) == _model(expected + src)


def test_merge_keys_unique_together_but_not_alone(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = [(3, 33, "upd", "a"), (3, 34, "ins", "b")]  # id 3 is in partition a only
    result = (
        _merge(spark, path, src, "t.id = s.id AND t.p = s.p")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert _counts(result) == (2, 1, 0, 1)
    expected = [r for r in _base() if r[0] != 3] + src
    assert _rows(spark, path) == _model(expected)


def test_merge_duplicate_keys_filtered_by_condition_match_once(spark: Any, table: tuple[str, bool]):
    path, _ = table
    src = [(3, 33, "kept", "a"), (3, -1, "ignored", "a")]
    result = (
        _merge(spark, path, src, "t.id = s.id AND s.v > 0")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    # the second row matches no target row (s.v > 0 fails), so it is inserted
    assert _counts(result) == (2, 1, 0, 1)
    expected = [r for r in _base() if r[0] != 3] + src
    assert _rows(spark, path) == _model(expected)


def test_merge_null_safe_key_duplicates_fail(spark: Any, table: tuple[str, bool]):
    """``<=>`` is not used as a join key, so duplicates are checked per target row."""
    path, _ = table
    version = DeltaLog(path).snapshot().version
    src = [(3, 1, None, "a"), (3, 2, None, "a")]
    with pytest.raises(DeltaUnsupportedOperationException, match="several source rows matched"):
        _merge(spark, path, src, "t.id <=> s.id").whenMatchedUpdateAll().execute()
    assert DeltaLog(path).snapshot().version == version


def test_merge_empty_source_changes_no_row(spark: Any, table: tuple[str, bool]):
    path, _ = table
    before = _paths(path)
    result = _merge(spark, path, []).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _counts(result) == (0, 0, 0, 0)
    assert before <= _paths(path)  # no file rewritten
    assert _rows(spark, path) == _model(_base())
    info = _last(path)
    if info["operation"] == "MERGE":  # unpartitioned: Spark wrote one empty file
        m = info["operationMetrics"]
        assert (m["numSourceRows"], m["numOutputRows"], m["numTargetFilesRemoved"]) == (0, 0, 0)


def test_dml_history_records_operations(spark: Any, table: tuple[str, bool]):
    path, _ = table
    dt = DeltaTable.forPath(spark, path)
    dt.update("id = 1", {"v": "0"})
    dt.delete("id = 2")
    _merge(spark, path, [(3, 3, None, "a")]).whenMatchedUpdateAll().execute()
    hist = dt.history(3).collect()
    assert [h.operation for h in hist] == ["MERGE", "DELETE", "UPDATE"]
    assert hist[0].operationMetrics["numTargetRowsUpdated"] == "1"
    assert hist[1].operationMetrics["numDeletedRows"] == "1"
    assert hist[2].operationMetrics["numUpdatedRows"] == "1"
    assert all(int(h.operationMetrics["executionTimeMs"]) >= 0 for h in hist)


def test_dml_on_table_with_deletion_vectors_and_column_mapping(
    spark: Any, testdata: Path, tmp_path: Path
):
    import shutil

    path = str(tmp_path / "t")
    shutil.copytree(testdata / "golden" / "dv-with-columnmapping" / "delta", path)
    expected_dir = testdata / "golden" / "dv-with-columnmapping" / "expected"
    model = {(r.part, r.col1): r.col2 for r in spark.read.parquet(str(expected_dir)).collect()}

    def rows() -> dict[tuple, str]:
        df = spark.read.format("delta").load(path)
        return {(r.part, r.col1): r.col2 for r in df.collect()}

    assert rows() == model
    dt = DeltaTable.forPath(spark, path)
    dt.update("col1 % 3 = 0", {"col2": "'updated'"})
    model = {k: ("updated" if k[1] % 3 == 0 else v) for k, v in model.items()}
    assert rows() == model
    dt.delete("part = 1 OR col1 = 4")
    model = {k: v for k, v in model.items() if not (k[0] == 1 or k[1] == 4)}
    assert rows() == model
    src = spark.createDataFrame([(5, 25, "m"), (9, 999, "new")], "part int, col1 int, col2 string")
    (
        dt.alias("t")
        .merge(src.alias("s"), "t.part = s.part AND t.col1 = s.col1")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert (5, 25) in model
    model |= {(5, 25): "m", (9, 999): "new"}
    assert rows() == model
    # the log keys partition values by physical name, as column mapping requires
    files = DeltaLog(path).snapshot().files
    keys = {k for pv in files.column("partitionValues").to_pylist() for k, _ in pv}
    assert keys == {"col-60c949ca-b8bc-4330-b931-b73fb4c60037"}
    spark.createDataFrame([(9, 1000, "appended")], "part int, col1 int, col2 string").write.format(
        "delta"
    ).mode("append").save(path)
    assert rows() == model | {(9, 1000): "appended"}


@pytest.mark.long  # CI's second step, for the quick run's time
def test_merge_from_streaming_foreach_batch(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _make(spark, path, _base(), partitioned=True, files=2)
    incoming = tmp_path / "incoming"
    spark.createDataFrame([(1, -1, "b1", "a"), (30, 30, "b1", "b")], SCHEMA).coalesce(
        1
    ).write.parquet(str(incoming / "batch1"))
    spark.createDataFrame([(30, -30, "b2", "b"), (31, 31, "b2", "b")], SCHEMA).coalesce(
        1
    ).write.parquet(str(incoming / "batch2"))

    def upsert(batch: Any, batch_id: int) -> None:
        (
            DeltaTable.forPath(batch.sparkSession, path)
            .alias("t")
            .merge(batch.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    stream = (
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(incoming / "*"))
    )
    query = (
        stream.writeStream.foreachBatch(upsert)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    by_id = {r[0]: r for r in _base()}
    by_id |= {1: (1, -1, "b1", "a"), 30: (30, -30, "b2", "b"), 31: (31, 31, "b2", "b")}
    assert _rows(spark, path) == _model(list(by_id.values()))
    assert [h["operation"] for h in DeltaLog(path).history(2)] == ["MERGE", "MERGE"]


def test_merge_broadcasts_the_source_only_within_sparks_threshold(spark: Any, conf: Any) -> None:
    """The (checkpointed) source is hinted for broadcast when Spark's estimate of its size
    is within ``spark.sql.autoBroadcastJoinThreshold``; never with broadcasts turned off."""
    from delta_pyspark.spark.jvm.plans import within_broadcast_threshold

    df = spark.range(1_000).selectExpr("id", "CONCAT('v', id) AS s").localCheckpoint()
    size = int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
    assert 0 < size < 10 * 1024 * 1024
    assert within_broadcast_threshold(df)
    conf("spark.sql.autoBroadcastJoinThreshold", str(size - 1))
    assert not within_broadcast_threshold(df)
    conf("spark.sql.autoBroadcastJoinThreshold", str(size))
    assert within_broadcast_threshold(df)
    conf("spark.sql.autoBroadcastJoinThreshold", "-1")
    assert not within_broadcast_threshold(df)


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_merge_writes_new_rows_in_at_most_one_file_per_task_slot(
    spark: Any, tmp_path: Path, vectors: bool
) -> None:
    """Inserted rows and new versions of updated rows come from the source's partitions
    (6 here); they are written as at most one file per task slot (2), not one per
    partition."""
    path = str(tmp_path / "t")
    df = spark.range(0, 400, 2).selectExpr("id", "id AS v", "'old' AS s", "'a' AS p")
    writer = df.repartitionByRange(2, "id").write.format("delta")
    writer.option("delta.enableDeletionVectors", str(vectors).lower()).save(path)
    src = spark.range(0, 120).selectExpr("id", "-id AS v", "'new' AS s", "'a' AS p")
    src = src.repartition(6)
    dt = DeltaTable.forPath(spark, path)
    dt.alias("t").merge(
        src.alias("s"), "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    expected = sorted(
        [(i, -i, "new", "a") for i in range(120)] + [(i, i, "old", "a") for i in range(120, 400, 2)]
    )
    assert _rows(spark, path) == expected
    version = DeltaLog(path).snapshot().version
    log = Path(path) / "_delta_log" / f"{version:020d}.json"
    adds = [a["add"] for a in map(json.loads, log.read_text().splitlines()) if "add" in a]
    only_new = [a for a in adds if json.loads(a["stats"])["maxValues"]["s"] == "new"]
    assert spark.sparkContext.defaultParallelism == 2
    assert 1 <= len(only_new) <= 2
    # the 60 inserted rows and the 60 updated ones (an UPDATE SET * writes them from the
    # source rows, whether the old versions are marked deleted or left out of the rewrite)
    assert sum(json.loads(a["stats"])["numRecords"] for a in only_new) == 120
