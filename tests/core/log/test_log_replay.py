"""Action reconciliation (PROTOCOL.md "Action Reconciliation") against a plain-dict model.

Random, protocol-valid commits (adds and removes keyed by path + deletion-vector id,
txn, domainMetadata, metaData/protocol changes, unknown actions and fields) are written
as real JSON commit files; every snapshot the log can produce (each version, after a
checkpoint written mid-way, incrementally updated) must equal the model.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_paths import TESTDATA
from delta_pyspark.core.log.checkpoint import write_checkpoint
from delta_pyspark.core.log.commit_actions import parse_actions
from delta_pyspark.core.log.logical_files import dv_unique_id
from delta_pyspark.core.protocol.actions import DomainMetadata, Metadata, Protocol, SetTransaction
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.exceptions import CorruptLogError

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
PATHS = ["a.parquet", "dir/b.parquet", "c%20d.parquet", "/abs/e.parquet"]
DVS: list[dict[str, Any] | None] = [
    None,
    {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    },
    {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 90,
        "sizeInBytes": 40,
        "cardinality": 3,
    },
    {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": 6,
    },
    {
        "storageType": "p",
        "pathOrInlineDv": "s3://mytable/deletion_vector_d2c639aa.bin",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    },
]
Key = tuple[str, str]


def spec_key(path: str, dv: dict[str, Any] | None) -> Key:
    """(path, deletionVector.uniqueId) computed from the spec's definition, independently."""
    if not dv:
        return (path, "")
    uid = dv["storageType"] + dv["pathOrInlineDv"]
    if dv.get("offset") is not None:
        uid += f"@{dv['offset']}"
    return (path, uid)


@dataclass
class Model:
    """The spec's reconciliation rules over dicts: the newest action per key wins."""

    protocol: tuple[int, int] = (1, 2)
    configuration: dict[str, str] = field(default_factory=dict)
    files: dict[Key, dict[str, Any]] = field(default_factory=dict)
    tombstones: dict[Key, dict[str, Any]] = field(default_factory=dict)
    txns: dict[str, int] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)

    def apply(self, actions: list[tuple[str, dict[str, Any]]]) -> None:
        for kind, body in actions:
            if kind == "remove":
                k = spec_key(body["path"], body.get("deletionVector"))
                self.files.pop(k, None)
                self.tombstones[k] = body
            elif kind == "add":
                k = spec_key(body["path"], body.get("deletionVector"))
                self.tombstones.pop(k, None)
                self.files[k] = body
            elif kind == "txn":
                self.txns[body["appId"]] = body["version"]
            elif kind == "domainMetadata":
                if body["removed"]:
                    self.domains.pop(body["domain"], None)
                else:
                    self.domains[body["domain"]] = body["configuration"]
            elif kind == "metaData":
                self.configuration = dict(body["configuration"])
            elif kind == "protocol":
                self.protocol = (body["minReaderVersion"], body["minWriterVersion"])

    def view(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "configuration": self.configuration,
            "files": {
                k: (a["size"], a["stats"], a["modificationTime"]) for k, a in self.files.items()
            },
            "tombstones": {k: r["deletionTimestamp"] for k, r in self.tombstones.items()},
            "txns": self.txns,
            "domains": self.domains,
        }


def snapshot_view(snapshot: Snapshot) -> dict[str, Any]:
    files = snapshot.files.to_pylist()
    tombstones = snapshot.tombstones.to_pylist()
    view = {
        "protocol": (snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version),
        "configuration": dict(snapshot.configuration),
        "files": {
            spec_key(a["path"], a["deletionVector"]): (a["size"], a["stats"], a["modificationTime"])
            for a in files
        },
        "tombstones": {
            spec_key(r["path"], r["deletionVector"]): r["deletionTimestamp"] for r in tombstones
        },
        "txns": {app: t.version for app, t in snapshot.set_transactions.items()},
        "domains": {name: d.configuration for name, d in snapshot.domain_metadata.items()},
    }
    # Exactly one row per logical file: no duplicates hiding behind the dicts.
    assert len(view["files"]) == len(files)
    assert len(view["tombstones"]) == len(tombstones)
    return view


