"""Tables whose log names files with glob characters, and refused DML that must leave
nothing behind (issue: untrusted logs and paths)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog, clear_log_cache
from delta_pyspark.exceptions import DeltaAnalysisException, UnsupportedTableFeatureError
from delta_pyspark.spark.files.scan import DeltaFileNotFoundError
from delta_pyspark.tables import DeltaTable

# File names a glob would expand, with decoys that the pattern would match instead.
GLOB_NAMES = {
    "f[12].parquet": ["f1.parquet", "f2.parquet"],
    "a*b.parquet": ["aXb.parquet", "ab.parquet"],
    "q?.parquet": ["q1.parquet"],
    "c{1,2}.parquet": ["c1.parquet", "c2.parquet"],
    "back\\slash.parquet": ["backslash.parquet"],
}


def _table(spark: Any, root: Path, dvs: bool) -> None:
    """Three files of ids 0-2, 3-5 and 6-8."""
    for start in (0, 3, 6):
        df = spark.range(start, start + 3).selectExpr("id", "cast(id as string) AS s")
        writer = df.coalesce(1).write.format("delta").mode("append")
        if dvs:
            writer = writer.option("delta.enableDeletionVectors", "true")
        writer.save(str(root))


def _rename_second_file(root: Path, name: str) -> str:
    """Move the file of version 1 to ``name`` (its log path URI-encoded, as the protocol
    asks) and put decoys the glob would match beside it; returns the old file's name."""
    commit = root / "_delta_log" / f"{1:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            old = action["add"]["path"]
            (root / old).rename(root / name)
            action["add"]["path"] = quote(name)
    commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
    clear_log_cache()  # a committed version rewritten in place: not a change a refresh sees
    first = next(p for p in root.glob("*.parquet") if p.name not in (name, old))
    for decoy in GLOB_NAMES[name]:
        shutil.copy(first, root / decoy)
    return old


def _ids(df: Any) -> list[int]:
    return sorted(r.id for r in df.collect())


@pytest.mark.parametrize("name", sorted(GLOB_NAMES))
def test_file_names_with_glob_characters_read_exactly_that_file(
    spark: Any, tmp_path: Path, name: str
) -> None:
    root = tmp_path / "t"
    _table(spark, root, dvs=False)
    _rename_second_file(root, name)
    assert _ids(spark.read.format("delta").load(str(root))) == list(range(9))
    assert _ids(spark.read.format("delta").load(str(root)).where("id = 4")) == [4]


@pytest.mark.parametrize("name", ["f[12].parquet", "c{1,2}.parquet"])
def test_dml_on_files_with_glob_characters(spark: Any, tmp_path: Path, name: str) -> None:
    """DELETE with deletion vectors finds the rows of the oddly named file (it failed with
    "no deletion vector was loaded" when the scan globbed), and UPDATE rewrites it."""
    root = tmp_path / "t"
    _table(spark, root, dvs=True)
    _rename_second_file(root, name)
    table = DeltaTable.forPath(spark, str(root))
    table.delete("id = 4")
    assert _ids(table.toDF()) == [0, 1, 2, 3, 5, 6, 7, 8]
    files = DeltaLog(str(root)).snapshot().files.to_pylist()
    vectors = {f["path"]: f["deletionVector"] is not None for f in files}
    assert vectors[quote(name)] is True  # the row went through the renamed file's vector
    assert sum(vectors.values()) == 1
    table.update("id = 5", {"id": "50"})
    assert _ids(table.toDF()) == [0, 1, 2, 3, 6, 7, 8, 50]
    for decoys in GLOB_NAMES[name]:
        assert (root / decoys).exists()  # untouched: never part of the table


