"""LocalLogStore: put-if-absent is the commit point, so it must be atomic under races."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from delta_pyspark.core.storage.log_store import LocalLogStore, log_store_for, to_local_path
from delta_pyspark.exceptions import FileAlreadyExistsError, UnsupportedStorageError

WRITERS = 16


def _payload(writer: int) -> bytes:
    # Large enough that a torn or interleaved write would show.
    return (f"writer-{writer:02d}\n".encode()) * 50_000


def test_put_if_absent_race_has_exactly_one_winner(tmp_path: Path) -> None:
    store = LocalLogStore()
    target = tmp_path / "_delta_log" / f"{1:020d}.json"
    barrier = threading.Barrier(WRITERS)
    won: list[int] = []
    lost: list[FileAlreadyExistsError] = []
    other: list[BaseException] = []
    lock = threading.Lock()

    def attempt(writer: int) -> None:
        barrier.wait()
        try:
            store.write_if_absent(str(target), _payload(writer))
        except FileAlreadyExistsError as e:
            with lock:
                lost.append(e)
        except BaseException as e:  # anything else is a failure of the store
            with lock:
                other.append(e)
        else:
            with lock:
                won.append(writer)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert other == []
    assert len(won) == 1
    assert len(lost) == WRITERS - 1
    assert all(str(target) in str(e) and "already exists" in str(e) for e in lost)
    assert target.read_bytes() == _payload(won[0])
    assert os.listdir(target.parent) == [target.name]  # no temp files left behind


def test_write_if_absent_refuses_to_overwrite(tmp_path: Path) -> None:
    store = LocalLogStore()
    path = str(tmp_path / "f.json")
    store.write_if_absent(path, b"first")
    with pytest.raises(FileAlreadyExistsError, match=r"f\.json already exists"):
        store.write_if_absent(path, b"second")
    assert store.read(path) == b"first"
    assert os.listdir(tmp_path) == ["f.json"]


def test_write_creates_directories_and_replaces(tmp_path: Path) -> None:
    store = LocalLogStore()
    path = str(tmp_path / "a" / "b" / "_last_checkpoint")
    store.write(path, b"one")
    store.write(path, b"two")
    assert store.read(path) == b"two"
    assert os.listdir(tmp_path / "a" / "b") == ["_last_checkpoint"]


def test_list_from_is_sorted_and_starts_at_name(tmp_path: Path) -> None:
    store = LocalLogStore()
    for v in (3, 1, 10, 2):
        store.write(str(tmp_path / f"{v:020d}.json"), b"x" * v)
    (tmp_path / "subdir").mkdir()  # directories are not listed
    listed = list(store.list_from(str(tmp_path), f"{2:020d}"))
    assert [s.name for s in listed] == [f"{v:020d}.json" for v in (2, 3, 10)]
    assert [s.size for s in listed] == [2, 3, 10]
    assert all(s.path == f"{tmp_path}/{s.name}" for s in listed)
    mtime = int(os.stat(tmp_path / f"{3:020d}.json").st_mtime * 1000)
    assert listed[1].modification_time == mtime
    assert list(store.list_from(str(tmp_path / "missing"))) == []


def test_read_range_and_errors(tmp_path: Path) -> None:
    store = LocalLogStore()
    path = str(tmp_path / "dv.bin")
    store.write(path, bytes(range(100)))
    assert store.read_range(path, 10, 5) == bytes(range(10, 15))
    with pytest.raises(EOFError, match="wanted 10 bytes at offset 95, got 5"):
        store.read_range(path, 95, 10)
    with pytest.raises(FileNotFoundError):
        store.read(str(tmp_path / "nope"))


def test_delete_exists_is_dir(tmp_path: Path) -> None:
    store = LocalLogStore()
    path = str(tmp_path / "f")
    store.write(path, b"x")
    assert store.exists(path) and not store.is_dir(path)
    assert store.is_dir(str(tmp_path))
    store.delete(path)
    store.delete(path)  # a missing file is not an error
    assert not store.exists(path)


def test_file_uris_are_local_paths(tmp_path: Path) -> None:
    store = LocalLogStore()
    target = tmp_path / "with space.json"
    uri = "file://" + str(target).replace(" ", "%20")
    assert to_local_path(uri) == str(target)
    store.write_if_absent(uri, b"x")
    assert target.read_bytes() == b"x"
    assert isinstance(log_store_for(uri), LocalLogStore)
    assert isinstance(log_store_for(str(tmp_path)), LocalLogStore)


def test_unknown_scheme_is_refused() -> None:
    with pytest.raises(UnsupportedStorageError, match="no storage for scheme 'hdfs'"):
        log_store_for("hdfs://namenode/table")


# ------------------------------------------------------------------ table file operations


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    (root / "p=1").mkdir(parents=True)
    (root / "a.parquet").write_bytes(b"a" * 10)
    (root / "p=1" / "b.parquet").write_bytes(b"b" * 20)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.parquet").write_bytes(b"c" * 30)
    os.symlink(outside / "c.parquet", root / "link_to_file.parquet")
    os.symlink(outside, root / "link_to_dir")
    os.symlink(tmp_path / "gone", root / "dangling")
    return root


def test_scan_reports_links_without_following_them(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    entries = {e.name: e for e in LocalLogStore().scan(str(root))}
    assert set(entries) == {"p=1", "a.parquet", "link_to_file.parquet", "link_to_dir", "dangling"}
    assert entries["p=1"].is_dir and not entries["p=1"].is_link
    assert (entries["a.parquet"].size, entries["a.parquet"].is_link) == (10, False)
    assert entries["link_to_file.parquet"].is_link and entries["link_to_file.parquet"].link_to_file
    assert entries["link_to_dir"].is_link and not entries["link_to_dir"].is_dir
    assert not entries["link_to_dir"].link_to_file
    assert entries["dangling"].is_link and not entries["dangling"].link_to_file
    assert LocalLogStore().scan(str(tmp_path / "missing")) == []


def test_walk_files_lists_files_and_links_to_files_only(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    walked = sorted(os.path.relpath(e.path, root) for e in LocalLogStore().walk_files(str(root)))
    assert walked == ["a.parquet", "link_to_file.parquet", os.path.join("p=1", "b.parquet")]


def test_status_follows_a_link_to_its_target(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert LocalLogStore().status(str(root / "link_to_file.parquet")).size == 30
    assert LocalLogStore().real_path(str(root / "link_to_dir")) == str(tmp_path / "outside")


def test_copy_if_absent_never_replaces(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    store = LocalLogStore()
    dest = root / "new" / "deep" / "copy.parquet"
    assert store.copy_if_absent(str(root / "a.parquet"), str(dest))
    assert dest.read_bytes() == b"a" * 10
    assert not store.copy_if_absent(str(root / "p=1" / "b.parquet"), str(dest))
    assert dest.read_bytes() == b"a" * 10
    assert sorted(os.listdir(dest.parent)) == ["copy.parquet"]  # no temporary file left


def test_move_delete_and_directory_removal(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    store = LocalLogStore()
    store.move(str(root / "a.parquet"), str(root / "q=2" / "a.parquet"))
    assert (root / "q=2" / "a.parquet").read_bytes() == b"a" * 10
    assert not (root / "a.parquet").exists()
    assert not store.remove_empty_dir(str(root / "q=2"))  # not empty: kept
    assert store.delete(str(root / "q=2" / "a.parquet"))
    assert not store.delete(str(root / "q=2" / "a.parquet"))  # already gone
    assert store.remove_empty_dir(str(root / "q=2"))
    store.delete_tree(str(root / "p=1"))
    assert not (root / "p=1").exists()
    assert (tmp_path / "outside" / "c.parquet").exists()