def metadata_action(configuration: dict[str, str]) -> dict[str, Any]:
    return {
        "id": "00000000-0000-0000-0000-000000000001",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": [],
        "configuration": configuration,
        "createdTime": 1,
    }


def write_commit(
    root: Path,
    version: int,
    actions: list[tuple[str, dict[str, Any]]],
    extra_lines: Sequence[str] = (),
) -> None:
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"commitInfo": {"timestamp": 1000 + version, "operation": "TEST"}})]
    lines += [json.dumps({kind: body}) for kind, body in actions]
    lines += list(extra_lines)
    (log_dir / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


@st.composite
def commit_actions(  # noqa: C901 (a branch per action kind, each with its protocol rule)
    draw: st.DrawFn, model: Model
) -> tuple[list[tuple[str, dict]], list[str]]:
    """One protocol-valid commit: per path at most one add and one remove, never the same
    (path, DV) added and removed, no add of a path live with another DV (unless this commit
    removes that one), at most one metaData/protocol/txn-per-app/domain."""
    actions: list[tuple[str, dict[str, Any]]] = []
    added_paths: set[str] = set()
    removed_paths: set[str] = set()
    added: set[Key] = set()
    removed: set[Key] = set()
    seen: set[str] = set()
    live = sorted(model.files)
    now = int(time.time() * 1000)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(
            st.sampled_from(
                ["add", "add", "remove_live", "remove_any", "txn", "domain", "metaData", "protocol"]
            )
        )
        if op == "add":
            path, dv = draw(st.sampled_from(PATHS)), draw(st.sampled_from(DVS))
            k = spec_key(path, dv)
            if path in added_paths or k in removed:
                continue
            if any(key[0] == path and key != k and key not in removed for key in live):
                continue
            body: dict[str, Any] = {
                "path": path,
                "partitionValues": {},
                "size": draw(st.integers(1, 10**6)),
                "modificationTime": draw(st.integers(0, 10**12)),
                "dataChange": True,
                "stats": json.dumps({"numRecords": draw(st.integers(0, 100))}),
            }
            if dv is not None:
                body["deletionVector"] = dv
            if draw(st.booleans()):
                body["someFutureField"] = {"nested": [1, 2]}  # unknown fields are ignored
            added_paths.add(path)
            added.add(k)
            actions.append(("add", body))
        elif op in ("remove_live", "remove_any"):
            if op == "remove_live" and live:
                path, dv_id = draw(st.sampled_from(live))
                dv = next(d for d in DVS if spec_key(path, d)[1] == dv_id)
            else:
                path, dv = draw(st.sampled_from(PATHS)), draw(st.sampled_from(DVS))
            k = spec_key(path, dv)
            if path in removed_paths or k in added:
                continue
            body = {
                "path": path,
                "deletionTimestamp": now - draw(st.integers(0, 10**6)),
                "dataChange": True,
                "size": 1,
            }
            if dv is not None:
                body["deletionVector"] = dv
            removed_paths.add(path)
            removed.add(k)
            actions.append(("remove", body))
        elif op == "txn":
            app = draw(st.sampled_from(["app-1", "app-2"]))
            if f"txn:{app}" not in seen:
                seen.add(f"txn:{app}")
                actions.append(("txn", {"appId": app, "version": draw(st.integers(0, 50))}))
        elif op == "domain":
            name = draw(st.sampled_from(["user.a", "user.b"]))
            if f"domain:{name}" not in seen:
                seen.add(f"domain:{name}")
                actions.append(
                    (
                        "domainMetadata",
                        {
                            "domain": name,
                            "configuration": draw(st.text(max_size=5)),
                            "removed": draw(st.booleans()),
                        },
                    )
                )
        elif op not in seen:
            seen.add(op)
            if op == "metaData":
                conf = {"user.n": str(draw(st.integers(0, 9)))}
                actions.append(("metaData", metadata_action(conf)))
            else:
                actions.append(
                    (
                        "protocol",
                        {"minReaderVersion": 1, "minWriterVersion": draw(st.integers(2, 4))},
                    )
                )
    unknown = [json.dumps({"futureAction": {"x": 1}})] if draw(st.booleans()) else []
    return actions, unknown


def _assert_all_versions(root: Path, expected: list[dict[str, Any]]) -> None:
    log = DeltaLog(str(root))
    for version, view in enumerate(expected):
        snapshot = log.snapshot(version)
        assert snapshot.version == version
        assert snapshot_view(snapshot) == view, f"version {version}"
    assert snapshot_view(log.snapshot()) == expected[-1]


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_replay_matches_reconciliation_model(data: st.DataObject) -> None:
    root = Path(tempfile.mkdtemp(prefix="replay-"))
    try:
        model = Model()
        write_commit(
            root,
            0,
            [
                ("protocol", {"minReaderVersion": 1, "minWriterVersion": 2}),
                ("metaData", metadata_action({})),
            ],
        )
        expected = [copy.deepcopy(model.view())]
        for version in range(1, data.draw(st.integers(1, 8)) + 1):
            actions, unknown = data.draw(commit_actions(model))
            write_commit(root, version, actions, unknown)
            model.apply(actions)
            expected.append(copy.deepcopy(model.view()))
        latest = len(expected) - 1
        _assert_all_versions(root, expected)

        # Incremental refresh from any older snapshot reaches the latest state.
        log = DeltaLog(str(root))
        start = data.draw(st.integers(0, latest))
        updated = log.update(log.snapshot(start))
        assert updated.version == latest
        assert snapshot_view(updated) == expected[-1]

        # A checkpoint written mid-way holds the state of its version and is used.
        cp = data.draw(st.integers(0, latest))
        write_checkpoint(LocalLogStore(), log.log_dir, log.snapshot(cp).state)
        assert DeltaLog(str(root)).snapshot().segment.checkpoint_version == cp
        _assert_all_versions(root, expected)
        updated = DeltaLog(str(root)).update(DeltaLog(str(root)).snapshot(cp))
        assert snapshot_view(updated) == expected[-1]
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------ action round trips

names = st.text(min_size=1, max_size=8)
features = st.none() | st.frozensets(
    st.sampled_from(
        ["columnMapping", "deletionVectors", "v2Checkpoint", "domainMetadata", "futureFeature"]
    )
)


@given(st.integers(1, 3), st.integers(1, 7), features, features)
def test_protocol_round_trip(
    reader: int, writer: int, rf: frozenset | None, wf: frozenset | None
) -> None:
    p = Protocol(reader, writer, rf, wf)
    assert Protocol.from_dict(json.loads(json.dumps(p.to_dict()))) == p


@given(
    names,
    st.lists(names, max_size=3, unique=True),
    st.dictionaries(names, names, max_size=3),
    st.none() | names,
    st.none() | names,
    st.none() | st.integers(0, 2**62),
)
def test_metadata_round_trip(
    schema: str,
    parts: list[str],
    conf: dict[str, str],
    name: str | None,
    desc: str | None,
    created: int | None,
) -> None:
    m = Metadata("id-1", schema, tuple(parts), conf, name, desc, "parquet", {"k": "v"}, created)
    assert Metadata.from_dict(json.loads(json.dumps(m.to_dict()))) == m


@given(names, st.integers(-(2**63), 2**63 - 1), st.none() | st.integers(0, 2**62))
def test_set_transaction_round_trip(app: str, version: int, last: int | None) -> None:
    t = SetTransaction(app, version, last)
    assert SetTransaction.from_dict(json.loads(json.dumps(t.to_dict()))) == t


@given(names, st.text(max_size=20), st.booleans())
def test_domain_metadata_round_trip(domain: str, conf: str, removed: bool) -> None:
    d = DomainMetadata(domain, conf, removed)
    assert DomainMetadata.from_dict(json.loads(json.dumps(d.to_dict()))) == d


def test_unknown_fields_and_actions_are_ignored() -> None:
    data = b"\n".join(
        [
            b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2,"futureField":7}}',
            b'{"metaData":{"id":"x","schemaString":"{}","partitionColumns":[],"configuration":{},'
            b'"format":{"provider":"parquet","options":{}},"newThing":{"a":[1]}}}',
            b'{"brandNewAction":{"anything":[1,2,3]}}',
            b'{"add":{"path":"f","partitionValues":{},"size":1,"modificationTime":1,'
            b'"dataChange":true,"unknownField":"x"}}',
            b"",
            b'{"txn":{"appId":"a","version":3,"extra":true}}',
        ]
    )
    actions = parse_actions(data, "test")
    assert actions.protocol == Protocol(1, 2)
    assert actions.metadata is not None and actions.metadata.id == "x"
    assert [a["path"] for a in actions.adds] == ["f"]
    assert actions.txns == [SetTransaction("a", 3)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"add":{"path":"f"', r"test:2: not valid JSON"),
        (b"[1, 2]", r"test:2: an action must be a JSON object"),
        (b'{"add":{"size":1}}', r"test:2: add action without a path"),
        (b'{"remove":"f"}', r"test:2: action 'remove' must be an object"),
        (b'{"txn":{"version":1}}', r"test:2: .*txn action is missing required field 'appId'"),
        (b'{"protocol":{"minWriterVersion":2}}', r"minReaderVersion"),
        (b'{"metaData":{"id":"y"}}', r"more than one metaData action"),
    ],
)
def test_malformed_actions_are_corrupt_log_errors(line: bytes, message: str) -> None:
    first = b'{"metaData":{"id":"x","schemaString":"{}"}}'
    with pytest.raises(CorruptLogError, match=message):
        parse_actions(first + b"\n" + line, "test")


