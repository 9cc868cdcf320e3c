"""Which files make up the change data feed of a range of versions, and the range rules
(Spark-free: ``core/changes/change_data.py``)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from log_helpers import SCHEMA, add, append, remove
from pyroaring import BitMap64

from delta_pyspark.core.changes.change_data import (
    ChangeRange,
    change_files,
    resolve_range,
    version_changes,
)
from delta_pyspark.core.log.commit_actions import CommitActions
from delta_pyspark.core.protocol.deletion_vectors import inline_descriptor
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    ChangeDataNotRecordedError,
    ChangeDataStartAfterLatestError,
    InvalidChangeDataRangeError,
    NoChangeDataStartError,
)

CDC = {
    "path": "_change_data/part=a/c.parquet",
    "partitionValues": {"part": "a"},
    "size": 9,
    "dataChange": False,
}


def _table(root: Path, cdf: bool = True) -> DeltaLog:
    log = DeltaLog(str(root))
    conf = {"delta.enableChangeDataFeed": "true"} if cdf else {}
    create_table(log, SCHEMA, ["part"], conf)
    return log


def _summary(files: list[Any]) -> list[tuple[int, str, str | None]]:
    return [(f.version, f.path, f.change_type) for f in files]


def test_adds_are_inserts_removes_deletes_and_cdc_files_replace_both(tmp_path: Path) -> None:
    log = _table(tmp_path)
    append(log, add("f1"), add("f2", part="b"))  # v1
    txn = Transaction(log, log.snapshot())  # v2: a rewrite carrying its change data
    txn.remove_files([remove(add("f1"))])
    txn.add_files([add("f3")])
    txn.add_cdc_files([CDC])
    txn.commit("UPDATE", {})
    txn = Transaction(log, log.snapshot())  # v3: a whole-file delete
    txn.remove_files([remove(add("f2", part="b"))])
    txn.commit("DELETE", {})
    txn = Transaction(log, log.snapshot())  # v4: OPTIMIZE changes no data
    txn.remove_files([{**remove(add("f3")), "dataChange": False}])
    txn.add_files([{**add("f4"), "dataChange": False}])
    txn.commit("OPTIMIZE", {})
    files = change_files(log, ChangeRange(0, 4))
    assert _summary(files) == [
        (1, "part=a/f1.parquet", "insert"),
        (1, "part=b/f2.parquet", "insert"),
        (2, CDC["path"], None),  # the cdc file alone: not f1's removal nor f3's addition
        (3, "part=b/f2.parquet", "delete"),
    ]
    assert files[2].partition_values == {"part": "a"}
    assert all(f.vector is None and f.keep is None for f in files)
    timestamps = [f.timestamp for f in files]
    mtimes = {
        v: os.stat(tmp_path / "_delta_log" / f"{v:020d}.json").st_mtime_ns // 1_000_000
        for v in (1, 2, 3)
    }
    assert timestamps[0] == mtimes[1] and timestamps[3] >= mtimes[3]
    assert timestamps == sorted(timestamps) and timestamps[2] > timestamps[1] - 1
    assert _summary(change_files(log, ChangeRange(2, 2))) == [(2, CDC["path"], None)]


def _dv(rows: list[int]) -> dict[str, Any]:
    return inline_descriptor(BitMap64(rows)).to_dict()


def test_deletion_vectors_live_rows_and_vector_differences(tmp_path: Path) -> None:
    f = add("f1")
    old, new = _dv([0]), _dv([0, 2])
    actions = CommitActions(
        adds=[{**f, "deletionVector": new}, {**add("f2"), "deletionVector": old}],
        removes=[
            {**remove(f), "deletionVector": old},
            {**remove(add("f3")), "deletionVector": new},
        ],
    )
    files = version_changes(actions, 7, 1000)
    store = log_store_for(str(tmp_path))
    got = {(c.path, c.change_type): c.dropped_rows(str(tmp_path), store) for c in files}
    assert set(got) == {
        ("part=a/f1.parquet", "delete"),  # only row 2: marked now, not before
        ("part=a/f1.parquet", "insert"),  # rows unmarked again: none here
        ("part=a/f2.parquet", "insert"),  # a new file with a vector: its live rows
        ("part=a/f3.parquet", "delete"),  # removed with a vector: the rows it still had
    }
    assert list(got[("part=a/f1.parquet", "delete")]) == [0, 1]  # of 3 rows, all but row 2
    assert list(got[("part=a/f1.parquet", "insert")]) == [0, 1, 2]
    assert list(got[("part=a/f2.parquet", "insert")]) == [0]
    assert list(got[("part=a/f3.parquet", "delete")]) == [0, 2]
    restored = version_changes(
        CommitActions(adds=[dict(f)], removes=[{**remove(f), "deletionVector": new}]), 8, 0
    )  # RESTORE: rows unmarked again are inserts
    assert [(c.change_type, list(c.dropped_rows(str(tmp_path), store))) for c in restored] == [
        ("insert", [1])
    ]


def test_range_rules(tmp_path: Path) -> None:
    log = _table(tmp_path)
    append(log, add("f1"))
    append(log, add("f2"))
    assert resolve_range(log, {"startingVersion": "1"}, UTC) == ChangeRange(1, 2)
    assert resolve_range(log, {"startingVersion": "0", "endingVersion": "1"}, UTC) == ChangeRange(
        0, 1
    )
    assert resolve_range(log, {"startingVersion": "1", "endingVersion": "9"}, UTC) == ChangeRange(
        1, 2
    )
    with pytest.raises(NoChangeDataStartError, match="No startingVersion"):
        resolve_range(log, {"endingVersion": "1"}, UTC)
    with pytest.raises(ChangeDataStartAfterLatestError, match="exceeds the latest table version 2"):
        resolve_range(log, {"startingVersion": "3"}, UTC)
    with pytest.raises(InvalidChangeDataRangeError, match="End cannot be before start"):
        resolve_range(log, {"startingVersion": "2", "endingVersion": "1"}, UTC)
    ts = [r.timestamp for r in log.commit_records()]
    by_time = {"startingTimestamp": str(ts[1]), "endingTimestamp": str(ts[2])}
    by_time = {k: _iso(v) for k, v in by_time.items()}
    assert resolve_range(log, by_time, UTC) == ChangeRange(1, 2)


def _iso(ms: str) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(int(ms) / 1000, UTC).isoformat()


def test_versions_without_change_data_are_refused(tmp_path: Path) -> None:
    log = _table(tmp_path, cdf=False)
    append(log, add("f1"))  # v1, before the feed was on
    txn = Transaction(log, log.snapshot())
    txn.update_metadata(
        log.snapshot().metadata.with_changes(configuration={"delta.enableChangeDataFeed": "true"})
    )
    txn.commit("SET TBLPROPERTIES", {})  # v2
    append(log, add("f2"))  # v3
    assert _summary(change_files(log, ChangeRange(2, 3))) == [(3, "part=a/f2.parquet", "insert")]
    with pytest.raises(ChangeDataNotRecordedError, match=r"range \[1 , 3\].*version \[1\]"):
        change_files(log, ChangeRange(1, 3))
    txn = Transaction(log, log.snapshot())
    txn.update_metadata(log.snapshot().metadata.with_changes(configuration={}))
    txn.commit("SET TBLPROPERTIES", {})  # v4 turns it off again
    with pytest.raises(ChangeDataNotRecordedError, match=r"version \[4\]"):
        change_files(log, ChangeRange(2, 4))
    assert ChangeDataNotRecordedError.error_class == "DELTA_MISSING_CHANGE_DATA"


def test_in_commit_timestamps_are_the_commit_timestamps(testdata: Path, tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(testdata / "delta-rs" / "cdc_ict_table", root)
    log = DeltaLog(str(root))
    files = change_files(log, ChangeRange(0, 3))
    for f in files:
        text = (root / "_delta_log" / f"{f.version:020d}.json").read_text()
        info = next(json.loads(x)["commitInfo"] for x in text.splitlines() if "commitInfo" in x)
        assert f.timestamp == info["inCommitTimestamp"]
    assert {f.version for f in files} == {1, 2, 3}


def test_change_feed_streams_deliver_change_files(tmp_path: Path) -> None:
    from delta_pyspark.core.changes.stream_source import StreamOptions, StreamSource

    log = _table(tmp_path / "on")
    append(log, add("f1"))  # v1
    txn = Transaction(log, log.snapshot())
    txn.remove_files([remove(add("f1"))])
    txn.add_files([add("f2")])
    txn.add_cdc_files([CDC])
    txn.commit("UPDATE", {})  # v2

    def delivered(log: DeltaLog, options: dict[str, str]) -> list[tuple[int, str, str | None]]:
        parsed = StreamOptions.parse({"readChangeFeed": "true", **options}, log)
        source = StreamSource(log, parsed, log.snapshot().metadata.schema_string)
        items = source.files_after(source.initial_offset(), None)
        return [(i.version, i.add["change"].path, i.add["change"].change_type) for i in items]

    assert delivered(log, {}) == [(2, "part=a/f2.parquet", "insert")]  # the snapshot's files
    assert delivered(log, {"startingVersion": "1"}) == [
        (1, "part=a/f1.parquet", "insert"),
        (2, CDC["path"], None),
    ]
    off = _table(tmp_path / "off", cdf=False)
    with pytest.raises(ChangeDataNotRecordedError):
        delivered(off, {})
    with pytest.raises(ChangeDataNotRecordedError):
        delivered(off, {"startingVersion": "0"})
