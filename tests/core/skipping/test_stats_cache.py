"""A snapshot's parsed stats are kept for its later scans and its successors: the second
scan of a snapshot on the same columns parses no JSON, a scan behind a partition filter
parses only the files the filter keeps, and a snapshot made from another by new commits
parses only the files they add."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from table_helpers import commit, files_named, make_table, remove, write_file

import delta_pyspark.core.stats.cache as cache_module
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog, log_cache_info, snapshot_bytes
from delta_pyspark.core.snapshot.snapshot import Snapshot


@pytest.fixture
def parsed_rows(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of files each stats parse of the cache was given."""
    seen: list[int] = []
    parse = cache_module.file_stats

    def counting(files: pa.Table, *args: Any) -> pa.StructArray | None:
        seen.append(files.num_rows)
        return parse(files, *args)

    monkeypatch.setattr(cache_module, "file_stats", counting)
    yield seen


def _table(root: Path) -> DeltaLog:
    """Six one-file commits: ids 0-9 in part a, 10-19 in b, ... (ids 10 * i ... 10 * i + 9),
    and a checkpoint at version 4."""
    make_table(root, partitioned=True, config={"delta.checkpointInterval": "4"})
    log = DeltaLog.for_table(str(root))  # the process's handle: its snapshots follow each other
    for i in range(6):
        commit(log, [write_file(root, list(range(10 * i, 10 * i + 10)), "ab"[i % 2])])
    return log


def _ids(snapshot: Snapshot, sql: str) -> list[int]:
    """The smallest id of each file the predicate keeps."""
    files = prune_files(snapshot, parse_predicate(sql))
    return sorted(int(p.split("part-")[1][:5]) for p in files.column("path").to_pylist())


def test_second_scan_of_a_snapshot_parses_nothing(tmp_path: Path, parsed_rows: list[int]) -> None:
    snapshot = _table(tmp_path).snapshot()
    assert _ids(snapshot, "id = 25") == [20]
    assert parsed_rows == [6]
    assert _ids(snapshot, "id >= 25 AND id < 41") == [20, 30, 40]
    assert _ids(snapshot, "id = 55") == [50]
    assert parsed_rows == [6]  # the same column: the kept answer
    assert _ids(snapshot, "part = 'a' AND id > 33") == [40]  # a subset, from the kept answer
    assert parsed_rows == [6]


def test_partition_filter_parses_only_its_files(tmp_path: Path, parsed_rows: list[int]) -> None:
    snapshot = _table(tmp_path).snapshot()
    assert _ids(snapshot, "part = 'b' AND id < 35") == [10, 30]
    assert _ids(snapshot, "part = 'b' AND id > 40") == [50]
    assert parsed_rows == [3, 3]  # part b's three files, each time: nothing kept for a subset
    assert _ids(snapshot, "id < 12") == [0, 10]
    assert parsed_rows == [3, 3, 6]


def test_a_new_version_parses_only_its_new_files(tmp_path: Path, parsed_rows: list[int]) -> None:
    log = _table(tmp_path)
    old = log.snapshot()
    assert _ids(old, "id >= 95") == []
    new = commit(log, [write_file(tmp_path, list(range(90, 100)), "a")])
    assert _ids(new, "id >= 95") == [90]
    assert _ids(old, "id >= 95") == []  # the old snapshot keeps its own answer
    assert parsed_rows == [6, 1]
    # the process's snapshot cache counts the kept answers
    kept = new.stats_cache.nbytes
    assert kept > 0
    assert snapshot_bytes(new) == new.state.files.nbytes + new.state.tombstones.nbytes + kept
    # removes in the middle of the file list: the answers of the files after them move up
    newer = remove(log, *_paths(new, 20, 40), days_ago=0)
    assert _ids(newer, "id >= 15 AND id < 45") == [10, 30]
    assert _ids(newer, "id >= 50") == [50, 90]
    assert parsed_rows == [6, 1]


def test_a_checkpointed_readers_update_parses_the_new_files(
    tmp_path: Path, parsed_rows: list[int]
) -> None:
    writer = _table(tmp_path)
    reader = DeltaLog(str(tmp_path))
    before = reader.snapshot()
    assert before.segment.checkpoint is not None  # its files read from the checkpoint
    assert _ids(before, "id > 48") == [40, 50]
    commit(writer, [write_file(tmp_path, list(range(60, 70)), "b")])
    after = reader.update(before)
    assert after.version == before.version + 1
    assert _ids(after, "id > 48") == [40, 50, 60]
    assert parsed_rows == [6, 1]


@pytest.mark.parametrize("max_slices", [1024, 0])
def test_kept_answers_agree_with_a_fresh_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_slices: int
) -> None:
    """Random commits of adds and removes: each version's kept answers give the files a
    parse of that version's whole file list gives (the removed rows taken out of a kept
    answer by slices, and past ``_MAX_SLICES`` by a take)."""
    monkeypatch.setattr(cache_module, "_MAX_SLICES", max_slices)
    rng = random.Random(7)
    log = _table(tmp_path)
    snapshot = log.snapshot()
    for step in range(25):
        low = rng.randrange(0, 100) * 10
        predicate = f"id >= {low} AND id < {low + 200}"
        cached = _ids(snapshot, predicate)
        fresh = Snapshot(snapshot.table_root, snapshot.state, snapshot.segment, 0)
        assert cached == _ids(fresh, predicate), (step, predicate)
        adds = [write_file(tmp_path, [10 * (60 + step * 3 + i)], "ab"[i % 2]) for i in range(3)]
        live = snapshot.files.column("path").to_pylist()
        gone = rng.sample(live, k=min(len(live), rng.randrange(0, 3)))
        removes = remove_actions(files_named(snapshot, *gone)) if gone else []
        snapshot = commit(log, adds, removes)


def test_the_process_cache_counts_stats_parsed_after_it_stored_the_snapshot(
    tmp_path: Path,
) -> None:
    log = _table(tmp_path)
    snapshot = log.latest()
    before = log_cache_info().bytes
    assert _ids(snapshot, "id = 25") == [20]
    assert log.latest() is snapshot  # unchanged, counted again
    assert snapshot.stats_cache.nbytes > 0
    assert log_cache_info().bytes == before + snapshot.stats_cache.nbytes


def _paths(snapshot: Snapshot, *first_ids: int) -> list[str]:
    return [
        p
        for p in snapshot.files.column("path").to_pylist()
        if int(p.split("part-")[1][:5]) in first_ids
    ]
