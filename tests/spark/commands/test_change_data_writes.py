"""DELETE, UPDATE and MERGE on tables with ``delta.enableChangeDataFeed = true`` write
``_change_data/`` files and commit their ``cdc`` actions (inspected on disk here; the feed
read back is in ``test_change_data_feed.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

from delta_pyspark.tables import DeltaTable


def commit(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def cdc_rows(path: str, version: int) -> list[tuple[Any, ...]]:
    """The rows of version's cdc files (partition values from the action), sorted."""
    rows = []
    for action in commit(path, version):
        cdc = action.get("cdc")
        if cdc is None:
            continue
        assert cdc["path"].startswith("_change_data/") and cdc["dataChange"] is False
        local = Path(path) / unquote(cdc["path"])
        assert local.stat().st_size == cdc["size"]
        table = pq.read_table(local)
        for row in table.to_pylist():
            row.update(cdc["partitionValues"])
            rows.append(tuple(sorted(row.items())))
    return sorted(rows)


def rows(*items: tuple[int, str, str]) -> list[tuple[Any, ...]]:
    out = [
        tuple(sorted({"id": i, "part": p, "_change_type": t, "v": None}.items()))
        for i, p, t in items
    ]
    return sorted(out)


def _table(spark: Any, path: str, dv: bool, partitioned: bool = True) -> None:
    df = spark.createDataFrame(
        [(1, "a", None), (2, "a", None), (3, "b", None)], "id long, part string, v string"
    )
    writer = df.write.format("delta").option("delta.enableChangeDataFeed", "true")
    if dv:
        writer = writer.option("delta.enableDeletionVectors", "true")
    if partitioned:
        writer = writer.partitionBy("part")
    writer.save(path)


@pytest.mark.parametrize("dv", [False, True])
def test_update_writes_pre_and_post_images(spark: Any, tmp_path: Path, dv: bool) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv)
    protocol = next(a["protocol"] for a in commit(path, 0) if "protocol" in a)
    assert protocol["minWriterVersion"] >= 4  # changeDataFeed (legacy version 4, or 7 + feature)
    assert protocol["minWriterVersion"] < 7 or "changeDataFeed" in protocol["writerFeatures"]
    DeltaTable.forPath(spark, path).update("id = 1", {"id": "10"})
    assert cdc_rows(path, 1) == rows((1, "a", "update_preimage"), (10, "a", "update_postimage"))
    paths = [a["cdc"]["path"] for a in commit(path, 1) if "cdc" in a]
    assert paths and all(p.startswith("_change_data/part=a/") for p in paths)
    assert not (Path(path) / "_change_data" / "_delta_staging").exists()
    metrics = next(a for a in commit(path, 1) if "commitInfo" in a)["commitInfo"]
    assert int(metrics["operationMetrics"]["numAddedChangeFiles"]) == len(paths)


def test_copy_on_write_delete_writes_the_deleted_rows(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv=False, partitioned=False)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    assert cdc_rows(path, 1) == rows((2, "a", "delete"))
    assert all(
        a["cdc"]["path"].count("/") == 1 and a["cdc"]["partitionValues"] == {}
        for a in commit(path, 1)
        if "cdc" in a
    )


def test_deletes_of_whole_files_or_by_deletion_vectors_write_none(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv=True)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")  # by vector: readers diff them
    spark.sql(f"DELETE FROM delta.`{path}` WHERE part = 'b'")  # whole files
    assert not any("cdc" in a for v in (1, 2) for a in commit(path, v))
    assert any("remove" in a for a in commit(path, 2))


@pytest.mark.parametrize("dv", [False, True])
def test_merge_writes_every_kind_of_change(spark: Any, tmp_path: Path, dv: bool) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv)
    source = spark.createDataFrame(
        [(1, "a", "x"), (3, "b", "y"), (7, "b", "z")], "id long, part string, v string"
    )
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("s.id = 1", {"v": "s.v"})
        .whenMatchedDelete()
        .whenNotMatchedInsertAll()
        .execute()
    )
    got = cdc_rows(path, 1)
    expected = [
        {"id": 1, "part": "a", "v": None, "_change_type": "update_preimage"},
        {"id": 1, "part": "a", "v": "x", "_change_type": "update_postimage"},
        {"id": 3, "part": "b", "v": None, "_change_type": "delete"},
        {"id": 7, "part": "b", "v": "z", "_change_type": "insert"},
    ]
    assert got == sorted(tuple(sorted(e.items())) for e in expected)


def test_insert_only_merge_and_appends_write_none(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv=False)
    source = spark.createDataFrame([(9, "a", "n")], "id long, part string, v string")
    table = DeltaTable.forPath(spark, path)
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    source.write.format("delta").mode("append").save(path)
    assert not any("cdc" in a for v in (1, 2) for a in commit(path, v))
    assert not (Path(path) / "_change_data").exists()


def test_column_mapped_tables_write_physical_names(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, part string")
    (
        df.write.format("delta")
        .option("delta.enableChangeDataFeed", "true")
        .option("delta.columnMapping.mode", "name")
        .partitionBy("part")
        .save(path)
    )
    DeltaTable.forPath(spark, path).update("id = 1", {"id": "5"})
    schema = json.loads(
        next(a for a in commit(path, 0) if "metaData" in a)["metaData"]["schemaString"]
    )
    physical = {
        f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in schema["fields"]
    }
    cdcs = [a["cdc"] for a in commit(path, 1) if "cdc" in a]
    assert cdcs and all(c["path"].startswith(f"_change_data/{physical['part']}=a/") for c in cdcs)
    assert list(cdcs[0]["partitionValues"]) == [physical["part"]]
    got = []
    for c in cdcs:
        table = pq.read_table(Path(path) / unquote(c["path"]))
        assert table.column_names == [physical["id"], "_change_type"]
        got += zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True)
    assert sorted(got) == [(1, "update_preimage"), (5, "update_postimage")]
