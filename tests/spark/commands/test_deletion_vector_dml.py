"""DELETE, UPDATE and MERGE with deletion vectors, and row-level concurrency between them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    deleted_row_indexes,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import DeltaConcurrentModificationException
from delta_pyspark.tables import DeltaTable


def _make(spark: Any, path: str, n: int = 40, files: int = 4, partitioned: bool = False) -> None:
    df = spark.range(n).selectExpr("id", "id * 10 AS v", "CAST(id % 2 AS STRING) AS p")
    writer = df.repartitionByRange(files, "id").write.format("delta")
    if partitioned:
        writer = writer.partitionBy("p")
    writer.option("delta.enableDeletionVectors", "true").save(path)


def _rows(spark: Any, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).select("id", "v", "p").collect())


def _expected(ids: Any, v: Any = lambda i: i * 10) -> list[tuple]:
    return sorted((i, v(i), str(i % 2)) for i in ids)


def _parquet_files(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob("*.parquet")}


def _last_commit(path: str) -> tuple[list[dict], list[dict], dict]:
    version = DeltaLog(path).snapshot().version
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    actions = [json.loads(line) for line in lines]
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return adds, removes, info


def _metrics(info: dict) -> dict[str, int]:
    return {k: int(v) for k, v in info["operationMetrics"].items()}


@pytest.fixture(params=[False, True], ids=["unpartitioned", "partitioned"])
def table(request: pytest.FixtureRequest, spark: Any, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    _make(spark, path, partitioned=request.param)
    return path


def test_delete_marks_rows_and_rewrites_no_file(spark: Any, table: str) -> None:
    before = _parquet_files(table)
    out = DeltaTable.forPath(spark, table).delete("id % 10 = 3")
    assert out.collect()[0]["num_affected_rows"] == 4
    assert _rows(spark, table) == _expected(i for i in range(40) if i % 10 != 3)
    assert _parquet_files(table) == before  # no data file written
    assert len(list(Path(table).glob("deletion_vector_*.bin"))) == 1
    adds, removes, info = _last_commit(table)
    assert {a["path"] for a in adds} == {r["path"] for r in removes}
    assert sum(a["deletionVector"]["cardinality"] for a in adds) == 4
    assert all(json.loads(a["stats"])["tightBounds"] is False for a in adds)
    m = _metrics(info)
    assert m["numDeletedRows"] == 4 and m["numCopiedRows"] == 0
    assert m["numDeletionVectorsAdded"] == len(adds) and m["numRemovedFiles"] == 0
    assert _rows(spark, table, version=0) == _expected(range(40))


def test_delete_every_row_of_a_file_removes_it(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _make(spark, path)  # range-partitioned: ids 0..9 in the first file
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id < 5")
    dt.delete("id >= 5 AND id < 10")
    adds, removes, info = _last_commit(path)
    assert adds == [] and len(removes) == 1 and removes[0]["deletionVector"]["cardinality"] == 5
    assert _metrics(info)["numRemovedFiles"] == 1
    assert _metrics(info)["numDeletionVectorsRemoved"] == 1
    assert _rows(spark, path) == _expected(range(10, 40))
    assert DeltaLog(path).snapshot().num_files == 3


def test_delete_overlapping_an_earlier_vector_counts_only_new_rows(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    dt.delete("id % 10 = 3")
    version = DeltaLog(table).snapshot().version
    out = dt.delete("id % 10 IN (1, 3)")  # ids 3, 13, 23, 33 are already deleted
    assert out.collect()[0]["num_affected_rows"] == 4
    assert _rows(spark, table) == _expected(i for i in range(40) if i % 10 not in (1, 3))
    adds, removes, info = _last_commit(table)
    assert sum(a["deletionVector"]["cardinality"] for a in adds) == 8
    assert sum(r["deletionVector"]["cardinality"] for r in removes) == 4
    assert _metrics(info)["numDeletedRows"] == 4
    assert _metrics(info)["numDeletionVectorsUpdated"] == len(adds)
    dt.delete("id % 10 = 3")  # only deleted rows match: nothing to commit
    assert DeltaLog(table).snapshot().version == version + 1


def test_row_indexes_are_right_with_the_row_based_parquet_reader(
    spark: Any, table: str, conf: Any
) -> None:
    """Row positions come from Spark's Parquet reader; its row-based (non-vectorized) path
    must give the same ones for reads and for DELETE."""
    conf("spark.sql.parquet.enableVectorizedReader", "false")
    dt = DeltaTable.forPath(spark, table)
    dt.delete("id % 10 = 3")
    dt.delete("id % 10 = 6")
    assert _rows(spark, table) == _expected(i for i in range(40) if i % 10 not in (3, 6))
    conf("spark.sql.parquet.enableVectorizedReader", "true")
    assert _rows(spark, table) == _expected(i for i in range(40) if i % 10 not in (3, 6))


def test_reads_are_exact_when_spark_splits_a_file_by_row_groups(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    """A file read as several splits (one per row group) keeps each row's position."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("parquet.block.size", "4096")
    try:
        path = str(tmp_path / "t")
        _make(spark, path, n=20_000, files=1)
    finally:
        hadoop.unset("parquet.block.size")
    (data_file,) = Path(path).glob("*.parquet")
    assert pq.ParquetFile(data_file).num_row_groups > 4
    DeltaTable.forPath(spark, path).delete("id % 997 = 5 OR id >= 19990")
    conf("spark.sql.files.maxPartitionBytes", "16k")
    conf("spark.sql.files.openCostInBytes", "0")
    df = spark.read.format("delta").load(path)
    assert df.rdd.getNumPartitions() > 4
    assert _rows(spark, path) == _expected(i for i in range(19_990) if i % 997 != 5)


