"""Tables on S3 through the object-store log store, against a local S3 server (moto, started
here): conditional-put commits under real races, listings, a table written, checkpointed and
read back, and delta-rs reading our table and we reading its, at every version."""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from log_helpers import SCHEMA

from delta_pyspark.core.log.segment import read_last_checkpoint
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.core.storage.object_store import ObjectStoreLogStore, configure_storage
from delta_pyspark.core.transaction.commit import checkpoint_now
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    DeltaError,
    DeltaIllegalArgumentException,
    FileAlreadyExistsError,
    StorageAccessError,
    UnsupportedStorageError,
)
from s3_server import S3Server


@pytest.fixture
def bucket(s3_server: S3Server) -> Iterator[str]:
    name = s3_server.create_bucket(f"b-{uuid.uuid4().hex[:12]}")
    configure_storage(f"s3://{name}", s3_server.storage_options())
    yield name
    configure_storage(f"s3://{name}", None)


def _parquet(ids: list[int], part: str) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), sink)
    return sink.getvalue()


def _write_data(root: str, ids: list[int], part: str = "a") -> dict[str, Any]:
    """A Parquet file put under ``root`` and its add action (not committed)."""
    rel = f"part={part}/{uuid.uuid4().hex}.parquet"
    data = _parquet(ids, part)
    log_store_for(root).write(f"{root}/{rel}", data)
    stats = {"numRecords": len(ids), "minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)}}
    return {
        "path": rel,
        "partitionValues": {"part": part},
        "size": len(data),
        "modificationTime": 1_700_000_000_000,
        "dataChange": True,
        "stats": json.dumps(stats | {"nullCount": {"id": 0}}),
    }


def _append(log: DeltaLog, *adds: dict[str, Any]) -> int:
    txn = Transaction(log, log.snapshot())
    txn.add_files(adds)  # type: ignore[arg-type]
    return txn.commit("WRITE", {"mode": "Append"}).version


def test_put_if_absent_refuses_an_existing_key_and_keeps_its_bytes(bucket: str) -> None:
    store = log_store_for(f"s3://{bucket}/t")
    assert isinstance(store, ObjectStoreLogStore)
    path = f"s3://{bucket}/t/_delta_log/00000000000000000000.json"
    store.write_if_absent(path, b"first")
    with pytest.raises(FileAlreadyExistsError, match="already exists"):
        store.write_if_absent(path, b"second")
    assert store.read(path) == b"first"
    assert store.read_range(path, 1, 3) == b"irs"


def test_racing_conditional_puts_have_exactly_one_winner(bucket: str) -> None:
    store = log_store_for(f"s3://{bucket}/race")
    writers, rounds = 8, 25
    for r in range(rounds):
        path = f"s3://{bucket}/race/{r:020d}.json"
        barrier = threading.Barrier(writers)
        won: list[int] = []

        def put(
            i: int, path: str = path, barrier: threading.Barrier = barrier, won: list[int] = won
        ) -> None:
            barrier.wait()
            try:
                store.write_if_absent(path, str(i).encode())
            except FileAlreadyExistsError:
                return
            won.append(i)

        threads = [threading.Thread(target=put, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, f"round {r}: {len(won)} writers created {path}"
        assert store.read(path) == str(won[0]).encode()


def test_listing_from_a_name_lists_direct_children_in_order(bucket: str) -> None:
    store = log_store_for(f"s3a://{bucket}/l")  # s3a names the same bucket
    names = [f"{v:020d}.json" for v in range(12)] + ["00000000000000000005.crc"]
    for name in names:
        store.write(f"s3://{bucket}/l/_delta_log/{name}", b"{}")
    store.write(f"s3://{bucket}/l/_delta_log/_sidecars/x.parquet", b"")
    listed = [s.name for s in store.list_from(f"s3://{bucket}/l/_delta_log", names[5])]
    assert listed == sorted(n for n in names if n >= names[5])
    assert [s.name for s in store.list_from(f"s3://{bucket}/l/_delta_log")] == sorted(names)
    assert list(store.list_from(f"s3://{bucket}/l/missing")) == []
    entries = {(e.name, e.is_dir) for e in store.scan(f"s3://{bucket}/l/_delta_log")}
    assert ("_sidecars", True) in entries and (names[0], False) in entries
    assert store.is_dir(f"s3://{bucket}/l/_delta_log") and not store.is_dir(f"s3://{bucket}/x")
    assert store.delete(f"s3://{bucket}/l/_delta_log/{names[0]}")
    assert not store.delete(f"s3://{bucket}/l/_delta_log/{names[0]}")
    assert not store.exists(f"s3://{bucket}/l/_delta_log/{names[0]}")


def test_a_table_on_s3_commits_checkpoints_and_reads_back(bucket: str) -> None:
    root = f"s3://{bucket}/t"
    log = DeltaLog(root)
    create_table(log, SCHEMA, ["part"])
    versions = [_append(log, _write_data(root, [i, i + 1])) for i in range(0, 6, 2)]
    assert versions == [1, 2, 3]
    checkpoint_now(log.store, log.snapshot())
    assert read_last_checkpoint(log.store, log.log_dir) is not None
    fresh = DeltaLog(root).snapshot()  # a new handle: listed and read from the store
    assert fresh.version == 3
    assert sorted(fresh.files.column("size").to_pylist()) == sorted(
        log.store.status(f"{root}/{p}").size for p in fresh.files.column("path").to_pylist()
    )
    assert [h["operation"] for h in DeltaLog(root).history()] == ["WRITE"] * 3 + ["CREATE TABLE"]


def test_concurrent_writers_commit_contiguous_versions_and_lose_nothing(bucket: str) -> None:
    root = f"s3://{bucket}/c"
    create_table(DeltaLog(root), SCHEMA, ["part"])
    committed: list[int] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        log = DeltaLog(root)
        for i in range(5):
            version = _append(log, _write_data(root, [w * 100 + i], part=str(w)))
            with lock:
                committed.append(version)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(committed) == list(range(1, 21))
    snapshot = DeltaLog(root).snapshot()
    assert snapshot.version == 20 and snapshot.files.num_rows == 20


def test_delta_rs_reads_our_s3_table_and_we_read_its(bucket: str, s3_server: S3Server) -> None:
    ours = f"s3://{bucket}/ours"
    create_table(DeltaLog(ours), SCHEMA, ["part"])
    _append(DeltaLog(ours), _write_data(ours, [1, 2], "a"))
    _append(DeltaLog(ours), _write_data(ours, [3], "b"))
    options = s3_server.storage_options()
    for version, expected in [(1, [1, 2]), (2, [1, 2, 3])]:
        table = deltalake.DeltaTable(ours, storage_options=options, version=version)
        assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == expected

    theirs = f"s3://{bucket}/theirs"
    for ids in ([10, 11], [12]):
        data = pa.table({"id": pa.array(ids, pa.int64()), "part": ["x"] * len(ids)})
        deltalake.write_deltalake(
            theirs, data, mode="append", partition_by=["part"], storage_options=options
        )
    for version, rows in [(0, 2), (1, 3)]:
        snapshot = DeltaLog(theirs).snapshot(version)
        assert snapshot.version == version
        counts = [json.loads(s)["numRecords"] for s in snapshot.files.column("stats").to_pylist()]
        assert sum(counts) == rows


def test_a_scheme_without_storage_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedStorageError, match="'hdfs'") as caught:
        DeltaLog("hdfs://namenode/t").snapshot()
    assert isinstance(caught.value, DeltaIllegalArgumentException)
    assert isinstance(caught.value, DeltaError)


def test_a_store_failure_is_a_typed_error_that_changes_nothing(
    bucket: str, s3_server: S3Server
) -> None:
    missing = f"s3://no-such-{uuid.uuid4().hex[:8]}"
    configure_storage(missing, s3_server.storage_options())
    try:
        store = log_store_for(f"{missing}/t/_delta_log/00000000000000000000.json")
        with pytest.raises(StorageAccessError, match="bucket does not exist") as caught:
            store.write_if_absent(f"{missing}/t/_delta_log/00000000000000000000.json", b"{}")
        assert isinstance(caught.value, DeltaError) and isinstance(caught.value, OSError)
        assert "test" not in str(caught.value).replace(s3_server.endpoint, "")  # no secret
    finally:
        configure_storage(missing, None)


def test_a_store_without_conditional_writes_cannot_commit(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import obstore
    from obstore.exceptions import NotSupportedError

    def put(*args: Any, **kwargs: Any) -> None:
        if kwargs.get("mode") == "create":
            raise NotSupportedError("conditional put is not implemented")

    monkeypatch.setattr(obstore, "put", put)
    path = f"s3://{bucket}/t/_delta_log/00000000000000000000.json"
    with pytest.raises(StorageAccessError, match="does not support conditional writes"):
        log_store_for(path).write_if_absent(path, b"{}")


@pytest.mark.parametrize("columns", [1, 3000], ids=["small-footer", "footer-over-64KiB"])
def test_a_data_files_footer_is_read_from_its_tail(bucket: str, columns: int) -> None:
    rows = 50_000 if columns == 1 else 3
    table = pa.table({f"c{i}": pa.array(range(rows), pa.int64()) for i in range(columns)})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    data = sink.getvalue()
    path = f"s3://{bucket}/t/part-0.parquet"
    store = log_store_for(path)
    store.write(path, data)
    footer = store.read_footer(path)
    expected = pq.read_metadata(pa.BufferReader(data))
    assert len(data) > 64 << 10
    assert (expected.serialized_size > 64 << 10) == (columns > 1)
    assert (footer.num_rows, footer.num_columns) == (rows, columns)
    assert footer.row_group(0).column(0).statistics == expected.row_group(0).column(0).statistics
    with store.open_input(path) as whole:
        assert pq.read_table(whole).equals(table)
