"""MERGE's one-pass upsert (``merge/one_pass.py``): which merges take it, the files it
rewrites and leaves, the rows and metrics it writes, and its way out when a source row
matches several target rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaUnsupportedOperationException
from delta_pyspark.spark.commands.merge.command import MergeCommand
from delta_pyspark.tables import DeltaTable

SCHEMA = "id long, v long, s string"


@pytest.fixture
def one_pass(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each one-pass attempt of the test's merges: whether it wrote the merge (False: it
    handed the merge to the general path)."""
    attempts: list[bool] = []
    original = MergeCommand._upsert_in_one_pass

    def recorded(self: MergeCommand, *args: Any, **kwargs: Any) -> Any:
        metrics = original(self, *args, **kwargs)
        attempts.append(metrics is not None)
        return metrics

    monkeypatch.setattr(MergeCommand, "_upsert_in_one_pass", recorded)
    return attempts


def _even_table(spark: Any, path: str, schema: str = SCHEMA) -> list[str]:
    """Four files of even ids: 0-18, 20-38, 40-58, 60-78 (v = 10 * id); their paths."""
    for lo in range(0, 80, 20):
        rows = [(i, i * 10, f"s{i}") for i in range(lo, lo + 20, 2)]
        spark.createDataFrame(rows, schema).coalesce(1).write.format("delta").mode("append").save(
            path
        )
    return _paths(path)


def _paths(path: str) -> list[str]:
    return DeltaLog(path).snapshot().files.column("path").to_pylist()


def _rows(spark: Any, path: str) -> list[tuple]:
    df = spark.read.format("delta").load(path).select("id", "v", "s")
    return sorted((tuple(r) for r in df.collect()), key=lambda r: (r[0] is None, r[0] or 0))


def _upsert(spark: Any, path: str, rows: list[tuple], schema: str = SCHEMA, on: str = "") -> Any:
    source = spark.createDataFrame(rows, schema).alias("s")
    return (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source, on or "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )


def _metrics(path: str) -> dict[str, int]:
    info = DeltaLog(path).history(1)[0]
    return {k: int(v) for k, v in info["operationMetrics"].items()}


def _parquet_on_disk(path: str) -> set[str]:
    return {p.name for p in Path(path).glob("*.parquet")}


def _parquet_ever_added(path: str) -> set[str]:
    names = set()
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                names.add(Path(action["add"]["path"]).name)
    return names


def test_one_pass_upsert_rewrites_only_the_files_with_matches(
    spark: Any, tmp_path: Path, one_pass: list[bool]
):
    """The source's keys span three files; ids 21 and 45 fall inside the second's and the
    third's ranges but match nothing, so only the first file, where id 2 matches, is
    rewritten."""
    path = str(tmp_path / "t")
    files = _even_table(spark, path)
    src = [(2, 7, "upd"), (21, 8, "ins"), (45, 9, "ins"), (None, 10, "nokey")]
    _upsert(spark, path, src)
    assert one_pass == [True]
    after = _paths(path)
    assert set(files[1:]) <= set(after) and files[0] not in after
    expected = [(i, i * 10, f"s{i}") for i in range(0, 80, 2) if i != 2] + src
    assert _rows(spark, path) == sorted(expected, key=lambda r: (r[0] is None, r[0] or 0))
    metrics = _metrics(path)
    assert {k: metrics[k] for k in metrics if k.startswith("numTarget")} | {
        "numSourceRows": metrics["numSourceRows"],
        "numOutputRows": metrics["numOutputRows"],
    } == {
        "numSourceRows": 4,
        "numOutputRows": 13,  # the first file's 9 other rows, the 4 source rows
        "numTargetRowsInserted": 3,
        "numTargetRowsUpdated": 1,
        "numTargetRowsMatchedUpdated": 1,
        "numTargetRowsNotMatchedBySourceUpdated": 0,
        "numTargetRowsDeleted": 0,
        "numTargetRowsMatchedDeleted": 0,
        "numTargetRowsNotMatchedBySourceDeleted": 0,
        "numTargetRowsCopied": 9,
        "numTargetFilesAdded": metrics["numTargetFilesAdded"],
        "numTargetFilesRemoved": 1,
        "numTargetBytesAdded": metrics["numTargetBytesAdded"],
        "numTargetBytesRemoved": metrics["numTargetBytesRemoved"],
        "numTargetChangeFilesAdded": 0,
        "numTargetDeletionVectorsAdded": 0,
        "numTargetDeletionVectorsRemoved": 0,
        "numTargetDeletionVectorsUpdated": 0,
    }
    assert _parquet_on_disk(path) == _parquet_ever_added(path)


def test_one_pass_upsert_of_only_new_keys_rewrites_nothing(
    spark: Any, tmp_path: Path, one_pass: list[bool]
):
    path = str(tmp_path / "t")
    files = _even_table(spark, path)
    _upsert(spark, path, [(1, 1, "a"), (41, 2, "b"), (77, 3, "c")])
    assert one_pass == [True]
    assert set(files) < set(_paths(path))
    metrics = _metrics(path)
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsInserted"]) == (0, 3)
    assert len(_rows(spark, path)) == 43
    # the read of files without matches yields nothing, and no empty file is added for it
    version = DeltaLog(path).snapshot().version
    commit = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in commit if '"add"' in line]
    records = [json.loads(a["stats"])["numRecords"] for a in adds]
    assert sum(records) == 3 and min(records) > 0


