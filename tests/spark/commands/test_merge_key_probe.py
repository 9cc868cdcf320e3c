"""MERGE with deletion vectors whose phase 1 is a key probe (``merge/key_probe.py``): which
merges take it, the rows it marks deleted and writes, the metrics, rows a vector already
deletes, its way out to the general path when a key matches several times, and a matched
clause's condition evaluated on matched rows only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import MergeMultipleMatchesError
from delta_pyspark.spark.commands.merge.command import MergeCommand
from delta_pyspark.tables import DeltaTable

SCHEMA = "id long, v long, s string"


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each probe of the test's merges: whether it found the matches (False: it handed the
    merge to the general path)."""
    attempts: list[bool] = []
    original = MergeCommand._matches_found

    def recorded(self: MergeCommand, *args: Any, **kwargs: Any) -> Any:
        found = original(self, *args, **kwargs)
        attempts.append(found is not None)
        return found

    monkeypatch.setattr(MergeCommand, "_matches_found", recorded)
    return attempts


_UNCHANGED_ROWS = MergeCommand._unchanged_rows


def _not_called(*args: Any) -> Any:
    raise AssertionError("a job the probe's own job should have done")


def _table(spark: Any, path: str, ids: list[int], dv: bool = True) -> None:
    """Four files of ``ids`` (v = 10 * id, s = 's<id>')."""
    rows = [(i, i * 10, f"s{i}") for i in ids]
    writer = spark.createDataFrame(rows, SCHEMA).repartitionByRange(4, "id").write.format("delta")
    writer.option("delta.enableDeletionVectors", str(dv).lower()).save(path)


