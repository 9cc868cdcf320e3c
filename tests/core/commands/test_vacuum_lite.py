"""VACUUM LITE without Spark: it deletes the files the log removed (and no others), never
lists the table, continues from the last VACUUM's ``_last_vacuum_info``, and refuses when
log cleanup took commits it needs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from table_helpers import DAY, WEEK_MS, age_all, commit, make_table, remove, write_file

from delta_pyspark.core.commands.vacuum import vacuum
from delta_pyspark.core.commands.vacuum_lite import LAST_VACUUM_INFO, last_vacuum_version
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.core.transaction.commit import checkpoint_now
from delta_pyspark.exceptions import VacuumLiteUnavailableError


def _after_retention() -> int:
    """A "now" more than the default week after every commit made so far."""
    return int(time.time() * 1000) + WEEK_MS + DAY * 1000


def _no_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, directory: str) -> Any:
        raise AssertionError(f"VACUUM LITE listed {directory}")

    monkeypatch.setattr(LocalLogStore, "scan", refuse)


def test_lite_deletes_what_the_log_removed_without_listing_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1]), write_file(tmp_path, [2])
    commit(log, [a, b])
    remove(log, a["path"], days_ago=0)
    orphan = write_file(tmp_path, [9], name="failed-write.parquet")
    age_all(tmp_path)

    with monkeypatch.context() as patch:
        _no_listing(patch)
        result = vacuum(log, lite=True, now_ms=_after_retention())
    assert result.plan.paths == [str(tmp_path / a["path"])]
    assert not (tmp_path / a["path"]).exists()
    assert (tmp_path / b["path"]).exists()
    assert (tmp_path / orphan["path"]).exists(), "no commit removed it: FULL's job"
    info = json.loads((tmp_path / "_delta_log" / LAST_VACUUM_INFO).read_text())
    assert info == {"latestCommitVersionOutsideOfRetentionWindow": 2}  # delta-spark's form

    assert vacuum(log, now_ms=_after_retention()).plan.paths == [str(tmp_path / orphan["path"])]


def test_lite_keeps_removed_files_a_retained_version_or_a_later_add_needs(
    tmp_path: Path,
) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1]), write_file(tmp_path, [2])
    commit(log, [a, b])
    remove(log, a["path"], days_ago=0)
    commit(log, [a])  # the same file added back: live again
    remove(log, b["path"], days_ago=0)
    age_all(tmp_path)
    # with the default week, nothing is outside the retention window yet
    assert vacuum(log, lite=True).plan.paths == []
    assert last_vacuum_version(log) is None
    result = vacuum(log, lite=True, now_ms=_after_retention())
    assert result.plan.paths == [str(tmp_path / b["path"])]
    assert (tmp_path / a["path"]).exists()


def test_each_lite_run_reads_only_the_commits_after_the_last_vacuum(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1]), write_file(tmp_path, [2])
    commit(log, [a, b])
    remove(log, a["path"], days_ago=0)
    vacuum(log, lite=True, now_ms=_after_retention())
    covered = last_vacuum_version(log)
    assert covered == 2
    # a file the covered commits removed, put back by hand, is not looked for again
    (tmp_path / a["path"]).write_bytes(b"restored by hand")
    remove(log, b["path"], days_ago=0)
    age_all(tmp_path)
    second = vacuum(log, lite=True, now_ms=_after_retention())
    assert second.plan.paths == [str(tmp_path / b["path"])]
    assert (tmp_path / a["path"]).exists()
    assert last_vacuum_version(log) == 5  # the remove of b, after the first run's START and END


def test_lite_refuses_when_log_cleanup_took_the_commits_it_needs(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1]), write_file(tmp_path, [2])
    commit(log, [a, b])
    remove(log, a["path"], days_ago=0)
    checkpoint_now(log.store, log.snapshot())
    for version in (0, 1):
        (tmp_path / "_delta_log" / f"{version:020d}.json").unlink()
    age_all(tmp_path)
    with pytest.raises(VacuumLiteUnavailableError, match="Run VACUUM FULL") as caught:
        vacuum(log, lite=True, now_ms=_after_retention())
    assert caught.value.error_class == "DELTA_CANNOT_VACUUM_LITE"
    assert (tmp_path / a["path"]).exists()
    # FULL finds the file by listing, and records what it covered: LITE can go on from there
    assert vacuum(log, now_ms=_after_retention()).num_deleted_files == 1
    assert last_vacuum_version(log) == 2
    remove(log, b["path"], days_ago=0)
    age_all(tmp_path)
    assert vacuum(log, lite=True, now_ms=_after_retention()).num_deleted_files == 1
    assert not (tmp_path / b["path"]).exists()