@pytest.mark.long  # slow: CI's second step
def test_one_pass_hands_a_source_row_matching_two_target_rows_to_the_general_path(
    spark: Any, tmp_path: Path, one_pass: list[bool]
):
    """Target id 4 is in two files: the source row updates both, so it is written twice,
    which the one pass (every source row once) cannot do. What it wrote is deleted."""
    path = str(tmp_path / "t")
    _even_table(spark, path)
    spark.createDataFrame([(4, -1, "twin")], SCHEMA).write.format("delta").mode("append").save(path)
    _upsert(spark, path, [(4, 44, "upd"), (5, 55, "ins")])
    assert one_pass == [False]
    rows = _rows(spark, path)
    assert [r for r in rows if r[0] in (4, 5)] == [(4, 44, "upd"), (4, 44, "upd"), (5, 55, "ins")]
    assert len(rows) == 42
    assert _parquet_on_disk(path) == _parquet_ever_added(path)


def test_one_pass_refuses_a_target_row_that_two_source_rows_match(
    spark: Any, tmp_path: Path, one_pass: list[bool]
):
    path = str(tmp_path / "t")
    _even_table(spark, path)
    before = _rows(spark, path)
    version = DeltaLog(path).snapshot().version
    with pytest.raises(DeltaUnsupportedOperationException, match="several source rows matched"):
        _upsert(spark, path, [(6, 1, "a"), (6, 2, "b"), (7, 3, "c")])
    assert one_pass == []  # raised from inside the one pass
    assert DeltaLog(path).snapshot().version == version
    assert _rows(spark, path) == before
    assert _parquet_on_disk(path) == _parquet_ever_added(path)


@pytest.mark.parametrize("key_type", ["tinyint", "smallint", "int", "bigint"])
def test_one_pass_reads_integral_keys_of_every_width(
    spark: Any, tmp_path: Path, one_pass: list[bool], key_type: str
):
    """Keys are looked up as longs whatever their width; negative keys, the smallest long
    (the hash table's empty slot) and a null target key included (the null one never
    matches)."""
    path = str(tmp_path / "t")
    schema = f"id {key_type}, v long, s string"
    rows = [(i, i, "old") for i in range(-60, 60, 3)] + [(None, 0, "null")]
    src = [(-60, 1, "upd"), (57, 2, "upd"), (-59, 3, "ins"), (None, 4, "ins")]
    if key_type == "bigint":
        rows.append((-(2**63), 5, "old"))
        src.append((-(2**63), 6, "upd"))
    spark.createDataFrame(rows, schema).repartition(3).write.format("delta").save(path)
    _upsert(spark, path, src, schema)
    assert one_pass == [True]
    changed = {r[0]: r for r in src if r[2] == "upd"}
    expected = [changed.get(r[0], r) for r in rows] + [(-59, 3, "ins"), (None, 4, "ins")]
    assert _rows(spark, path) == sorted(expected, key=lambda r: (r[0] is None, r[0] or 0))


