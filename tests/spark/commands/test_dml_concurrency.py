"""DML against the isolation matrix: a concurrent commit lands between read and commit.

``before_commit(fn)`` runs ``fn`` (the winning operation, committed for real) right before
the operation under test commits, so the loser started from the older snapshot exactly
as two racing writers would; outcomes are deterministic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from commit_hooks import before_commit

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import ConcurrentAppendException, ConcurrentDeleteReadException
from delta_pyspark.tables import DeltaTable


def _table(
    spark: Any, path: str, ids: list[int], isolation: str | None = None, files: int = 4
) -> None:
    df = spark.createDataFrame([(i, i * 10, i // 10) for i in ids], "id long, value long, b long")
    writer = df.repartitionByRange(files, "id").write.format("delta").partitionBy("b")
    if isolation:
        writer = writer.option("delta.isolationLevel", isolation)
    writer.save(path)


def _state(spark: Any, path: str) -> dict[int, int]:
    return {r.id: r.value for r in spark.read.format("delta").load(path).collect()}


def _referenced(path: str) -> set[str]:
    return set(DeltaLog(path).snapshot().files.column("path").to_pylist())


def _on_disk(path: str) -> set[str]:
    root = Path(path)
    return {
        str(p.relative_to(root))
        for p in root.rglob("*.parquet")
        if "_delta_log" not in p.parts and "_delta_staging" not in p.parts
    }


def _upsert(spark: Any, path: str, rows: list[tuple[int, int]]) -> None:
    src = spark.createDataFrame([(i, v, i // 10) for i, v in rows], "id long, value long, b long")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"value": "t.value + s.value"})
        .whenNotMatchedInsertAll()
        .execute()
    )


def _insert(spark: Any, path: str, rows: list[tuple[int, int]]) -> None:
    df = spark.createDataFrame([(i, v, i // 10) for i, v in rows], "id long, value long, b long")
    df.write.format("delta").mode("append").save(path)


def test_worked_example_disjoint_key_commits_under_serializable(spark: Any, tmp_path: Path):
    """T1 inserts id=1; T2 (same snapshot) upserts id=2: no file T1 added can hold id=2."""
    path = str(tmp_path / "t")
    _table(spark, path, [2, 3, 4, 12, 13], "Serializable")
    with before_commit(lambda: _insert(spark, path, [(1, 10)])):
        _upsert(spark, path, [(2, 100)])
    assert _state(spark, path) == {1: 10, 2: 120, 3: 30, 4: 40, 12: 120, 13: 130}
    info = DeltaLog(path).history(1)[0]
    assert (info["operation"], info["readVersion"], info["isolationLevel"]) == (
        "MERGE",
        0,
        "Serializable",
    )


def test_worked_example_same_key_conflicts_under_serializable(spark: Any, tmp_path: Path):
    """T1 inserts id=5 while T2 upserts id=5: T2 must fail, not insert a duplicate."""
    path = str(tmp_path / "t")
    _table(spark, path, [2, 3, 4, 12, 13], "Serializable")
    with (
        pytest.raises(ConcurrentAppendException, match=r"version 1 \(WRITE") as err,
        before_commit(lambda: _insert(spark, path, [(5, 50)])),
    ):
        _upsert(spark, path, [(5, 100)])
    assert "id IN (5)" in str(err.value)
    assert _state(spark, path) == {2: 20, 3: 30, 4: 40, 5: 50, 12: 120, 13: 130}
    assert DeltaLog(path).snapshot().version == 1


def test_merge_vs_blind_insert_commits_under_write_serializable(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _table(spark, path, [2, 3, 4])
    with before_commit(lambda: _insert(spark, path, [(5, 50)])):
        _upsert(spark, path, [(5, 100)])
    # A state no serial order gives (the upsert did not see the insert): WriteSerializable.
    rows = spark.read.format("delta").load(path).where("id = 5").collect()
    assert sorted(r.value for r in rows) == [50, 100]
    assert DeltaLog(path).history(1)[0]["isolationLevel"] == "WriteSerializable"


def test_disjoint_merges_in_one_partition_both_commit(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _table(spark, path, [*range(10, 21)])  # b=1 holds ids 10..19
    before = _state(spark, path)
    with before_commit(lambda: _upsert(spark, path, [(18, 1), (19, 1)])):
        _upsert(spark, path, [(10, 1), (11, 1)])
    after = _state(spark, path)
    assert after == before | {10: 101, 11: 111, 18: 181, 19: 191}
    assert [h["operation"] for h in DeltaLog(path).history(2)] == ["MERGE", "MERGE"]


def test_update_and_delete_on_the_same_file_one_fails(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _table(spark, path, [1, 2, 3, 4], files=1)
    dt = DeltaTable.forPath(spark, path)
    # As in delta-spark, the rewritten copy the DELETE added is checked first: it may hold id 3.
    with (
        pytest.raises(ConcurrentAppendException, match=r"version 1 \(DELETE.*\[id = 3\]"),
        before_commit(lambda: dt.delete("id = 4")),
    ):
        dt.update("id = 3", {"value": "0"})
    assert _state(spark, path) == {1: 10, 2: 20, 3: 30}  # the serial order "delete" alone
    assert DeltaLog(path).snapshot().version == 1
    orphans = _on_disk(path) - _referenced(path)
    assert orphans  # the failed update's files exist, unreferenced until VACUUM
    assert all(p in _on_disk(path) for p in _referenced(path))


def test_update_of_a_file_removed_by_a_partition_delete(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _table(spark, path, [1, 2, 13, 14])
    dt = DeltaTable.forPath(spark, path)
    with (
        pytest.raises(ConcurrentDeleteReadException, match="which this transaction read"),
        before_commit(lambda: dt.delete("b = 0")),
    ):
        dt.update("id = 2", {"value": "0"})
    assert _state(spark, path) == {13: 130, 14: 140}


@pytest.mark.long  # slow: CI's second step
def test_delete_vs_insert_into_read_range(spark: Any, tmp_path: Path):
    path = str(tmp_path / "s")
    _table(spark, path, [1, 2, 3], "Serializable")
    dt = DeltaTable.forPath(spark, path)
    with (
        pytest.raises(ConcurrentAppendException),
        before_commit(lambda: _insert(spark, path, [(2, 99)])),
    ):
        dt.delete("id = 2")
    # Under WriteSerializable the same race commits: the delete is ordered before the insert.
    path2 = str(tmp_path / "w")
    _table(spark, path2, [1, 2, 3])
    dt2 = DeltaTable.forPath(spark, path2)
    with before_commit(lambda: _insert(spark, path2, [(2, 99)])):
        dt2.delete("id = 2")
    assert _state(spark, path2) == {1: 10, 2: 99, 3: 30}


def test_concurrent_inserts_never_conflict(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    _table(spark, path, [1], "Serializable")
    with before_commit(lambda: _insert(spark, path, [(2, 20)])):
        _insert(spark, path, [(3, 30)])
    assert _state(spark, path) == {1: 10, 2: 20, 3: 30}
    versions = [h["readVersion"] for h in DeltaLog(path).history(2)]
    assert versions == [0, 0]
