"""Deleting rows with deletion vectors, and row-level concurrency between such deletes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.actions import Protocol, remove_actions
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    read_deletion_vector,
)
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.row_deletion import deletion_vectors_enabled
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
)

SCHEMA = StructType((StructField("id", PrimitiveType("long")),))
DV_PROTOCOL = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))


def _add(name: str, rows: int, lo: int = 0) -> dict:
    stats = {
        "numRecords": rows,
        "minValues": {"id": lo},
        "maxValues": {"id": lo + rows - 1},
        "nullCount": {"id": 0},
    }
    return {
        "path": name,
        "partitionValues": {},
        "size": 100,
        "modificationTime": 1,
        "dataChange": True,
        "stats": json.dumps(stats),
    }


def _table(tmp_path: Path, *files: dict, level: str = "Serializable") -> DeltaLog:
    log = DeltaLog(str(tmp_path))
    conf = {"delta.enableDeletionVectors": "true", "delta.isolationLevel": level}
    create_table(log, schema_to_string(SCHEMA), [], conf, protocol=DV_PROTOCOL)
    txn = Transaction(log, log.snapshot())
    txn.add_files(files)
    txn.commit("WRITE", {"mode": "Append"})
    return log


def _delete_txn(log: DeltaLog, path: str, rows: list[int], op_rows: str = "") -> Transaction:
    """A DELETE-like transaction that read ``path`` and deletes ``rows`` from it."""
    snap = log.snapshot()
    txn = Transaction(log, snap)
    files = snap.files.filter(np.array(snap.files.column("path").to_pylist()) == path)
    txn.read_predicate(parse_predicate(op_rows or f"id IN ({', '.join(map(str, rows))})"))
    txn.read_files(files)
    txn.delete_rows(files, [np.array(rows, dtype=np.int64)])
    return txn


def _deleted(log: DeltaLog, path: str) -> list[int]:
    snap = log.snapshot()
    for row in snap.files.to_pylist():
        if row["path"] == path:
            if row["deletionVector"] is None:
                return []
            desc = DeletionVectorDescriptor.from_dict(row["deletionVector"])
            return sorted(read_deletion_vector(desc, log.table_root, log.store))
    raise AssertionError(f"{path} is not in the table")


def test_enabled_needs_property_and_feature(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 10))
    assert deletion_vectors_enabled(log.snapshot())
    other = DeltaLog(str(tmp_path / "plain"))
    create_table(other, schema_to_string(SCHEMA), [], {"delta.enableDeletionVectors": "true"})
    assert not deletion_vectors_enabled(other.snapshot())  # property without the feature


def test_delete_rows_writes_a_vector_and_keeps_physical_stats(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 10))
    txn = _delete_txn(log, "a.parquet", [2, 5, 7])
    txn.commit("DELETE", {})
    snap = log.snapshot()
    (row,) = snap.files.to_pylist()
    assert row["path"] == "a.parquet"
    stats = json.loads(row["stats"])
    assert stats["numRecords"] == 10 and stats["tightBounds"] is False
    assert row["deletionVector"]["cardinality"] == 3
    assert row["deletionVector"]["storageType"] == "u"
    assert _deleted(log, "a.parquet") == [2, 5, 7]
    dv_files = list(tmp_path.glob("deletion_vector_*.bin"))
    assert len(dv_files) == 1
    commit = (tmp_path / "_delta_log" / "00000000000000000002.json").read_text().splitlines()
    kinds = [next(iter(json.loads(line))) for line in commit]
    assert kinds == ["commitInfo", "remove", "add"]
    remove = json.loads(commit[1])["remove"]
    assert remove["path"] == "a.parquet" and "deletionVector" not in remove


def test_second_delete_extends_the_vector_and_ignores_already_deleted_rows(
    tmp_path: Path,
) -> None:
    log = _table(tmp_path, _add("a.parquet", 10))
    _delete_txn(log, "a.parquet", [1, 2]).commit("DELETE", {})
    old_dv = log.snapshot().files.column("deletionVector").to_pylist()[0]
    txn = _delete_txn(log, "a.parquet", [2, 3])
    (d,) = txn._row_deletes.values()
    assert sorted(d.rows) == [3]  # row 2 was deleted before: not ours
    txn.commit("DELETE", {})
    assert _deleted(log, "a.parquet") == [1, 2, 3]
    commit = (tmp_path / "_delta_log" / "00000000000000000003.json").read_text().splitlines()
    remove = json.loads(commit[1])["remove"]
    assert remove["deletionVector"] == old_dv  # the file as it was, old vector included


def test_deleting_every_row_removes_the_file(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 4), _add("b.parquet", 4, lo=4))
    _delete_txn(log, "a.parquet", [0, 1]).commit("DELETE", {})
    _delete_txn(log, "a.parquet", [2, 3]).commit("DELETE", {})
    assert log.snapshot().files.column("path").to_pylist() == ["b.parquet"]


def test_disjoint_concurrent_row_deletes_of_one_file_both_commit(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 100))
    first = _delete_txn(log, "a.parquet", [1, 2, 3])
    second = _delete_txn(log, "a.parquet", [50, 51])
    first.commit("DELETE", {})
    second.commit("DELETE", {})
    assert second.committed_version == 3 and second.attempts == 2
    assert _deleted(log, "a.parquet") == [1, 2, 3, 50, 51]
    commit = (tmp_path / "_delta_log" / "00000000000000000003.json").read_text().splitlines()
    remove = json.loads(commit[1])["remove"]
    add = json.loads(commit[2])["add"]
    # Rebased: it removes the file as the winner left it, and re-adds the union.
    winner = json.loads(
        (tmp_path / "_delta_log" / "00000000000000000002.json").read_text().splitlines()[2]
    )["add"]
    assert remove["deletionVector"] == winner["deletionVector"]
    assert add["deletionVector"]["cardinality"] == 5


def test_same_row_deleted_concurrently_is_a_physical_conflict(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 100))
    first = _delete_txn(log, "a.parquet", [1, 2, 3])
    second = _delete_txn(log, "a.parquet", [3, 4])
    first.commit("DELETE", {})
    before = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    with pytest.raises(ConcurrentDeleteDeleteException, match=r"row 3 of file a.parquet"):
        second.commit("DELETE", {})
    assert sorted(p.name for p in (tmp_path / "_delta_log").iterdir()) == before
    assert _deleted(log, "a.parquet") == [1, 2, 3]


def test_rebase_that_deletes_the_last_rows_removes_the_file(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 4))
    first = _delete_txn(log, "a.parquet", [0, 1])
    second = _delete_txn(log, "a.parquet", [2, 3])
    first.commit("DELETE", {})
    second.commit("DELETE", {})
    assert log.snapshot().num_files == 0


def test_many_rebases_in_a_row(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 1000))
    txns = [_delete_txn(log, "a.parquet", list(range(i * 10, i * 10 + 10))) for i in range(20)]
    for t in txns:
        t.commit("DELETE", {})
    assert _deleted(log, "a.parquet") == list(range(200))
    assert [t.committed_version for t in txns] == list(range(2, 22))


def test_copy_on_write_loser_still_conflicts_with_a_row_delete(tmp_path: Path) -> None:
    log = _table(tmp_path, _add("a.parquet", 10))
    snap = log.snapshot()
    cow = Transaction(log, snap)
    cow.read_predicate(parse_predicate("id = 9"))
    cow.read_files(snap.files)
    cow.remove_files(remove_actions(snap.files))
    cow.add_files([_add("a2.parquet", 9)])
    _delete_txn(log, "a.parquet", [0]).commit("DELETE", {})
    with pytest.raises(ConcurrentDeleteDeleteException, match=r"a\.parquet, which this"):
        cow.commit("DELETE", {})


def test_a_reader_of_the_file_is_not_invalidated_by_a_row_delete(tmp_path: Path) -> None:
    """Deleting rows can not create matches: a transaction that only read the file
    (e.g. a MERGE whose source matched nothing there) may commit after it."""
    log = _table(tmp_path, _add("a.parquet", 10), _add("b.parquet", 10, lo=10))
    snap = log.snapshot()
    reader = Transaction(log, snap)
    reader.read_predicate(parse_predicate("id = 100"))
    reader.read_files(snap.files)
    reader.add_files([_add("c.parquet", 1, lo=100)])
    _delete_txn(log, "a.parquet", [0]).commit("DELETE", {})
    reader.commit("MERGE", {})
    assert sorted(log.snapshot().files.column("path").to_pylist()) == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
    ]


def test_updated_rows_added_elsewhere_still_conflict_logically(tmp_path: Path) -> None:
    """An UPDATE by vector deletes the old row and adds its new version in a new file:
    that new file is checked against the loser's read predicate as usual."""
    log = _table(tmp_path, _add("a.parquet", 10))
    loser = _delete_txn(log, "a.parquet", [7], op_rows="id = 7")
    winner = _delete_txn(log, "a.parquet", [3], op_rows="id = 3")
    winner.add_files([_add("new.parquet", 1, lo=7)])  # row 3 updated to id 7
    winner.commit("UPDATE", {})
    with pytest.raises(ConcurrentAppendException, match=r"new\.parquet"):
        loser.commit("DELETE", {})


def test_rebase_only_for_row_deleting_operations(tmp_path: Path) -> None:
    """A RESTORE that re-adds the file with an older vector is not a row deletion."""
    log = _table(tmp_path, _add("a.parquet", 10))
    _delete_txn(log, "a.parquet", [0]).commit("DELETE", {})
    loser = _delete_txn(log, "a.parquet", [5])
    snap = log.snapshot()
    restore = Transaction(log, snap)
    restore.remove_files(remove_actions(snap.files))
    restore.add_files([_add("a.parquet", 10)])
    restore.commit("RESTORE", {})
    with pytest.raises(ConcurrentAppendException, match="RESTORE"):
        loser.commit("DELETE", {})