@pytest.mark.parametrize(
    "conf, value",
    [
        ("spark.sql.files.maxPartitionBytes", "512"),
        ("spark.sql.parquet.enableVectorizedReader", "false"),
    ],
    ids=["512-byte-splits", "row-by-row-reader"],
)
def test_one_pass_reads_files_whole_in_batches_or_rows(
    spark: Any, tmp_path: Path, one_pass: list[bool], conf: str, value: str
):
    """With 512-byte splits Spark would cut every file in pieces: the reader only knows a
    file holds no match once it has read all its keys, so it refuses pieces, and the
    format keeps files whole. Spark's row-by-row Parquet reader hands the reader rows, not
    batches: the keys and the dropped rows are counted the same way."""
    path = str(tmp_path / "t")
    _even_table(spark, path)
    spark.conf.set(conf, value)
    try:
        _upsert(spark, path, [(0, 1, "upd"), (18, 2, "upd"), (30, 3, "upd"), (31, 4, "ins")])
    finally:
        spark.conf.unset(conf)
    assert one_pass == [True]
    rows = _rows(spark, path)
    assert len(rows) == 41
    assert [r for r in rows if r[0] in (0, 2, 18, 30, 31)] == [
        (0, 1, "upd"),
        (2, 20, "s2"),
        (18, 2, "upd"),
        (30, 3, "upd"),
        (31, 4, "ins"),
    ]


@pytest.mark.parametrize("layout", ["partitioned", "column-mapping", "column-mapping-partitioned"])
def test_one_pass_upserts_partitioned_and_column_mapped_tables(
    spark: Any, tmp_path: Path, one_pass: list[bool], layout: str
):
    """Partition values come from the directories (or, with column mapping, from the log),
    keys from the files' physical columns; only the files with matches are rewritten."""
    path = str(tmp_path / "t")
    rows = [(i, i * 10, f"p{i % 3}") for i in range(30)]
    writer = spark.createDataFrame(rows, SCHEMA).repartition(2).write.format("delta")
    if "partitioned" in layout:
        writer = writer.partitionBy("s")
    if "column-mapping" in layout:
        writer = writer.option("delta.columnMapping.mode", "name")
    writer.save(path)
    files = DeltaLog(path).snapshot().files
    src = [(4, 44, "p1"), (7, 77, "p1"), (31, 1, "p0"), (32, 2, "p9")]
    _upsert(spark, path, src)
    assert one_pass == [True]
    by_id = {r[0]: r for r in rows} | {r[0]: r for r in src}
    assert _rows(spark, path) == sorted(by_id.values())
    if "partitioned" in layout:  # the p1 files rewritten, the p0 and p2 ones kept
        kept = [
            p
            for p, v in zip(
                files.column("path").to_pylist(),
                files.column("partitionValues").to_pylist(),
                strict=True,
            )
            if [value for _, value in v] != ["p1"]
        ]
        assert set(kept) <= set(_paths(path))
        assert _metrics(path)["numTargetFilesRemoved"] == files.num_rows - len(kept)


@pytest.mark.parametrize(
    "case",
    [
        "extra-conjunct",
        "string-key",
        "update-condition",
        "partition-key",
        "change-data-feed",
        "deletion-vectors",
        "schema-evolution",
    ],
)
def test_other_merges_take_the_general_path(
    spark: Any, tmp_path: Path, one_pass: list[bool], case: str
):
    path = str(tmp_path / "t")
    schema = "id string, v long, s string" if case == "string-key" else SCHEMA
    rows = [(str(i) if case == "string-key" else i, i, f"p{i % 2}") for i in range(10)]
    writer = spark.createDataFrame(rows, schema).repartition(2).write.format("delta")
    if case == "partition-key":
        writer = writer.partitionBy("id")
    if case == "change-data-feed":
        writer = writer.option("delta.enableChangeDataFeed", "true")
    if case == "deletion-vectors":
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.save(path)
    key = "3" if case == "string-key" else 3
    source = spark.createDataFrame([(key, 33, "p1")], schema).alias("s")
    if case == "schema-evolution":
        source = source.selectExpr("*", "'x' AS extra").alias("s")
    merge = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source, "t.id = s.id AND t.v >= 0" if case == "extra-conjunct" else "t.id = s.id")
        .whenMatchedUpdateAll("s.v > 0" if case == "update-condition" else None)
        .whenNotMatchedInsertAll()
    )
    if case == "schema-evolution":
        merge = merge.withSchemaEvolution()
    merge.execute()
    assert one_pass == []
    df = spark.read.format("delta").load(path)
    assert sorted(tuple(r) for r in df.select("v", "s").collect()) == sorted(
        [(33, "p1") if i == 3 else (i, f"p{i % 2}") for i in range(10)]
    )
