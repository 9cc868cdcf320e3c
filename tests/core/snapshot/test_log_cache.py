"""The process-wide snapshot cache behind ``DeltaLog.for_table``: an unchanged table is
served without reading the log, new commits (from this process or another) are read
alone, and what is cached is never stale, corrupt or unbounded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import (
    CACHE_TABLES_ENV,
    DeltaLog,
    clear_log_cache,
    configure_log_cache,
    log_cache_info,
    snapshot_bytes,
)
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import FileStatus, LocalLogStore
from delta_pyspark.core.transaction.commit import checkpoint_now, encode_commit
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import CorruptLogError, DeltaIllegalArgumentException

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)


class CountingStore(LocalLogStore):
    """Records what the log reads and where listings start."""

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.listed: list[str] = []

    def read(self, path: str) -> bytes:
        self.reads.append(path.rsplit("/", 1)[-1])
        return super().read(path)

    def list_from(self, directory: str, start_name: str = "") -> Iterator[FileStatus]:
        self.listed.append(start_name)
        return super().list_from(directory, start_name)

    def reset(self) -> None:
        self.reads.clear()
        self.listed.clear()


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    clear_log_cache()
    configure_log_cache()
    yield
    clear_log_cache()
    configure_log_cache()


def add(name: str) -> dict[str, Any]:
    return {
        "path": f"{name}.parquet",
        "partitionValues": {},
        "size": 100,
        "modificationTime": 1_700_000_000_000,
        "dataChange": True,
    }


def new_table(root: Path, files: int = 2) -> DeltaLog:
    """A table of ``files`` appends (versions 0..files), written through a plain handle."""
    writer = DeltaLog(str(root))
    create_table(writer, SCHEMA)
    for i in range(files):
        append(writer, f"f{i}")
    return writer


def append(log: DeltaLog, name: str) -> Snapshot:
    txn = Transaction(log, DeltaLog(log.table_root).snapshot())
    txn.add_files([add(name)])
    return txn.commit("WRITE", {"mode": "Append"})


def paths(snapshot: Snapshot) -> list[str]:
    return sorted(snapshot.files.column("path").to_pylist())


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def assert_same_as_uncached(snapshot: Snapshot) -> None:
    fresh = DeltaLog(snapshot.table_root).snapshot()
    assert snapshot.version == fresh.version
    assert paths(snapshot) == paths(fresh)
    assert snapshot.metadata == fresh.metadata
    assert snapshot.timestamp == fresh.timestamp


def test_unchanged_table_is_served_without_reading_the_log(tmp_path: Path) -> None:
    new_table(tmp_path)
    store = CountingStore()
    first = DeltaLog.for_table(str(tmp_path), store).snapshot()
    store.reset()
    log = DeltaLog.for_table(str(tmp_path) + "/", store)
    assert log is DeltaLog.for_table(str(tmp_path), store)
    assert log.snapshot() is first
    assert log.latest() is first
    assert store.reads == []
    assert store.listed == [f"{first.version:020d}"] * 2  # from the cached version only


def test_commit_by_another_process_reads_only_that_commit(tmp_path: Path) -> None:
    new_table(tmp_path)
    store = CountingStore()
    log = DeltaLog.for_table(str(tmp_path), store)
    before = log.latest()
    script = (
        "import json, sys\n"
        "from delta_pyspark.core.snapshot.delta_log import DeltaLog\n"
        "from delta_pyspark.core.transaction.optimistic_transaction import Transaction\n"
        "log = DeltaLog(sys.argv[1])\n"
        "txn = Transaction(log, log.snapshot())\n"
        "txn.add_files([json.loads(sys.argv[2])])\n"
        "txn.commit('WRITE')\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), json.dumps(add("other"))], check=True
    )
    store.reset()
    after = log.latest()
    assert after.version == before.version + 1
    assert [r for r in store.reads if r.endswith(".json")] == [commit_name(after.version)]
    assert "other.parquet" in paths(after)
    assert_same_as_uncached(after)
    assert before.version == 2 and "other.parquet" not in paths(before)  # pinned: unchanged


def test_commit_by_another_handle_in_process_is_seen(tmp_path: Path) -> None:
    writer = new_table(tmp_path)
    store = CountingStore()
    log = DeltaLog.for_table(str(tmp_path), store)
    before = log.latest()
    append(writer, "late")
    store.reset()
    after = log.latest()
    assert after.version == before.version + 1
    assert [r for r in store.reads if r.endswith(".json")] == [commit_name(after.version)]
    assert_same_as_uncached(after)


def test_own_commit_is_cached_by_the_transaction(tmp_path: Path) -> None:
    new_table(tmp_path)
    store = CountingStore()
    log = DeltaLog.for_table(str(tmp_path), store)
    txn = Transaction(log, log.latest())
    txn.add_files([add("mine")])
    committed = txn.commit("WRITE")
    store.reset()
    assert log.latest() is committed
    assert [r for r in store.reads if r.endswith(".json")] == []


def test_new_checkpoint_is_picked_up_without_reading_it(tmp_path: Path) -> None:
    writer = new_table(tmp_path)
    store = CountingStore()
    log = DeltaLog.for_table(str(tmp_path), store)
    cached = log.latest()
    append(writer, "a")
    checkpointed = append(writer, "b")
    checkpoint_now(writer.store, checkpointed)
    append(writer, "c")
    store.reset()
    after = log.latest()
    assert after.version == cached.version + 3
    assert after.segment.checkpoint is not None
    assert after.segment.checkpoint.version == checkpointed.version
    assert [c.name for c in after.segment.commits] == [commit_name(after.version)]
    assert not any("checkpoint" in r for r in store.reads)
    assert sorted(r for r in store.reads if r.endswith(".json")) == [
        commit_name(v) for v in range(cached.version + 1, after.version + 1)
    ]
    assert_same_as_uncached(after)
    # the restarted segment extends like any other
    append(writer, "d")
    assert_same_as_uncached(log.latest())


def test_time_travel_is_neither_served_from_nor_stored_in_the_cache(tmp_path: Path) -> None:
    writer = new_table(tmp_path)
    store = CountingStore()
    log = DeltaLog.for_table(str(tmp_path), store)
    pinned = log.latest()
    append(writer, "x")
    latest = log.latest()
    store.reset()
    old = log.snapshot(0)
    assert old.version == 0 and old.num_files == 0
    assert commit_name(0) in store.reads  # read from storage
    assert log.snapshot(pinned.version) is not pinned
    assert log.latest() is latest
    assert pinned.version == 2 and paths(pinned) == ["f0.parquet", "f1.parquet"]


def test_corrupt_new_commit_is_reported_and_not_cached(tmp_path: Path) -> None:
    new_table(tmp_path)
    log = DeltaLog.for_table(str(tmp_path))
    good = log.latest()
    bad = tmp_path / "_delta_log" / commit_name(good.version + 1)
    bad.write_bytes(b'{"add": {"path": "broken.parquet", "size": \n')
    for _ in range(2):  # the second call retries: nothing was cached
        with pytest.raises(CorruptLogError):
            log.latest()
    bad.write_bytes(
        encode_commit([("commitInfo", {"operation": "WRITE"}), ("add", add("repaired"))])
    )
    repaired = log.latest()
    assert repaired.version == good.version + 1
    assert "repaired.parquet" in paths(repaired)
    assert good.version == 2 and "repaired.parquet" not in paths(good)


def test_new_rows_are_validated_and_not_cached(tmp_path: Path) -> None:
    """A commit that parses but breaks a state rule (a path outside the table)."""
    new_table(tmp_path)
    log = DeltaLog.for_table(str(tmp_path))
    good = log.latest()
    bad = tmp_path / "_delta_log" / commit_name(good.version + 1)
    bad.write_bytes(encode_commit([("add", add("../outside"))]))
    for _ in range(2):
        with pytest.raises(CorruptLogError, match="outside"):
            log.latest()


def test_metadata_change_validates_every_row(tmp_path: Path) -> None:
    """New partition columns apply to the files already there: they are all checked."""
    new_table(tmp_path)
    log = DeltaLog.for_table(str(tmp_path))
    good = log.latest()
    metadata = good.metadata.with_changes(partition_columns=["id"]).to_dict()
    bad = tmp_path / "_delta_log" / commit_name(good.version + 1)
    bad.write_bytes(encode_commit([("metaData", metadata)]))
    with pytest.raises(CorruptLogError, match="no partition value"):
        log.latest()


@pytest.mark.parametrize("versions", [0, 2, 4])
def test_table_recreated_at_the_same_path_is_reloaded(tmp_path: Path, versions: int) -> None:
    new_table(tmp_path)
    log = DeltaLog.for_table(str(tmp_path))
    old = log.latest()
    shutil.rmtree(tmp_path)
    new_table(tmp_path, files=versions)
    recreated = log.latest()
    assert recreated.version == versions
    assert recreated.metadata.id != old.metadata.id
    assert_same_as_uncached(recreated)


def test_lru_eviction_by_number_of_tables(tmp_path: Path) -> None:
    configure_log_cache(max_tables=2)
    roots = [tmp_path / name for name in "abc"]
    store = CountingStore()
    for root in roots:
        new_table(root)
        DeltaLog.for_table(str(root), store).latest()
    assert log_cache_info().tables == 2
    store.reset()
    DeltaLog.for_table(str(roots[2]), store).latest()
    assert store.reads == []  # most recent: still cached
    DeltaLog.for_table(str(roots[0]), store).latest()
    assert commit_name(0) in store.reads  # least recent: evicted, loaded again
    assert log_cache_info().tables == 2


def test_lru_eviction_by_bytes(tmp_path: Path) -> None:
    roots = [tmp_path / name for name in "abc"]
    for root in roots:
        new_table(root)
    size = snapshot_bytes(DeltaLog(str(roots[0])).snapshot())
    assert size > 0
    configure_log_cache(max_bytes=2 * size + size // 2)
    store = CountingStore()
    handles = [DeltaLog.for_table(str(root), store) for root in roots]
    cached = [h.latest() for h in handles]
    info = log_cache_info()
    assert info.bytes <= info.max_bytes and info.bytes == 2 * size
    store.reset()
    assert handles[2].latest() is cached[2]
    assert store.reads == []
    assert handles[0].latest() is not cached[0]  # evicted: loaded again


def test_table_over_the_byte_bound_alone_is_not_cached(tmp_path: Path) -> None:
    new_table(tmp_path)
    configure_log_cache(max_bytes=1)
    log = DeltaLog.for_table(str(tmp_path))
    assert log.latest() is not log.latest()
    assert log_cache_info().bytes == 0


def test_limits_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_TABLES_ENV, "7")
    assert log_cache_info().max_tables == 7
    configure_log_cache(max_tables=3)
    assert log_cache_info().max_tables == 3
    configure_log_cache()
    monkeypatch.setenv(CACHE_TABLES_ENV, "lots")
    with pytest.raises(DeltaIllegalArgumentException):
        log_cache_info()
    with pytest.raises(DeltaIllegalArgumentException):
        configure_log_cache(max_bytes=-1)


class SlowStore(CountingStore):
    """Reads take a while, so that refreshes in several threads overlap."""

    def read(self, path: str) -> bytes:
        time.sleep(0.002)
        return super().read(path)


def test_readers_in_threads_while_a_writer_commits(tmp_path: Path) -> None:
    """Monotone versions, no errors, and one refresh at a time: each new commit is read
    once by the shared handle however many threads ask for the latest snapshot."""
    writer = new_table(tmp_path)
    store = SlowStore()
    log = DeltaLog.for_table(str(tmp_path), store)
    log.latest()
    store.reset()
    commits = 15
    seen: list[list[int]] = [[] for _ in range(8)]
    errors: list[BaseException] = []
    done = threading.Event()

    def read(out: list[int]) -> None:
        try:
            while not done.is_set():
                out.append(DeltaLog.for_table(str(tmp_path), store).latest().version)
            out.append(log.latest().version)
        except BaseException as e:
            errors.append(e)

    def write() -> None:
        try:
            for i in range(commits):
                append(writer, f"t{i}")
        except BaseException as e:
            errors.append(e)
        finally:
            done.set()

    threads = [threading.Thread(target=read, args=(out,)) for out in seen]
    threads.append(threading.Thread(target=write))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for versions in seen:
        assert versions == sorted(versions)
        assert versions[-1] == 2 + commits
    assert_same_as_uncached(log.latest())
    reads = Counter(r for r in store.reads if r.endswith(".json"))
    assert reads == Counter(commit_name(v) for v in range(3, 3 + commits))