def _rows(spark: Any, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _last_commit(path: str) -> tuple[list[dict], list[dict], dict[str, int]]:
    version = DeltaLog(path).snapshot().version
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    actions = [json.loads(line) for line in lines]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    metrics = {k: int(v) for k, v in info["operationMetrics"].items()}
    adds = [a["add"] for a in actions if "add" in a]
    return adds, [a["remove"] for a in actions if "remove" in a], metrics


def _merge(
    spark: Any,
    path: str,
    rows: list[tuple],
    conditional: bool = False,
    update: str | None = None,
) -> None:
    source = spark.createDataFrame(rows, SCHEMA).alias("src")
    merge = DeltaTable.forPath(spark, path).alias("t").merge(source, "t.id = src.id")
    if conditional:
        merge = (
            merge.whenMatchedUpdateAll("src.v % 2 = 0")
            .whenMatchedDelete("src.v % 2 = 1")
            .whenNotMatchedInsertAll("src.v % 3 != 0")
        )
    else:
        merge = merge.whenMatchedUpdateAll(update).whenNotMatchedInsertAll()
    merge.execute()


def test_probe_upserts_by_marking_rows_deleted(
    spark: Any, tmp_path: Path, probes: list[bool], monkeypatch: pytest.MonkeyPatch
):
    path = str(tmp_path / "t")
    _table(spark, path, list(range(0, 80, 2)))
    before = set(DeltaLog(path).snapshot().files.column("path").to_pylist())
    source = [(i, i * 100, f"new{i}") for i in (4, 6, 50, 7, 79)]
    # the source's rows are written in the probe's job: no probe job of its own
    monkeypatch.setattr(MergeCommand, "_probe_matches", _not_called)
    _merge(spark, path, source)
    assert probes == [True]
    expected = {i: (i, i * 10, f"s{i}") for i in range(0, 80, 2)}
    expected |= {r[0]: r for r in source}
    assert _rows(spark, path) == sorted(expected.values())
    adds, removes, metrics = _last_commit(path)
    # no data file rewritten: the files with matches come back with a vector
    assert {r["path"] for r in removes} <= before
    marked = [a for a in adds if a["path"] in before]
    assert sum(a["deletionVector"]["cardinality"] for a in marked) == 3
    assert metrics["numTargetRowsUpdated"] == 3
    assert metrics["numTargetRowsInserted"] == 2
    assert metrics["numTargetRowsDeleted"] == 0
    assert metrics["numTargetRowsCopied"] == 0
    assert metrics["numTargetDeletionVectorsAdded"] == len(marked)
    assert metrics["numOutputRows"] == 5


@pytest.mark.parametrize("dv", [True, False], ids=["deletion-vectors", "copy-on-write"])
def test_probe_decides_conditional_clauses_by_the_source_row(
    spark: Any, tmp_path: Path, probes: list[bool], monkeypatch: pytest.MonkeyPatch, dv: bool
):
    ids = list(range(0, 80, 2))
    pairs = [(2, 4), (4, 5), (6, 8), (9, 7), (11, 9), (13, 10)]  # (id, v)
    source = [(i, v, f"n{i}") for i, v in pairs]
    probed = str(tmp_path / "probed")
    _table(spark, probed, ids, dv=dv)
    # copy-on-write: the probe's job writes the unchanged rows too, no second read of them
    monkeypatch.setattr(MergeCommand, "_unchanged_rows", _not_called)
    _merge(spark, probed, source, conditional=True)
    assert probes == [True]
    monkeypatch.setattr(MergeCommand, "_unchanged_rows", _UNCHANGED_ROWS)
    joined = str(tmp_path / "joined")  # the same merge through the general path's join
    _table(spark, joined, ids, dv=dv)
    monkeypatch.setattr(MergeCommand, "_probes_matches", lambda *args: False)
    _merge(spark, joined, source, conditional=True)
    assert probes == [True]
    expected = {i: (i, i * 10, f"s{i}") for i in ids}
    expected[2] = (2, 4, "n2")  # v even: updated
    del expected[4]  # v odd: deleted
    expected[6] = (6, 8, "n6")
    expected[9] = (9, 7, "n9")  # new, v % 3 != 0: inserted
    expected[13] = (13, 10, "n13")  # 11: v % 3 == 0, not inserted
    assert _rows(spark, probed) == sorted(expected.values()) == _rows(spark, joined)
    metrics, reference = _last_commit(probed)[2], _last_commit(joined)[2]
    assert metrics | {"executionTimeMs": 0, "scanTimeMs": 0, "rewriteTimeMs": 0} == reference | {
        "executionTimeMs": 0,
        "scanTimeMs": 0,
        "rewriteTimeMs": 0,
        "materializeSourceTimeMs": metrics["materializeSourceTimeMs"],
    }
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"]) == (2, 1)
    assert metrics["numTargetRowsInserted"] == 2
    # ids 2-6 are in the first of the four files: only it is rewritten or marked
    assert metrics["numTargetFilesRemoved"] == (0 if dv else 1)
    assert metrics.get("numTargetDeletionVectorsAdded", 0) == (1 if dv else 0)


@pytest.mark.parametrize("dv", [True, False], ids=["deletion-vectors", "copy-on-write"])
@pytest.mark.parametrize("shape", ["delete-only", "insert-only"])
def test_probe_serves_delete_only_and_insert_only_merges(
    spark: Any, tmp_path: Path, probes: list[bool], dv: bool, shape: str
):
    path = str(tmp_path / "t")
    ids = list(range(0, 80, 2))
    _table(spark, path, ids, dv=dv)
    source = spark.createDataFrame([(i, i, f"n{i}") for i in (3, 4, 5, 6, 40)], SCHEMA)
    merge = DeltaTable.forPath(spark, path).alias("t").merge(source.alias("src"), "t.id = src.id")
    if shape == "delete-only":
        merge.whenMatchedDelete("src.v != 6").execute()
        expected = {i: (i, i * 10, f"s{i}") for i in ids if i not in (4, 40)}
    else:
        merge.whenNotMatchedInsertAll().execute()
        expected = {i: (i, i * 10, f"s{i}") for i in ids} | {3: (3, 3, "n3"), 5: (5, 5, "n5")}
    assert probes == [True]
    assert _rows(spark, path) == sorted(expected.values())
    metrics = _last_commit(path)[2]
    deleted, inserted = (2, 0) if shape == "delete-only" else (0, 2)
    assert (metrics["numTargetRowsDeleted"], metrics["numTargetRowsInserted"]) == (
        deleted,
        inserted,
    )
    assert metrics["numTargetRowsUpdated"] == 0


def test_probe_ignores_rows_a_vector_already_deletes(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    path = str(tmp_path / "t")
    _table(spark, path, list(range(0, 80, 2)))
    DeltaTable.forPath(spark, path).delete("id IN (4, 60)")
    _merge(spark, path, [(4, 400, "back"), (6, 600, "six")])
    assert probes == [True]
    expected = {i: (i, i * 10, f"s{i}") for i in range(0, 80, 2) if i not in (4, 60)}
    expected |= {4: (4, 400, "back"), 6: (6, 600, "six")}
    assert _rows(spark, path) == sorted(expected.values())
    _, _, metrics = _last_commit(path)
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (1, 1)


def test_a_target_key_held_twice_goes_to_the_general_path(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    path = str(tmp_path / "t")
    _table(spark, path, [0, 2, 2, 4])
    _merge(spark, path, [(2, 22, "two")])
    assert probes == [False]  # the source row written beside the probe was discarded
    assert _rows(spark, path) == [(0, 0, "s0"), (2, 22, "two"), (2, 22, "two"), (4, 40, "s4")]
    live = set(DeltaLog(path).snapshot().files.column("path").to_pylist())
    assert {p.name for p in Path(path).glob("*.parquet")} == live | _removed_before(path) | {
        r["path"] for r in _last_commit(path)[1]
    }


def test_a_source_key_held_twice_is_refused_unchanged(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    path = str(tmp_path / "t")
    _table(spark, path, [0, 2, 4])
    version = DeltaLog(path).snapshot().version
    with pytest.raises(MergeMultipleMatchesError, match="several source rows matched"):
        _merge(spark, path, [(2, 1, "a"), (2, 2, "b")])
    assert probes == [False]
    assert DeltaLog(path).snapshot().version == version
    assert _rows(spark, path) == [(0, 0, "s0"), (2, 20, "s2"), (4, 40, "s4")]


def test_a_condition_on_the_target_goes_to_the_general_path(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    path = str(tmp_path / "t")
    _table(spark, path, [0, 2, 4, 6])
    _merge(spark, path, [(2, 1, "a"), (4, 2, "b")], update="t.v > 20")
    assert probes == []
    assert _rows(spark, path) == [(0, 0, "s0"), (2, 20, "s2"), (4, 2, "b"), (6, 60, "s6")]


def test_copy_on_write_probe_leaves_no_file_when_a_key_matches_twice(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    path = str(tmp_path / "t")
    _table(spark, path, [0, 2, 2, 4], dv=False)
    _merge(spark, path, [(2, 4, "n2"), (9, 7, "n9")], conditional=True)
    assert probes == [False]  # the rewrite written beside the probe was discarded
    assert _rows(spark, path) == [
        (0, 0, "s0"),
        (2, 4, "n2"),
        (2, 4, "n2"),
        (4, 40, "s4"),
        (9, 7, "n9"),
    ]
    _, removes, _ = _last_commit(path)
    live = set(DeltaLog(path).snapshot().files.column("path").to_pylist())
    on_disk = {p.name for p in Path(path).glob("*.parquet")}
    assert on_disk == live | {r["path"] for r in removes} | _removed_before(path)


def test_copy_on_write_probe_rewrites_no_file_whose_matches_are_all_kept(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    path = str(tmp_path / "t")
    ids = list(range(0, 80, 2))
    _table(spark, path, ids, dv=False)
    before = set(DeltaLog(path).snapshot().files.column("path").to_pylist())
    # id 2 matches, but no clause holds for a null v: the row is kept as it is
    _merge(spark, path, [(2, None, "x"), (9, 7, "n9")], conditional=True)
    assert probes == [True]
    expected = {i: (i, i * 10, f"s{i}") for i in ids} | {9: (9, 7, "n9")}
    assert _rows(spark, path) == sorted(expected.values())
    adds, removes, metrics = _last_commit(path)
    assert removes == []
    assert [a["stats"] and json.loads(a["stats"])["numRecords"] for a in adds] == [1]
    assert set(DeltaLog(path).snapshot().files.column("path").to_pylist()) >= before
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (0, 1)


def _removed_before(path: str) -> set[str]:
    """Data files removed by commits before the last."""
    log = sorted((Path(path) / "_delta_log").glob("*.json"))[:-1]
    lines = [json.loads(line) for f in log for line in f.read_text().splitlines()]
    return {a["remove"]["path"] for a in lines if "remove" in a}


def test_copy_on_write_upsert_into_files_with_vectors_keeps_their_rows(
    spark: Any, tmp_path: Path, probes: list[bool]
):
    # vectors written while the table had them enabled stay after it stops writing them:
    # the probe's job then writes only the source's rows, the files' rows are read after
    path = str(tmp_path / "t")
    ids = list(range(0, 80, 2))
    _table(spark, path, ids)
    DeltaTable.forPath(spark, path).delete("id IN (4, 60)")
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"
    )
    _merge(spark, path, [(6, 600, "six"), (7, 70, "seven")])
    assert probes == [True]
    expected = {i: (i, i * 10, f"s{i}") for i in ids if i not in (4, 60)}
    expected |= {6: (6, 600, "six"), 7: (7, 70, "seven")}
    assert _rows(spark, path) == sorted(expected.values())
    _, removes, metrics = _last_commit(path)
    assert len(removes) == metrics["numTargetFilesRemoved"] == 1  # the file holding 4 and 6
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (1, 1)
    assert metrics["numTargetRowsCopied"] == 8  # the file's ten rows but 4 (deleted) and 6


@pytest.mark.parametrize("dv", [True, False], ids=["deletion-vectors", "copy-on-write"])
def test_a_condition_failing_on_an_unmatched_source_row_fails_no_merge(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool
):
    """A matched clause's condition counts on matched rows only, as in delta-spark: a
    division by zero on a source row matching nothing fails no merge (the probe, which
    evaluates it on every source row, hands the merge to the general path), one on a
    matched row fails the merge, which commits nothing."""
    from pyspark.errors import ArithmeticException

    built: list[bool] = []
    original = MergeCommand._probe_for

    def recorded(self: MergeCommand, *args: Any, **kwargs: Any) -> Any:
        probe = original(self, *args, **kwargs)
        built.append(probe is not None)
        return probe

    monkeypatch.setattr(MergeCommand, "_probe_for", recorded)
    path = str(tmp_path / "t")
    ids = list(range(0, 40, 2))
    _table(spark, path, ids, dv=dv)

    def merge(rows: list[tuple]) -> None:
        source = spark.createDataFrame(rows, SCHEMA).alias("src")
        table = DeltaTable.forPath(spark, path).alias("t")
        table.merge(source, "t.id = src.id").whenMatchedDelete("10 / src.v > 1").execute()

    merge([(2, 5, "a"), (3, 0, "b")])  # 3 matches nothing
    assert built == [False]
    expected = [(i, i * 10, f"s{i}") for i in ids if i != 2]
    assert _rows(spark, path) == expected
    assert _last_commit(path)[2]["numTargetRowsDeleted"] == 1
    version = DeltaLog(path).snapshot().version
    with pytest.raises(ArithmeticException, match="DIVIDE_BY_ZERO"):
        merge([(4, 0, "c")])
    assert built == [False, False]
    assert DeltaLog(path).snapshot().version == version
    assert _rows(spark, path) == expected
