"""Pieces of the cold snapshot load that trade copies for views: dropping replaced rows
as slices, checkpoints read in place, the allocator used while decoding."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from delta_pyspark.core.log import replay as log_replay
from delta_pyspark.core.log.arrow_buffers import bulk_allocations
from delta_pyspark.core.log.logical_files import KEY_COLUMN
from delta_pyspark.core.log.table_paths import invalid_file_paths
from delta_pyspark.core.storage.log_store import LocalLogStore


def _files(n: int, chunks: int) -> pa.Table:
    keys = [f"f{i}\x00" for i in range(n)]
    size = -(-n // chunks)
    parts = [
        pa.table({"path": [k[:-1] for k in keys[i : i + size]], KEY_COLUMN: keys[i : i + size]})
        for i in range(0, n, size)
    ]
    return pa.concat_tables(parts)


@pytest.mark.parametrize("max_chunks", [2048, 1])
@pytest.mark.parametrize(
    "dropped", [[0], [9], [0, 9], [3, 4, 5], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [2, 7, 99]]
)
def test_drop_keys_keeps_the_other_rows_in_order(
    monkeypatch: pytest.MonkeyPatch, max_chunks: int, dropped: list[int]
) -> None:
    """Slices (few drops) and the copying filter (past the chunk bound) agree."""
    monkeypatch.setattr(log_replay, "_MAX_CHUNKS", max_chunks)
    table = _files(10, 3)
    keys = pa.array([f"f{i}\x00" for i in dropped], pa.string())
    out, mask = log_replay._drop_keys(table, keys)
    assert out.column("path").to_pylist() == [f"f{i}" for i in range(10) if i not in dropped]
    assert out.schema == table.schema
    assert mask is not None and mask.to_pylist() == [i in dropped for i in range(10)]


def test_drop_keys_without_hits_returns_the_table() -> None:
    table = _files(10, 3)
    out, mask = log_replay._drop_keys(table, pa.array(["nope\x00"], pa.string()))
    assert out is table and mask is None


def test_drop_keys_does_not_copy_the_kept_rows() -> None:
    table = _files(1000, 1)
    out, _ = log_replay._drop_keys(table, pa.array(["f500\x00"], pa.string()))
    assert out.num_rows == 999
    kept = out.column("path").chunks
    source = table.column("path").chunk(0).buffers()[2]
    assert all(c.buffers()[2].address == source.address for c in kept)


@pytest.mark.parametrize(
    ("paths", "bad"),
    [
        (["a/b.parquet", "c.parquet"], []),
        (["a/b.parquet", "../x.parquet", ""], ["../x.parquet", ""]),
        (["a.parquet", "/tbl"], ["/tbl"]),
        (["a.parquet", "file:///tbl", "file:/tbl/x.parquet"], ["file:///tbl"]),
        (["/elsewhere/x.parquet", "a.parquet"], []),
        (["/tbl/a//b.parquet", "file:/tbl/%2E%2E"], ["file:/tbl/%2E%2E"]),
    ],
)
def test_invalid_file_paths_with_and_without_absolute_paths(
    paths: list[str], bad: list[str]
) -> None:
    table = pa.table({"path": pa.array(paths, pa.string())})
    assert invalid_file_paths("/tbl", table) == bad


def test_local_store_reads_checkpoints_in_place(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"0123456789")
    source = LocalLogStore().open_input(str(path))
    assert isinstance(source, pa.OSFile)
    assert source.read() == b"0123456789"
    with pytest.raises(FileNotFoundError):
        LocalLogStore().open_input(str(tmp_path / "missing"))


def test_store_overriding_read_is_read_through_it(tmp_path: Path) -> None:
    class Recording(LocalLogStore):
        def __init__(self) -> None:
            self.reads: list[str] = []

        def read(self, path: str) -> bytes:
            self.reads.append(path)
            return super().read(path)

    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    store = Recording()
    assert store.open_input(str(path)).read() == b"abc"
    assert store.reads == [str(path)]


def test_bulk_allocations_restores_the_default_pool() -> None:
    before = pa.default_memory_pool()
    swaps = before.backend_name == "mimalloc" and "jemalloc" in pa.supported_memory_backends()
    with bulk_allocations():
        inside = pa.default_memory_pool().backend_name
        with bulk_allocations():
            assert pa.default_memory_pool().backend_name == inside
        assert pa.default_memory_pool().backend_name == inside
        data = pc.add(pa.array(range(1000)), pa.array(range(1000)))
    assert inside == ("jemalloc" if swaps else before.backend_name)
    assert pa.default_memory_pool().backend_name == before.backend_name
    assert data[999].as_py() == 1998  # buffers from the other pool outlive the swap


def test_bulk_allocations_in_threads_restore_the_default_pool() -> None:
    before = pa.default_memory_pool().backend_name
    barrier = threading.Barrier(4)

    def load() -> None:
        with bulk_allocations():
            barrier.wait()
            pc.sum(pa.array(range(10_000))).as_py()

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pa.default_memory_pool().backend_name == before


def test_application_pool_is_left_alone() -> None:
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        with bulk_allocations():
            assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)
