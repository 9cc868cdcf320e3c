"""Spark-free writes through the core Transaction API: what lands in the log, retries past
concurrent blind appends, version checksums and history rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from log_helpers import SCHEMA, add, append, commit_lines, remove

from delta_pyspark import __version__
from delta_pyspark.core.log.checksum import read_checksum
from delta_pyspark.core.protocol.actions import DomainMetadata, Protocol
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    ChecksumMismatchError,
    ConcurrentDeleteDeleteException,
    DeltaAnalysisException,
    DeltaError,
    DeltaIllegalArgumentException,
    ProtocolChangedException,
    UnsupportedTableFeatureError,
)


@pytest.fixture
def log(tmp_path: Path) -> DeltaLog:
    log = DeltaLog(str(tmp_path))
    create_table(log, SCHEMA, ["part"], {"user.owner": "tests"})
    return log


def test_create_table_writes_version_zero(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path))
    snapshot = create_table(log, SCHEMA, ["part"], {"user.owner": "tests"})
    assert snapshot.version == 0 and snapshot.num_files == 0
    lines = commit_lines(tmp_path, 0)
    assert [next(iter(line)) for line in lines] == ["commitInfo", "protocol", "metaData"]
    info, protocol, metadata = (next(iter(line.values())) for line in lines)
    assert protocol == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert metadata["schemaString"] == SCHEMA
    assert metadata["partitionColumns"] == ["part"]
    assert metadata["configuration"] == {"user.owner": "tests"}
    assert metadata["format"] == {"provider": "parquet", "options": {}}
    assert info["operation"] == "CREATE TABLE"
    assert info["operationParameters"] == {"partitionBy": '["part"]'}
    assert "readVersion" not in info
    reloaded = DeltaLog(str(tmp_path)).snapshot()
    assert reloaded.metadata == snapshot.metadata and reloaded.protocol == Protocol(1, 2)


def test_adds_and_removes(log: DeltaLog, tmp_path: Path) -> None:
    a, b = add("a"), add("b", "b")
    s1 = append(log, a, b)
    assert s1.version == 1
    assert sorted(s1.files.column("path").to_pylist()) == [a["path"], b["path"]]
    txn = Transaction(log, s1)
    txn.read_whole_table()
    txn.remove_files([remove(a)])
    s2 = txn.commit(
        "DELETE", {"predicate": "[]"}, metrics={"numRemovedFiles": 1}, user_metadata="cleanup"
    )
    assert s2.files.column("path").to_pylist() == [b["path"]]
    assert s2.tombstones.column("path").to_pylist() == [a["path"]]
    info = commit_lines(tmp_path, 2)[0]["commitInfo"]
    assert info["isBlindAppend"] is False
    assert info["operationMetrics"] == {"numRemovedFiles": "1"}
    assert info["userMetadata"] == "cleanup"
    reloaded = DeltaLog(str(tmp_path)).snapshot()
    assert reloaded.version == 2 and reloaded.files.column("path").to_pylist() == [b["path"]]
    assert reloaded.size_in_bytes == b["size"]


def test_concurrent_blind_appends_both_commit(log: DeltaLog, tmp_path: Path) -> None:
    base = log.snapshot()
    first, second = Transaction(log, base), Transaction(log, base)
    first.add_files([add("one")])
    second.add_files([add("two", "b")])
    assert first.commit("WRITE").version == 1
    result = second.commit("WRITE")
    assert result.version == 2
    assert (first.attempts, second.attempts) == (1, 2)
    assert (first.committed_version, second.committed_version) == (1, 2)
    assert (tmp_path / "_delta_log" / f"{1:020d}.json").is_file()
    assert (tmp_path / "_delta_log" / f"{2:020d}.json").is_file()
    info = commit_lines(tmp_path, 2)[0]["commitInfo"]
    assert info["readVersion"] == 0 and info["isBlindAppend"] is True
    assert [next(iter(x)) for x in commit_lines(tmp_path, 2)] == ["commitInfo", "add"]
    assert sorted(result.files.column("path").to_pylist()) == [
        "part=a/one.parquet",
        "part=b/two.parquet",
    ]
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 2


def test_conflicting_delete_leaves_no_trace(log: DeltaLog, tmp_path: Path) -> None:
    a = add("a")
    base = append(log, a)
    first, second = Transaction(log, base), Transaction(log, base)
    first.remove_files([remove(a)])
    second.remove_files([remove(a)])
    first.commit("DELETE")
    with pytest.raises(ConcurrentDeleteDeleteException, match="already removed"):
        second.commit("DELETE")
    assert second.committed_version is None
    names = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    assert [n for n in names if n.endswith(".json")] == [f"{v:020d}.json" for v in range(3)]
    assert not [n for n in names if n.endswith(".tmp")]


def test_concurrent_create_is_refused(log: DeltaLog, tmp_path: Path) -> None:
    with pytest.raises(ProtocolChangedException, match="created concurrently"):
        create_table(DeltaLog(str(tmp_path)), SCHEMA)
    assert DeltaLog(str(tmp_path)).snapshot().version == 0


def test_checksums_are_written_and_valid(log: DeltaLog, tmp_path: Path) -> None:
    append(log, add("a"), add("b", size=50))
    append(log, add("c", "c", size=7))
    for v in range(3):
        snapshot = DeltaLog(str(tmp_path)).snapshot(v)  # a disagreeing checksum would raise
        crc = read_checksum(log.store, log.log_dir, v)
        assert crc is not None, v
        assert crc["numFiles"] == snapshot.num_files
        assert crc["tableSizeBytes"] == snapshot.size_in_bytes
        assert (crc["numMetadata"], crc["numProtocol"]) == (1, 1)
        assert crc["metadata"]["id"] == snapshot.metadata.id
        assert crc["protocol"] == snapshot.protocol.to_dict()
        assert crc["txnId"] == commit_lines(tmp_path, v)[0]["commitInfo"]["txnId"]
    assert read_checksum(log.store, log.log_dir, 2)["tableSizeBytes"] == 157


def test_tampered_checksum_is_refused(log: DeltaLog, tmp_path: Path) -> None:
    append(log, add("a"))
    path = tmp_path / "_delta_log" / f"{1:020d}.crc"
    crc = json.loads(path.read_text())
    path.write_text(json.dumps({**crc, "numFiles": 5}))
    with pytest.raises(ChecksumMismatchError, match=r"00000000000000000001\.crc.*numFiles 5 != 1"):
        DeltaLog(str(tmp_path)).snapshot()
    assert DeltaLog(str(tmp_path)).snapshot(0).version == 0  # other versions still read
    path.write_text("{not json")  # malformed: ignored, the log defines the table
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 1
    path.unlink()  # the documented way to read on once the commits are known to be right
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 1


def test_history_rows(log: DeltaLog) -> None:
    append(log, add("a"))
    txn = Transaction(log, log.snapshot())
    txn.read_whole_table()
    txn.remove_files([remove(add("a"))])
    txn.commit("DELETE")
    rows = log.history()
    assert [r["version"] for r in rows] == [2, 1, 0]
    assert [r["operation"] for r in rows] == ["DELETE", "WRITE", "CREATE TABLE"]
    for r in rows:
        assert r["engineInfo"] == f"delta-pyspark/{__version__}"
        assert r["isolationLevel"] in ("Serializable", "WriteSerializable")
        assert isinstance(r["timestamp"], int)
    assert [r.get("readVersion") for r in rows] == [1, 0, None]
    assert [r["isBlindAppend"] for r in rows] == [False, True, True]
    assert rows[0]["timestamp"] >= rows[1]["timestamp"] >= rows[2]["timestamp"]
    assert [r["version"] for r in log.history(limit=2)] == [2, 1]


def test_app_transactions(log: DeltaLog, tmp_path: Path) -> None:
    txn = Transaction(log, log.snapshot())
    assert txn.app_transaction_version("stream-1") is None
    txn.add_files([add("a")])
    txn.set_app_transaction("stream-1", 5)
    snapshot = txn.commit("STREAMING UPDATE")
    assert snapshot.app_transaction_version("stream-1") == 5
    reloaded = DeltaLog(str(tmp_path)).snapshot()
    assert reloaded.app_transaction_version("stream-1") == 5
    assert reloaded.set_transactions["stream-1"].last_updated is not None


def test_domain_metadata(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path))
    create_table(
        log, SCHEMA, ["part"], protocol=Protocol(1, 7, None, frozenset({"domainMetadata"}))
    )
    txn = Transaction(log, log.snapshot())
    txn.set_domain_metadata(DomainMetadata("user.cfg", '{"a":1}'))
    assert txn.commit("SET DOMAIN").domain_metadata["user.cfg"].configuration == '{"a":1}'
    txn = Transaction(log, log.snapshot())
    txn.set_domain_metadata(DomainMetadata("user.cfg", '{"a":1}', removed=True))
    txn.commit("REMOVE DOMAIN")
    assert dict(DeltaLog(str(tmp_path)).snapshot().domain_metadata) == {}


def test_metadata_update(log: DeltaLog, tmp_path: Path) -> None:
    txn = Transaction(log, log.snapshot())
    new = txn.metadata.with_changes(configuration={"user.owner": "me", "delta.appendOnly": "true"})
    txn.update_metadata(new)
    snapshot = txn.commit("SET TBLPROPERTIES")
    assert snapshot.configuration["user.owner"] == "me"
    assert commit_lines(tmp_path, 1)[1]["metaData"]["configuration"]["delta.appendOnly"] == "true"


def test_append_only_table_refuses_removes(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path))
    create_table(log, SCHEMA, ["part"], {"delta.appendOnly": "true"})
    a = add("a")
    append(log, a)
    txn = Transaction(log, log.snapshot())
    txn.remove_files([remove(a)])
    with pytest.raises(DeltaAnalysisException, match=r"append-only \(delta.appendOnly=true\)"):
        txn.commit("DELETE")
    assert DeltaLog(str(tmp_path)).snapshot().version == 1


def test_partition_values_must_match(log: DeltaLog) -> None:
    txn = Transaction(log, log.snapshot())
    txn.add_files([{**add("a"), "partitionValues": {"other": "x"}}])
    with pytest.raises(DeltaAnalysisException, match=r"partitioned by \['part'\]"):
        txn.commit("WRITE")


def test_transaction_commits_once(log: DeltaLog) -> None:
    txn = Transaction(log, log.snapshot())
    txn.add_files([add("a")])
    txn.commit("WRITE")
    with pytest.raises(DeltaError, match="already committed"):
        txn.commit("WRITE")


def test_unsupported_writer_feature_is_refused(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path))
    protocol = Protocol(1, 7, None, frozenset({"futureFeature"}))
    with pytest.raises(UnsupportedTableFeatureError, match="futureFeature") as info:
        create_table(log, SCHEMA, protocol=protocol)
    assert info.value.features == ["futureFeature"]
    assert not (tmp_path / "_delta_log" / f"{0:020d}.json").exists()


def test_a_commit_adding_and_removing_the_same_file_is_refused_before_writing(
    tmp_path: Path,
) -> None:
    """Readers refuse such a version as damaged, so the transaction never writes one."""
    log = DeltaLog(str(tmp_path))
    create_table(log, SCHEMA, ["part"], {})
    a = add("f1")
    append(log, a)
    txn = Transaction(log, log.snapshot())
    txn.remove_files([remove(a)])
    txn.add_files([a])
    with pytest.raises(DeltaIllegalArgumentException, match="both add and remove the same file"):
        txn.commit("WRITE", {})
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json")) == [
        f"{v:020d}.json" for v in (0, 1)
    ]
    assert log.snapshot().version == 1