def test_corrupt_commit_file_names_the_file(tmp_path: Path) -> None:
    write_commit(
        tmp_path,
        0,
        [
            ("protocol", {"minReaderVersion": 1, "minWriterVersion": 2}),
            ("metaData", metadata_action({})),
        ],
    )
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text('{"add": {"path": "x",\n')
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.json:1: not valid JSON"):
        DeltaLog(str(tmp_path)).snapshot()
    assert DeltaLog(str(tmp_path)).snapshot(0).version == 0


# ------------------------------------------------------------------ keys


def test_dv_unique_id_follows_the_spec() -> None:
    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4}
    assert dv_unique_id(dv) == "uab^-aqEH.-t@S}K{vb[*k^@4"
    assert dv_unique_id({"storageType": "i", "pathOrInlineDv": "wi5b"}) == "iwi5b"
    assert dv_unique_id(None) == ""


@pytest.mark.parametrize("removed", ["file:///abs/p.parquet", "file:/abs/p.parquet"])
def test_file_scheme_and_plain_absolute_path_are_one_file(tmp_path: Path, removed: str) -> None:
    add = {
        "path": "/abs/p.parquet",
        "partitionValues": {},
        "size": 1,
        "modificationTime": 1,
        "dataChange": True,
    }
    write_commit(
        tmp_path,
        0,
        [
            ("protocol", {"minReaderVersion": 1, "minWriterVersion": 2}),
            ("metaData", metadata_action({})),
            ("add", add),
        ],
    )
    write_commit(
        tmp_path, 1, [("remove", {"path": removed, "deletionTimestamp": 5, "dataChange": True})]
    )
    log = DeltaLog(str(tmp_path))
    assert log.snapshot(0).num_files == 1
    assert log.snapshot().num_files == 0


