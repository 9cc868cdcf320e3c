"""Optimistic concurrency: the isolation matrix, stats-based conflict detection,
application transaction ids, and failed transactions leaving no trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
)

SCHEMA = StructType(
    (
        StructField("id", PrimitiveType("long")),
        StructField("value", PrimitiveType("long")),
        StructField("range", PrimitiveType("string")),
    )
)


def _add(name: str, lo: int, hi: int, part: str | None = None) -> dict:
    stats = {
        "numRecords": 1,
        "minValues": {"id": lo},
        "maxValues": {"id": hi},
        "nullCount": {"id": 0},
    }
    return {
        "path": name,
        "partitionValues": {"range": part} if part is not None else {},
        "size": 10,
        "modificationTime": 1,
        "dataChange": True,
        "stats": json.dumps(stats),
    }


def _table(tmp_path: Path, level: str = "WriteSerializable", partitioned: bool = True) -> DeltaLog:
    log = DeltaLog(str(tmp_path))
    create_table(
        log,
        schema_to_string(SCHEMA),
        ["range"] if partitioned else [],
        {"delta.isolationLevel": level},
    )
    return log


def _append(log: DeltaLog, *adds: dict) -> None:
    txn = Transaction(log, log.snapshot())
    txn.add_files(adds)
    txn.commit("WRITE", {"mode": "Append"})


def _upsert_txn(log: DeltaLog, key: int, part: str) -> Transaction:
    """A MERGE-like transaction that read rows with id = key in partition ``part``."""
    snap = log.snapshot()
    txn = Transaction(log, snap)
    pred = parse_predicate(f"range = '{part}' AND id = {key}")
    txn.read_predicate(pred)
    touched = snap.files.filter(
        [
            json.loads(s)["minValues"]["id"] <= key <= json.loads(s)["maxValues"]["id"]
            for s in snap.files.column("stats").to_pylist()
        ]
    )
    txn.read_files(touched)
    txn.remove_files(remove_actions(touched))
    txn.add_files([_add(f"upsert-{key}.parquet", key, key, part)])
    return txn


def test_two_users_append_from_version_0(tmp_path: Path) -> None:
    log = _table(tmp_path)
    first, second = Transaction(log, log.snapshot()), Transaction(log, log.snapshot())
    first.add_files([_add("a.parquet", 1, 1, "1-10")])
    second.add_files([_add("b.parquet", 2, 2, "1-10")])
    assert first.commit("WRITE").version == 1
    assert second.commit("WRITE").version == 2
    assert second.attempts == 2
    log_dir = tmp_path / "_delta_log"
    assert (log_dir / "00000000000000000001.json").exists()
    assert (log_dir / "00000000000000000002.json").exists()
    assert log.snapshot().num_files == 2


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_stats_rule_out_a_concurrent_insert_of_another_key(tmp_path: Path, level: str) -> None:
    """The issue's example: T1 inserts id=1, T2 upserts id=2 in the same range partition.
    The reference rejects T2 under Serializable (same partition); the added file's
    min/max prove it holds no id=2, so T2 commits here."""
    log = _table(tmp_path, level)
    _append(log, _add("seed.parquet", 2, 2, "1-10"))
    t2 = _upsert_txn(log, 2, "1-10")
    _append(log, _add("t1.parquet", 1, 1, "1-10"))
    assert t2.commit("MERGE").version == 3
    assert sorted(log.snapshot().files.column("path").to_pylist()) == [
        "t1.parquet",
        "upsert-2.parquet",
    ]


def test_concurrent_insert_of_the_same_key_conflicts_under_serializable(tmp_path: Path) -> None:
    log = _table(tmp_path, "Serializable")
    _append(log, _add("seed.parquet", 5, 5, "1-10"))
    t2 = _upsert_txn(log, 5, "1-10")
    _append(log, _add("t1.parquet", 5, 5, "1-10"))
    with pytest.raises(ConcurrentAppendException) as err:
        t2.commit("MERGE")
    message = str(err.value)
    assert "version 2" in message and "WRITE" in message and "range=1-10" in message
    assert "predicate" in message
    assert log.snapshot().version == 2
    assert not (tmp_path / "_delta_log" / "00000000000000000003.json").exists()


def test_write_serializable_ignores_blind_appends(tmp_path: Path) -> None:
    log = _table(tmp_path, "WriteSerializable")
    _append(log, _add("seed.parquet", 5, 5, "1-10"))
    t2 = _upsert_txn(log, 5, "1-10")
    _append(log, _add("t1.parquet", 5, 5, "1-10"))  # blind insert of the same key
    assert t2.commit("MERGE").version == 3
    # The long upsert ordered after the insert left both rows: a state no serial
    # order of (insert, upsert) would produce had the upsert seen the insert.
    paths = sorted(log.snapshot().files.column("path").to_pylist())
    assert paths == ["t1.parquet", "upsert-5.parquet"]


def test_insert_vs_insert_never_conflicts_at_any_level(tmp_path: Path) -> None:
    log = _table(tmp_path, "Serializable")
    a, b = Transaction(log, log.snapshot()), Transaction(log, log.snapshot())
    a.add_files([_add("a.parquet", 1, 1, "1-10")])
    b.add_files([_add("b.parquet", 1, 1, "1-10")])
    a.commit("WRITE")
    assert b.commit("WRITE").version == 2


def test_update_vs_update_on_same_file_conflicts(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("f.parquet", 1, 10, "1-10"))
    t1, t2 = _upsert_txn(log, 3, "1-10"), _upsert_txn(log, 4, "1-10")
    t1.commit("UPDATE")
    with pytest.raises(ConcurrentDeleteReadException, match=r"f\.parquet"):
        t2.commit("UPDATE")


def test_disjoint_updates_in_different_partitions_both_commit(tmp_path: Path) -> None:
    log = _table(tmp_path, "Serializable")
    _append(log, _add("a.parquet", 1, 10, "1-10"), _add("b.parquet", 11, 20, "11-20"))
    t1, t2 = _upsert_txn(log, 3, "1-10"), _upsert_txn(log, 13, "11-20")
    t1.commit("UPDATE")
    assert t2.commit("UPDATE").version == 3


def test_compaction_vs_insert_never_conflicts_but_vs_delete_does(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("a.parquet", 1, 5, "1-10"), _add("b.parquet", 6, 9, "1-10"))
    snap = log.snapshot()

    def optimize() -> Transaction:
        txn = Transaction(log, snap)
        txn.read_files(snap.files)
        removes = remove_actions(snap.files, data_change=False)
        txn.remove_files(removes)
        compacted = _add("compacted.parquet", 1, 9, "1-10") | {"dataChange": False}
        txn.add_files([compacted])
        return txn

    opt = optimize()
    assert opt.isolation_level().value == "SnapshotIsolation"
    _append(log, _add("new.parquet", 3, 3, "1-10"))
    assert opt.commit("OPTIMIZE").version == 3

    opt2 = optimize()  # stale: still based on version 1
    with pytest.raises(ConcurrentDeleteReadException):
        opt2.commit("OPTIMIZE")


def test_delete_delete_conflict(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("a.parquet", 1, 5, "1-10"))
    snap = log.snapshot()
    t1, t2 = Transaction(log, snap), Transaction(log, snap)
    for t in (t1, t2):
        t.remove_files(remove_actions(snap.files))
    t1.commit("DELETE")
    with pytest.raises(ConcurrentDeleteDeleteException, match=r"a\.parquet"):
        t2.commit("DELETE")


def test_whole_table_read_conflicts_with_any_add_under_serializable(tmp_path: Path) -> None:
    log = _table(tmp_path, "Serializable")
    t = Transaction(log, log.snapshot())
    t.read_whole_table()
    t.add_files([_add("x.parquet", 1, 1, "1-10")])
    _append(log, _add("y.parquet", 50, 50, "41-50"))
    with pytest.raises(ConcurrentAppendException, match=r"whole table"):
        t.commit("MERGE")


def test_metadata_and_protocol_changes_conflict(tmp_path: Path) -> None:
    log = _table(tmp_path)
    snap = log.snapshot()
    t = Transaction(log, snap)
    t.add_files([_add("x.parquet", 1, 1, "1-10")])
    change = Transaction(log, snap)
    change.update_metadata(snap.metadata.with_changes(configuration={"a": "b"}))
    change.commit("SET TBLPROPERTIES")
    with pytest.raises(MetadataChangedException):
        t.commit("WRITE")
    racer = Transaction(DeltaLog(str(tmp_path / "new")), None)
    other = Transaction(DeltaLog(str(tmp_path / "new")), None)
    for txn in (racer, other):
        txn.update_protocol(snap.protocol)
        txn.update_metadata(snap.metadata)
    racer.commit("CREATE TABLE")
    with pytest.raises(ProtocolChangedException, match="created concurrently"):
        other.commit("CREATE TABLE")


def test_same_app_id_concurrently_conflicts(tmp_path: Path) -> None:
    log = _table(tmp_path)
    snap = log.snapshot()
    a, b = Transaction(log, snap), Transaction(log, snap)
    for i, t in enumerate((a, b)):
        assert t.app_transaction_version("stream-1") is None
        t.set_app_transaction("stream-1", 7)
        t.add_files([_add(f"s{i}.parquet", 1, 1, "1-10")])
    a.commit("STREAMING UPDATE")
    with pytest.raises(ConcurrentTransactionException, match="stream-1"):
        b.commit("STREAMING UPDATE")
    assert issubclass(ConcurrentTransactionException, DeltaConcurrentModificationException)
    assert log.snapshot().app_transaction_version("stream-1") == 7


def test_isolation_level_recorded_in_commit_info(tmp_path: Path) -> None:
    log = _table(tmp_path, "Serializable")
    _append(log, _add("a.parquet", 1, 1, "1-10"))
    info = log.snapshot().commit_info
    assert info["isolationLevel"] == "Serializable" and info["isBlindAppend"] is True
    assert info["readVersion"] == 0