@pytest.mark.parametrize("operation", ["delete", "update", "merge", "optimize"])
def test_dml_on_a_data_file_removed_by_hand_is_refused_by_name(
    spark: Any, tmp_path: Path, operation: str
) -> None:
    """The scans of DML take their listing from the log, not from storage: a file the log
    names but storage lacks is a ``DeltaFileNotFoundError`` naming it, before any job, and
    nothing is committed."""
    root = tmp_path / "t"
    _table(spark, root, dvs=False)
    log = DeltaLog(str(root))
    (second,) = set(_log_paths(log, 1)) - set(_log_paths(log, 0))
    (root / second).unlink()
    table = DeltaTable.forPath(spark, str(root))
    with pytest.raises(DeltaFileNotFoundError, match=re.escape(second)):
        if operation == "delete":
            table.delete("id = 4")
        elif operation == "update":
            table.update("id = 4", {"id": "40"})
        elif operation == "merge":
            source = spark.range(4, 5).selectExpr("id", "'x' AS s")
            table.alias("t").merge(source.alias("u"), "t.id = u.id").whenMatchedDelete().execute()
        else:
            table.optimize().executeCompaction()
    assert DeltaLog(str(root)).snapshot().version == 2


def _log_paths(log: DeltaLog, version: int) -> list[str]:
    return log.snapshot(version).files.column("path").to_pylist()


def _data_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "_delta_log" not in p.parts}


@pytest.mark.parametrize("operation", ["delete", "update", "merge", "overwrite"])
def test_refused_dml_on_an_append_only_table_writes_no_file(
    spark: Any, tmp_path: Path, operation: str
) -> None:
    root = tmp_path / "t"
    spark.range(10).write.format("delta").option("delta.appendOnly", "true").save(str(root))
    table = DeltaTable.forPath(spark, str(root))
    before = _data_files(root)
    version = table.history(1).collect()[0].version
    with pytest.raises(DeltaAnalysisException, match="append-only"):
        if operation == "delete":
            table.delete("id = 3")
        elif operation == "update":
            table.update("id = 3", {"id": "30"})
        elif operation == "merge":
            source = spark.range(3, 12).selectExpr("id")
            (
                table.alias("t")
                .merge(source.alias("s"), "t.id = s.id")
                .whenMatchedUpdate(set={"id": "s.id + 100"})
                .whenNotMatchedInsertAll()
                .execute()
            )
        else:
            spark.range(3).write.format("delta").mode("overwrite").save(str(root))
    assert _data_files(root) == before
    assert table.history(1).collect()[0].version == version
    assert _ids(table.toDF()) == list(range(10))


def test_insert_only_merge_on_an_append_only_table_is_allowed(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    spark.range(5).write.format("delta").option("delta.appendOnly", "true").save(str(root))
    table = DeltaTable.forPath(spark, str(root))
    source = spark.range(3, 8).selectExpr("id")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    assert _ids(table.toDF()) == list(range(8))


@pytest.mark.parametrize("operation", ["append", "delete", "update", "merge"])
def test_a_table_needing_an_unknown_writer_feature_is_refused_before_any_file_is_written(
    spark: Any, tmp_path: Path, operation: str
) -> None:
    root = tmp_path / "t"
    spark.range(10).write.format("delta").save(str(root))
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [],
                "writerFeatures": ["futureFeature"]}  # fmt: skip
    (root / "_delta_log" / f"{1:020d}.json").write_text(
        json.dumps({"commitInfo": {"operation": "UPGRADE PROTOCOL"}})
        + "\n"
        + json.dumps({"protocol": protocol})
        + "\n"
    )
    table = DeltaTable.forPath(spark, str(root))
    assert _ids(table.toDF()) == list(range(10))  # readable: no reader feature is needed
    before = _data_files(root)
    with pytest.raises(UnsupportedTableFeatureError, match="futureFeature"):
        if operation == "append":
            spark.range(3).write.format("delta").mode("append").save(str(root))
        elif operation == "delete":
            table.delete("id = 3")
        elif operation == "update":
            table.update("id = 3", {"id": "30"})
        else:
            source = spark.range(3, 12).selectExpr("id")
            (
                table.alias("t")
                .merge(source.alias("s"), "t.id = s.id")
                .whenNotMatchedInsertAll()
                .execute()
            )
    assert _data_files(root) == before
