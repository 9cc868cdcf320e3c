"""Column-wise commit parsing (``parse_commits``) against the per-line ``parse_actions``.

Replay reads add/remove lines with Arrow's JSON reader and reconciles them by key; it
must give exactly the state (rows, their order, map entries and their order, nulls)
and exactly the errors of ``parse_actions`` + ``TableState.apply`` on the same commits,
falling back to that path whenever it cannot vouch for an input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_pyspark.core.log.checkpoint import write_checkpoint
from delta_pyspark.core.log.commit_actions import CommitActions, parse_actions
from delta_pyspark.core.log.commit_batch import CommitBatch, parse_commits
from delta_pyspark.core.log.replay import TableState, empty_state
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.exceptions import CorruptLogError

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
METADATA = {
    "metaData": {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": ["p"],
        "configuration": {},
    }
}
STATS = '{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}'
DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4,
      "sizeInBytes": 40, "cardinality": 6}  # fmt: skip


def line(obj: dict[str, Any], pretty: bool = False) -> bytes:
    return json.dumps(obj, separators=(", ", ": ") if pretty else (",", ":")).encode()


def commit(*objs: dict[str, Any]) -> bytes:
    return b"\n".join(line(o) for o in objs) + b"\n"


def add(path: str, **fields: Any) -> dict[str, Any]:
    body = {"path": path, "partitionValues": {"p": "x"}, "size": 10, "modificationTime": 1,
            "dataChange": True, "stats": STATS}  # fmt: skip
    body.update(fields)
    return {"add": body}


def remove(path: str, **fields: Any) -> dict[str, Any]:
    body = {"path": path, "deletionTimestamp": 5, "dataChange": True}
    body.update(fields)
    return {"remove": body}


def columnar(commits: list[bytes]) -> CommitBatch | list[CommitActions]:
    return parse_commits(lambda: ((c, f"v{i}") for i, c in enumerate(commits)))


def replay(parsed: CommitBatch | list[CommitActions]) -> TableState:
    return empty_state().apply(7, parsed)


def assert_same(commits: list[bytes], fast: bool | None = None) -> None:
    """Both paths give the same state or the same error; ``fast``: which path must run."""
    try:
        expected: TableState | str = replay(
            [parse_actions(c, f"v{i}") for i, c in enumerate(commits)]
        )
    except Exception as e:  # CorruptLogError, or whatever the per-line path raises
        expected = repr(e)
    try:
        parsed = columnar(commits)
        got: TableState | str = replay(parsed)
    except Exception as e:
        assert repr(e) == expected
        return
    assert not isinstance(expected, str), f"expected {expected!r}"
    if fast is not None:
        assert isinstance(parsed, CommitBatch) is fast
    for name in ("files", "tombstones"):
        want, have = getattr(expected, name), getattr(got, name)
        assert have.schema == want.schema
        assert have.to_pylist() == want.to_pylist(), name
    assert (got.protocol, got.metadata, got.txns, got.domains, got.commit_info) == (
        expected.protocol,
        expected.metadata,
        expected.txns,
        expected.domains,
        expected.commit_info,
    )


def test_plain_commits_take_the_columnar_path() -> None:
    commits = [
        commit({"commitInfo": {"operation": "WRITE"}}, PROTOCOL, METADATA, add("a"), add("b")),
        commit({"commitInfo": {"n": 1}}, remove("a"), add("c", deletionVector=DV), add("b")),
        commit({"txn": {"appId": "x", "version": 3}}, add("a", partitionValues={"p": "y"})),
    ]
    assert_same(commits, fast=True)
    state = replay(columnar(commits))
    assert state.files.column("path").to_pylist() == ["b", "c", "a"]
    assert state.tombstones.num_rows == 0
    assert state.txns["x"].version == 3


def test_reconciliation_order_matches_the_dict_model() -> None:
    # Re-adds keep their first position unless removed in between; removes come first.
    commits = [
        commit(add("a"), add("b"), add("c")),
        commit(add("a", size=20), remove("b"), add("d")),
        commit(remove("c"), add("b", size=30), add("c", size=40)),
        commit(remove("a"), add("a", size=50)),
        commit(add("e"), add("e", size=60)),
    ]
    assert_same(commits, fast=True)


@pytest.mark.parametrize(
    "values",
    [
        [{"p": None}, {"p": "x"}],  # explicit null
        [{}, {"p": "x"}],  # absent key
        [{"p": "1", "q": "2"}, {"q": "3", "p": "4"}],  # two orders
        [{"p": "1", "q": "2"}, {"p": "3", "q": "4"}],  # one order
        [{"p": "1", "q": "2"}, {"p": "3"}],
        [{"a/b": "1", "c": "2"}, {"a/b": "3", "c": "4"}],  # "/" may be written "\/"
        [{"é": "1", 'x"y': "2"}, {"é": "3", 'x"y': "4"}],
        [{"p": "q", "q": "p"}, {"q": "p", "p": "q"}],  # keys also appear as values
        [{"path": "1", "size": "2"}, {"size": "3", "path": "4"}],  # keys also action fields
        [{}, {}],
        [None, {"p": "1"}],
        [{"p": "\u2603", "q": "a\\u0041"}, {"q": "", "p": ""}],
        [{"d": "2024-01-31"}, {"d": "2024-01-31 00:00:00"}],  # inferred as timestamps
        [{"p": "1"}, {"p": "2", "d": "2024-01-31"}, {"p": "3", "d": "2024-01-31T00:00Z"}],
        [{"p": "1"}, {"p": "2", "n": 5}],
        [{"p": "1"}, {"p": "2", "n": {"x": "y"}}],
    ],
)
def test_partition_values_and_tags_keep_entries_order_and_nulls(values: list[Any]) -> None:
    for name in ("partitionValues", "tags"):
        commits = [commit(*(add(f"f{i}", **{name: v}) for i, v in enumerate(values)))]
        assert_same(commits)
        commits = [commit(*(remove(f"f{i}", **{name: v}) for i, v in enumerate(values)))]
        assert_same(commits)


def test_date_partition_values_stay_strings_on_the_columnar_path() -> None:
    days = ["2024-01-31", "2024-02-01 00:00:00", "2024-02-02T10:00:00.000Z"]
    commits = [commit(*(add(f"f{i}", partitionValues={"d": d}) for i, d in enumerate(days)))]
    assert_same(commits, fast=True)
    files = replay(columnar(commits)).files
    assert [dict(v)["d"] for v in files.column("partitionValues").to_pylist()] == days


def test_escaped_keys_and_non_ascii_round_trip() -> None:
    body = b'{"add":{"path":"a\\u00e9","partitionValues":{"\\u0070":"\\/x","q":null},"size":1}}'
    assert_same([body + b"\n" + line(add("b", partitionValues={"q": None, "p": "y"}))])


@pytest.mark.parametrize(
    "text",
    [
        b'{"add":{"path":"a","size":1.0}}',
        b'{"add":{"path":"a","size":"1"}}',
        b'{"add":{"path":"a","dataChange":1}}',
        b'{"add":{"path":"a","stats":{"numRecords":1}}}',
        b'{"add":{"path":"a","partitionValues":{"p":1}}}',
        b'{"add":{"path":"a","partitionValues":"p"}}',
        b'{"add":{"path":"a","partitionValues":{"p":"1","p":"2"}}}',
        b'{"add":{"path":"a"},"add":{"path":"b"}}',
        b'{"add":{"path":"a"},"add":5}',
        b'{"add":{"path":"a"},"commitInfo":{"x":1}}',
        b'{"add":{"path":"a"}} {"add":{"path":"b"}}',
        b'{"add":{"path":"a"}} trailing',
        b'{"add":{"path":"a"',
        b'{"add":{"size":1}}',
        b'{"add":{"path":null}}',
        b'{"add":{"path":"a","deletionVector":{}}}',
        b'{"add":{"path":"a","deletionVector":{"storageType":null,"pathOrInlineDv":"x"}}}',
        b'{"add":{"path":"a","deletionVector":{"storageType":"u","pathOrInlineDv":"x","z":[1]}}}',
        b'{"add":{"path":"a","zzz":{"nested":[1,2]},"yyy":null}}',
        b'{"add":{"path":"a\xff"}}',
        b'{"add":{"path":"a\xed\xa0\x80"}}',
        b'{"add":{"path":"\\ud800"}}',
        b'{"add":{"path":"a\tb"}}',
        b'{"add":{"path":"a","size":NaN}}',
        b'{"add":{"path":"a","size":99999999999999999999}}',
        b'{"add": {"path": "a"}}',
        b' {"add":{"path":"a"}}',
        b'{"add":{"path":"a"}}\r\n{"remove":{"path":"a"}}\r',
        b'{"add":{"path":"a"}}\n\n  \n{"remove":{"path":"b"}}',
        b'{"remove":{"path":"a","extendedFileMetadata":true,"partitionValues":{},"tags":null}}',
        b'{"commitInfo":{"a":1}}\n{"commitInfo":{"a":2}}',
        b'{"metaData":{"id":"x"}}\n{"metaData":{"id":"y"}}',
        b'{"add":{"path":"a"}}\n[1]',
        b'{"add":{"path":"a"}}\n{"txn":{"appId":"x"}}',
        b'{"add":null}\n{"remove":null}',
        b'{"unknownAction":{"x":1}}\n{"add":{"path":"a"}}',
    ],
)
def test_unusual_lines_give_the_same_state_or_error(text: bytes) -> None:
    assert_same([text])
    assert_same([line(add("z")), text, line(add("y"))])
    assert_same([line(add("z")) + b"\n" + text + b"\n" + line(add("y"))])


def test_corrupt_line_reports_the_first_error_in_file_order() -> None:
    first = commit(add("a"), add("b"))
    bad_add = b'{"add":{"path":"x","size":"big"}}\n{"add":{"size":1}}\n'
    bad_json = b'{"commitInfo":{"x":}\n'
    for commits in ([first, bad_add, bad_json], [first, bad_json, bad_add]):
        assert_same(commits)
        with pytest.raises(CorruptLogError):
            replay(columnar(commits))


PATHS = ["a", "b", "file:/b", "file:///abs/c", "/abs/c", "d e"]
PART_KEYS = ["p", "q", "r/s"]
VALUES = st.one_of(
    st.none(),
    st.sampled_from(["", "x", "y", "p", "\u00e9", 'q"t', "a\\b", "2024-01-31", "1970-01-01 00:00"]),
)


@st.composite
def file_action(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["add", "remove"]))
    body: dict[str, Any] = {"path": draw(st.sampled_from(PATHS))}
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(PART_KEYS), unique=True, max_size=3))
        body["partitionValues"] = {k: draw(VALUES) for k in keys}
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(["INSERTION_TIME", "MIN", "p"]), unique=True))
        body["tags"] = {k: draw(VALUES) for k in keys}
    if draw(st.booleans()):
        body["deletionVector"] = draw(st.sampled_from([None, DV, {**DV, "offset": 9}]))
    if draw(st.booleans()):
        body["size"] = draw(st.integers(0, 2**40))
    if draw(st.booleans()):
        body["stats"] = draw(st.sampled_from([STATS, None, "", '{"x":"\\u00e9"}']))
    if draw(st.booleans()):
        body["dataChange"] = draw(st.booleans())
    if kind == "remove" and draw(st.booleans()):
        body["deletionTimestamp"] = draw(st.integers(0, 2**40))
    if draw(st.integers(0, 9)) == 0:
        body["unknownField"] = draw(st.sampled_from([1, "x", None, {"a": [1]}]))
    return {kind: body}


OTHER_LINES = st.sampled_from(
    [
        {"commitInfo": {"operation": "WRITE", "n": 1}},
        {"txn": {"appId": "app", "version": 1}},
        {"txn": {"appId": "app", "version": 2, "lastUpdated": 3}},
        {"domainMetadata": {"domain": "d", "configuration": "{}", "removed": False}},
        {"domainMetadata": {"domain": "d", "configuration": "", "removed": True}},
        {"cdc": {"path": "c", "partitionValues": {}, "size": 1, "dataChange": False}},
        {"someFutureAction": {"x": [1, {"y": None}]}},
    ]
)


@st.composite
def commit_text(draw: st.DrawFn) -> bytes:
    objs = draw(st.lists(st.one_of(file_action(), OTHER_LINES), max_size=8))
    pretty = draw(st.integers(0, 9)) == 0
    lines = [line(o, pretty and draw(st.booleans())) for o in objs]
    if draw(st.integers(0, 9)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), b"")
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))


@settings(max_examples=100, deadline=None)
@given(st.lists(commit_text(), min_size=1, max_size=6))
def test_columnar_parse_matches_parse_actions(commits: list[bytes]) -> None:
    assert_same(commits)


def test_snapshot_load_does_not_import_pandas(tmp_path: Path) -> None:
    """Building Arrow data from Python objects makes pyarrow import pandas, which alone
    costs more than loading a large snapshot: the load path must not do it."""
    log = tmp_path / "_delta_log"
    log.mkdir()
    state = empty_state()
    for v in range(4):
        data = commit(
            {"commitInfo": {"timestamp": v}},
            *([PROTOCOL, METADATA] if v == 0 else []),
            add(f"f{v}"),
            *([remove(f"f{v - 1}")] if v % 2 else []),
        )
        (log / f"{v:020d}.json").write_bytes(data)
        state = state.apply(v, [parse_actions(data, str(v))])
        if v == 2:
            write_checkpoint(LocalLogStore(), str(log), state)
    code = (
        "import sys\n"
        "from delta_pyspark.core.snapshot.delta_log import DeltaLog\n"
        f"s = DeltaLog({str(tmp_path)!r}).snapshot()\n"
        "assert s.version == 3 and s.num_files == 2, s\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert DeltaLog(str(tmp_path)).snapshot().files.column("path").to_pylist() == ["f1", "f3"]