def test_merge_row_indexes_are_exact_past_row_groups_of_null_keys(
    spark: Any, tmp_path: Path
) -> None:
    """A MERGE's join infers ``k IS NOT NULL``: pushed to the reader, that filter could skip
    a row group of null keys and shift every counted row index after it."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("parquet.block.size", "4096")
    path = str(tmp_path / "t")
    try:
        df = spark.range(6_000).selectExpr(
            "id", "IF(id < 2000, NULL, id) AS k", "CONCAT('row', id) AS s", "0L AS v"
        )
        df.coalesce(1).write.format("delta").option("delta.enableDeletionVectors", "true").save(
            path
        )
    finally:
        hadoop.unset("parquet.block.size")
    (data_file,) = Path(path).glob("*.parquet")
    meta = pq.ParquetFile(data_file).metadata
    null_groups = [
        g
        for g in range(meta.num_row_groups)
        if meta.row_group(g).column(1).statistics.null_count == meta.row_group(g).num_rows
    ]
    assert null_groups and null_groups[0] == 0 and meta.num_row_groups > len(null_groups)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id % 10 = 0")  # the file gets a vector: the merge reads through the format
    src = spark.range(2_000, 6_000, 7).selectExpr("id AS k", "id AS nv")
    dt.alias("t").merge(src.alias("s"), "t.k = s.k").whenMatchedUpdate(set={"v": "s.nv"}).execute()
    got = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    expected = sorted(
        (i, None if i < 2000 else i, f"row{i}", i if i >= 2000 and (i - 2000) % 7 == 0 else 0)
        for i in range(6_000)
        if i % 10 != 0
    )
    assert got == expected


def test_update_writes_only_the_new_versions_of_changed_rows(spark: Any, table: str) -> None:
    out = DeltaTable.forPath(spark, table).update("id IN (1, 12, 13, 39)", {"v": "v + 1"})
    assert out.collect()[0]["num_affected_rows"] == 4
    changed = {1, 12, 13, 39}
    assert _rows(spark, table) == _expected(range(40), lambda i: i * 10 + (i in changed))
    adds, removes, info = _last_commit(table)
    new = [a for a in adds if "deletionVector" not in a]
    assert sum(json.loads(a["stats"])["numRecords"] for a in new) == 4
    marked = [a for a in adds if "deletionVector" in a]
    assert sum(a["deletionVector"]["cardinality"] for a in marked) == 4
    assert {r["path"] for r in removes} == {a["path"] for a in marked}
    m = _metrics(info)
    assert m["numUpdatedRows"] == 4 and m["numCopiedRows"] == 0


def test_merge_upsert_marks_matched_rows(spark: Any, table: str) -> None:
    src = spark.createDataFrame([(3, -3), (17, -17), (100, -100)], "id long, v long")
    src = src.selectExpr("id", "v", "CAST(id % 2 AS STRING) AS p")
    dt = DeltaTable.forPath(spark, table)
    (
        dt.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    expected = sorted(
        [(i, -i if i in (3, 17) else i * 10, str(i % 2)) for i in range(40)] + [(100, -100, "0")]
    )
    assert _rows(spark, table) == expected
    adds, _, info = _last_commit(table)
    new = [a for a in adds if "deletionVector" not in a]
    assert sum(json.loads(a["stats"])["numRecords"] for a in new) == 3  # 2 updated + 1 new
    m = _metrics(info)
    assert m["numTargetRowsUpdated"] == 2 and m["numTargetRowsInserted"] == 1
    assert m["numTargetRowsCopied"] == 0 and m["numTargetFilesRemoved"] == 0
    assert m["numTargetDeletionVectorsAdded"] == 2


def test_merge_delete_and_not_matched_by_source(spark: Any, table: str) -> None:
    src = spark.createDataFrame([(i,) for i in range(0, 40, 2)], "id long")
    dt = DeltaTable.forPath(spark, table)
    (
        dt.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("t.id < 10")
        .whenNotMatchedBySourceUpdate("t.id > 30", {"v": "0"})
        .execute()
    )
    expected = [
        (i, 0 if i > 30 and i % 2 else i * 10, str(i % 2))
        for i in range(40)
        if not (i % 2 == 0 and i < 10)
    ]
    assert _rows(spark, table) == sorted(expected)
    m = _metrics(_last_commit(table)[2])
    assert m["numTargetRowsDeleted"] == 5 and m["numTargetRowsUpdated"] == 5  # 31, 33, .., 39


def test_vectors_survive_checkpoints_and_later_deletes(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _make(spark, path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id = 1")
    from delta_pyspark.core.transaction.commit import checkpoint_now

    log = DeltaLog(path)
    checkpoint_now(log.store, log.snapshot())
    dt.delete("id = 2")  # extends the vector read back from the checkpoint
    assert _rows(spark, path) == _expected(i for i in range(40) if i not in (1, 2))
    (row,) = [r for r in DeltaLog(path).snapshot().files.to_pylist() if r["deletionVector"]]
    assert row["deletionVector"]["cardinality"] == 2


def _disable_vectors(log: DeltaLog) -> Any:
    """Commit ``delta.enableDeletionVectors=false``; the snapshot it replaced."""
    snap = log.snapshot()
    txn = Transaction(log, snap)
    conf = dict(snap.configuration) | {"delta.enableDeletionVectors": "false"}
    txn.update_metadata(snap.metadata.with_changes(configuration=conf))
    txn.commit("SET TBLPROPERTIES", {})
    return snap


def test_disabling_stops_new_vectors_and_keeps_old_ones_readable(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    _make(spark, path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id = 1")
    log = DeltaLog(path)
    _disable_vectors(log)
    dt.delete("id = 2")  # copy-on-write now
    adds, removes, _ = _last_commit(path)
    assert removes[0]["deletionVector"]["cardinality"] == 1  # the old vector's file, replaced
    assert all("deletionVector" not in a for a in adds)
    assert _rows(spark, path) == _expected(i for i in range(40) if i not in (1, 2))
    assert "deletionVectors" in (log.snapshot().protocol.reader_features or ())


@pytest.mark.parametrize("by_position", [True, False], ids=["by-position", "joined"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_copy_on_write_merge_keeps_rows_by_position_or_by_join_alike(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    by_position: bool,
    partitioned: bool,
) -> None:
    """A copy-on-write merge into files that still carry old vectors: unchanged rows are
    kept by leaving out the changed rows' positions (and the old vectors' rows), or by
    joining every row with the source; both give the same table and rewrite the same files."""
    import delta_pyspark.spark.commands.merge as merge_module
    import delta_pyspark.spark.commands.merge.positional as positional_module

    path = str(tmp_path / "t")
    _make(spark, path, n=400, partitioned=partitioned)  # 100 rows a file
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id IN (4, 15, 16)")  # vectors, then copy-on-write from here on
    snap = _disable_vectors(DeltaLog(path))
    used = []
    original = merge_module.MergeCommand._unchanged_rows

    def spy(self: Any, *args: Any) -> Any:
        used.append(True)
        return original(self, *args)

    monkeypatch.setattr(merge_module.MergeCommand, "_unchanged_rows", spy)
    if not by_position:
        monkeypatch.setattr(positional_module, "_MAX_COLLECTED_SOURCE_ROWS", -1)
    src = spark.createDataFrame(
        [(3, -3), (5, None), (13, -13), (15, -15), (999, -999)], "id long, v long"
    )
    src = src.selectExpr("id", "v", "CAST(id % 2 AS STRING) AS p")
    (
        dt.alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.v IS NULL")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert bool(used) == by_position  # candidates: 97 rows > 4 x 5 source rows
    expected = sorted(
        [(i, -i if i in (3, 13) else i * 10, str(i % 2)) for i in range(400)]
        + [(15, -15, "1"), (999, -999, "1")]
    )
    expected = [r for r in expected if r[0] not in (4, 5, 16) and r[:2] != (15, 150)]
    assert _rows(spark, path) == expected
    adds, removes, info = _last_commit(path)
    assert all("deletionVector" not in a for a in adds)
    before = snap.files.to_pylist()
    holding = {  # the files with ids 3, 5 and 13 (odd: p = 1 when partitioned)
        a["path"]
        for a in before
        if json.loads(a["stats"])["minValues"]["id"] <= 13
        and dict(a["partitionValues"] or []).get("p", "1") == "1"
    }
    assert {r["path"] for r in removes} == holding
    removed = [a for a in before if a["path"] in holding]
    m = _metrics(info)
    assert m["numTargetRowsUpdated"] == 2 and m["numTargetRowsDeleted"] == 1
    assert m["numTargetRowsInserted"] == 2
    live_before = sum(
        json.loads(a["stats"])["numRecords"] - (a["deletionVector"] or {}).get("cardinality", 0)
        for a in removed
    )
    written = sum(json.loads(a["stats"])["numRecords"] for a in adds)
    assert written == live_before - 1 + 2  # one row deleted, two inserted


# ------------------------------------------------------------------------ concurrency


@contextmanager
def commit_together(parties: int) -> Iterator[None]:
    """Hold every transaction at its first commit until ``parties`` of them got there,
    so all of them read the same version and then race to commit it."""
    barrier = threading.Barrier(parties, timeout=300)
    original = Transaction.commit

    def commit(self: Transaction, *args: Any, **kwargs: Any) -> Any:
        barrier.wait()
        return original(self, *args, **kwargs)

    Transaction.commit = commit  # type: ignore[method-assign]
    try:
        yield
    finally:
        Transaction.commit = original  # type: ignore[method-assign]


def _outcomes(fn: Any, n: int) -> list[BaseException | None]:
    def run(i: int) -> BaseException | None:
        try:
            fn(i)
            return None
        except Exception as e:  # the outcome under test
            return e

    with commit_together(n), ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


@pytest.mark.long  # CI's second step, for the quick run's time
def test_five_merges_into_the_same_row_one_commits(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _make(spark, path)
    versions_before = sorted((Path(path) / "_delta_log").glob("*.json"))

    def merge(i: int) -> None:
        src = spark.createDataFrame([(7, 1000 + i, "1")], "id long, v long, p string")
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    outcomes = _outcomes(merge, 5)
    winners = [i for i, e in enumerate(outcomes) if e is None]
    assert len(winners) == 1, outcomes
    losers = [e for e in outcomes if e is not None]
    assert all(isinstance(e, DeltaConcurrentModificationException) for e in losers), losers
    versions = sorted((Path(path) / "_delta_log").glob("*.json"))
    assert len(versions) == len(versions_before) + 1  # the losers left nothing in the log
    w = winners[0]
    assert _rows(spark, path) == _expected(range(40), lambda i: 1000 + w if i == 7 else i * 10)


@pytest.mark.long  # forty racing DELETEs: CI's second step
def test_forty_concurrent_deletes_of_disjoint_rows_all_commit(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _make(spark, path, n=800, files=2)
    log = DeltaLog(path)
    start = log.snapshot().version

    def delete(i: int) -> None:  # ids i*20 .. i*20+9: ten rows of one of the two files
        DeltaTable.forPath(spark, path).delete(f"id >= {i * 20} AND id < {i * 20 + 10}")

    outcomes = _outcomes(delete, 40)
    assert [e for e in outcomes if e is not None] == []
    assert log.snapshot().version == start + 40
    survivors = [i for i in range(800) if i % 20 >= 10]
    assert _rows(spark, path) == _expected(survivors)
    files = log.snapshot().files.to_pylist()
    assert len(files) == 2
    for f in files:  # each vector holds exactly the deleted rows of its own file
        ids = pq.read_table(Path(path) / f["path"], columns=["id"]).column("id").to_pylist()
        dv = DeletionVectorDescriptor.from_dict(f["deletionVector"])
        marked = deleted_row_indexes(dv, path, log_store_for(path)).tolist()
        assert marked == [pos for pos, i in enumerate(ids) if i % 20 < 10]


def test_enabling_on_an_existing_table_adds_the_feature(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(20).selectExpr("id", "id * 10 AS v", "CAST(id % 2 AS STRING) AS p").write.format(
        "delta"
    ).save(path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id = 0")  # copy-on-write: no vectors yet
    assert all(r["deletionVector"] is None for r in DeltaLog(path).snapshot().files.to_pylist())
    dt.setProperties({"delta.enableDeletionVectors": "true"})
    protocol = DeltaLog(path).snapshot().protocol
    assert "deletionVectors" in (protocol.reader_features or ())
    assert "deletionVectors" in (protocol.writer_features or ())
    before = _parquet_files(path)
    dt.delete("id = 1")
    assert _parquet_files(path) == before
    assert _rows(spark, path) == _expected(range(2, 20))
