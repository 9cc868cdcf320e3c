"""What a streaming read delivers, without Spark: files in order from a snapshot or a
version, batches bounded by the rate limits, offsets that round-trip through JSON, and
change commits failed or skipped as the options say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from log_helpers import SCHEMA, add, append, remove

from delta_pyspark.core.changes.stream_source import StreamOffset, StreamOptions, StreamSource
from delta_pyspark.core.protocol.actions import Metadata
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
    DeltaSchemaChangedError,
    DeltaUnsupportedOperationException,
)


def _add(name: str, mtime: int, size: int = 100) -> dict[str, Any]:
    return {**add(name, size=size), "modificationTime": mtime}


def _table(root: Path) -> DeltaLog:
    log = DeltaLog(str(root))
    create_table(log, SCHEMA, ["part"])
    append(log, _add("b", 2), _add("a", 2), _add("c", 1))  # version 1
    append(log, _add("d", 5))  # version 2
    return log


def _source(log: DeltaLog, **options: str) -> StreamSource:
    return StreamSource(log, StreamOptions.parse(options, log), SCHEMA)


def _names(adds: list[dict[str, Any]]) -> list[str]:
    return [a["path"].rsplit("/", 1)[1].removesuffix(".parquet") for a in adds]


def test_snapshot_files_by_time_then_path_then_later_commits(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path))
    create_table(log, SCHEMA, ["part"])
    append(log, _add("b", 2), _add("a", 2), _add("c", 1))
    source = _source(log)
    end = source.latest_offset(None, limited=False)
    assert end == StreamOffset(log.snapshot().metadata.id, 1, 2, True)
    append(log, _add("d", 5))
    assert _names(source.batch(None, end)) == ["c", "a", "b"]
    after = source.latest_offset(end, limited=False)
    assert after is not None
    assert (after.version, after.index, after.is_starting_version) == (2, 0, False)
    assert _names(source.batch(end, after)) == ["d"]
    assert source.latest_offset(after, limited=False) == after  # nothing new


def test_rate_limits_and_an_end_version(tmp_path: Path) -> None:
    log = _table(tmp_path)
    source = _source(log, maxFilesPerTrigger="2")
    first = source.latest_offset(None, limited=True)
    assert first is not None and first.index == 1
    assert source.latest_offset(None, limited=False) == StreamOffset(
        first.table_id, 2, 3, True
    )  # the latest snapshot, whole: a, b, c and d
    sized = _source(log, maxBytesPerTrigger="150b", startingVersion="1")
    one = sized.latest_offset(None, limited=True)
    assert one is not None and (one.version, one.index) == (1, 1)  # the file past the limit
    capped = _source(log, startingVersion="1").latest_offset(None, limited=False, end_version=1)
    assert capped is not None and capped.version == 1


def test_offsets_round_trip_and_refuse_junk() -> None:
    offset = StreamOffset("id-1", 7, 3, False)
    assert StreamOffset.from_json(offset.to_json()) == offset
    assert json.loads(offset.to_json())["reservoirVersion"] == 7
    with pytest.raises(DeltaIllegalArgumentException, match="not a Delta stream offset"):
        StreamOffset.from_json('{"reservoirVersion": 1}')
    newer = json.dumps({**json.loads(offset.to_json()), "sourceVersion": 9})
    with pytest.raises(DeltaUnsupportedOperationException, match="newer"):
        StreamOffset.from_json(newer)


def test_options_are_checked(tmp_path: Path) -> None:
    log = _table(tmp_path)
    for options, message in (
        ({"maxFilesPerTrigger": "-1"}, "maxFilesPerTrigger"),
        ({"maxBytesPerTrigger": "lots"}, "maxBytesPerTrigger"),
        ({"startingVersion": "x"}, "startingVersion"),
    ):
        with pytest.raises(DeltaIllegalArgumentException, match=message):
            StreamOptions.parse(options, log)
    assert StreamOptions.parse({"maxBytesPerTrigger": "2m"}, log).max_bytes == 2 * 1024**2
    assert StreamOptions.parse({"startingVersion": "latest"}, log).starting_version == 3


def test_a_stream_of_another_table_is_refused(tmp_path: Path) -> None:
    log = _table(tmp_path)
    with pytest.raises(DeltaIllegalArgumentException, match="use a new checkpoint"):
        _source(log).latest_offset(StreamOffset("another-table", 1, 0, False), limited=False)


def _delete(log: DeltaLog, *names: str, rewrite: bool = False) -> None:
    txn = Transaction(log, log.snapshot())
    txn.remove_files([remove(add(n)) for n in names])
    if rewrite:
        txn.add_files([add("rewritten")])
    txn.commit("DELETE", {})


def test_change_commits_fail_or_are_skipped(tmp_path: Path) -> None:
    log = _table(tmp_path)
    start = StreamOffset(log.snapshot().metadata.id, 2, 0, False)  # after d
    _delete(log, "a")  # version 3: data removed, nothing added
    with pytest.raises(DeltaUnsupportedOperationException, match="ignoreDeletes"):
        _source(log).latest_offset(start, limited=False)
    assert _source(log, ignoreDeletes="true").latest_offset(start, limited=False) == start
    _delete(log, "b", rewrite=True)  # version 4: a rewrite
    with pytest.raises(DeltaUnsupportedOperationException, match="skipChangeCommits"):
        _source(log, ignoreDeletes="true").latest_offset(start, limited=False)
    skipping = _source(log, skipChangeCommits="true")
    assert skipping.latest_offset(start, limited=False) == start
    changes = _source(log, ignoreChanges="true")
    end = changes.latest_offset(start, limited=False)
    assert end is not None and _names(changes.batch(start, end)) == ["rewritten"]


def test_files_rewritten_without_data_change_are_not_delivered(tmp_path: Path) -> None:
    log = _table(tmp_path)
    start = StreamOffset(log.snapshot().metadata.id, 2, 0, False)
    txn = Transaction(log, log.snapshot())
    txn.remove_files([{**remove(add("a")), "dataChange": False}])
    txn.add_files([{**add("compacted"), "dataChange": False}])
    txn.commit("OPTIMIZE", {})
    assert _source(log).latest_offset(start, limited=False) == start


def test_a_schema_the_stream_does_not_cover_fails_it(tmp_path: Path) -> None:
    log = _table(tmp_path)
    start = StreamOffset(log.snapshot().metadata.id, 2, 0, False)
    wider = json.loads(SCHEMA)
    wider["fields"].append({"name": "note", "type": "string", "nullable": True, "metadata": {}})
    txn = Transaction(log, log.snapshot())
    txn.update_metadata(log.snapshot().metadata.with_changes(schema_string=json.dumps(wider)))
    txn.add_files([add("e")])
    txn.commit("WRITE", {})
    with pytest.raises(DeltaSchemaChangedError, match="schema change in version 3"):
        _source(log).latest_offset(start, limited=False)
    restarted = StreamSource(log, StreamOptions(), json.dumps(wider))
    end = restarted.latest_offset(start, limited=False)
    assert end is not None and _names(restarted.batch(start, end)) == ["e"]
    assert isinstance(log.snapshot().metadata, Metadata)