def test_same_path_with_new_dv_replaces_the_old_logical_file(tmp_path: Path) -> None:
    base = {
        "path": "f.parquet",
        "partitionValues": {},
        "size": 10,
        "modificationTime": 1,
        "dataChange": True,
    }
    with_dv = {**base, "deletionVector": DVS[1]}
    write_commit(
        tmp_path,
        0,
        [
            ("protocol", {"minReaderVersion": 1, "minWriterVersion": 2}),
            ("metaData", metadata_action({})),
            ("add", base),
        ],
    )
    write_commit(tmp_path, 1, [("remove", {**base, "deletionTimestamp": 5}), ("add", with_dv)])
    snapshot = DeltaLog(str(tmp_path)).snapshot()
    (row,) = snapshot.files.to_pylist()
    assert row["deletionVector"]["offset"] == 4
    (tomb,) = snapshot.tombstones.to_pylist()
    assert tomb["deletionVector"] is None


# ------------------------------------------------------------------ log compaction


def test_spec_conformant_compaction_gives_the_same_state(tmp_path: Path) -> None:
    """The PROTOCOL.md example: 4.6.compacted.json stands for commits 4..6."""
    add = {"partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}
    rm = {"deletionTimestamp": 5, "dataChange": True}
    write_commit(
        tmp_path,
        0,
        [
            ("protocol", {"minReaderVersion": 1, "minWriterVersion": 2}),
            ("metaData", metadata_action({})),
            ("add", {"path": "f1", **add}),
        ],
    )
    for v in (1, 2, 3):
        write_commit(tmp_path, v, [])
    write_commit(tmp_path, 4, [("add", {"path": "f2", **add}), ("remove", {"path": "f1", **rm})])
    write_commit(
        tmp_path,
        5,
        [
            ("add", {"path": "f3", **add}),
            ("add", {"path": "f4", **add}),
            ("txn", {"appId": "3ae4", "version": 4389}),
        ],
    )
    write_commit(
        tmp_path, 6, [("remove", {"path": "f3", **rm}), ("txn", {"appId": "3ae4", "version": 4390})]
    )
    plain = snapshot_view(DeltaLog(str(tmp_path)).snapshot())
    compacted = [
        ("add", {"path": "f2", **add}),
        ("add", {"path": "f4", **add}),
        ("remove", {"path": "f1", **rm}),
        ("remove", {"path": "f3", **rm}),
        ("txn", {"appId": "3ae4", "version": 4390}),
    ]
    name = f"{4:020d}.{6:020d}.compacted.json"
    (tmp_path / "_delta_log" / name).write_text(
        "\n".join(json.dumps({k: b}) for k, b in compacted) + "\n"
    )
    snapshot = DeltaLog(str(tmp_path)).snapshot()
    assert (4, 6) in [(first, last) for first, last, _ in snapshot.segment.deltas]
    assert snapshot_view(snapshot) == plain
    assert set(snapshot.files.column("path").to_pylist()) == {"f2", "f4"}
    assert snapshot.set_transactions["3ae4"].version == 4390
    assert snapshot.commit_info is not None and snapshot.commit_info["timestamp"] == 1006


def test_compaction_files_written_by_databricks_give_the_commits_state(tmp_path: Path) -> None:
    """kernel/compacted-log-files-table: its compaction files (written newest commit first,
    several actions per file) must not change any version's state. delta-rs and
    delta-kernel-rs both see 2 live files at version 25."""
    table = TESTDATA / "kernel" / "compacted-log-files-table"
    commits_only = tmp_path / "commits-only"
    (commits_only / "_delta_log").mkdir(parents=True)
    for f in (table / "_delta_log").glob("*.json"):
        if not f.name.endswith(".compacted.json"):
            shutil.copyfile(f, commits_only / "_delta_log" / f.name)
    with_compactions, reference = DeltaLog(str(table)), DeltaLog(str(commits_only))
    assert reference.snapshot(25).num_files == 2
    used = 0
    for version in range(26):
        snapshot = with_compactions.snapshot(version)
        used += any(first != last for first, last, _ in snapshot.segment.deltas)
        assert snapshot_view(snapshot) == snapshot_view(reference.snapshot(version)), version
    assert used > 0  # the compaction files were read
