"""Checkpoints: written state reads back identically (here and in delta-rs), readers fall
back when hints are missing or wrong, writers checkpoint on schedule, and cleanup keeps
every retained version loadable."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyspark.core.log.checkpoint import checkpoint_table, write_checkpoint
from delta_pyspark.core.log.metadata_cleanup import cleanup_expired_logs
from delta_pyspark.core.log.segment import CheckpointKind
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.core.transaction.commit import checkpoint_now
from delta_pyspark.exceptions import VersionNotFoundError

DAY_MS = 86_400_000
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors"],
    "writerFeatures": ["deletionVectors", "domainMetadata"],
}
CHECKPOINT_REMOVE_FIELDS = [
    "path",
    "deletionTimestamp",
    "dataChange",
    "extendedFileMetadata",
    "partitionValues",
    "size",
    "deletionVector",
]


def _now() -> int:
    return int(time.time() * 1000)


def _metadata(configuration: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "id": "5fba94ed-9794-4965-ba6e-6ee3c0d22af9",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": ["part"],
        "configuration": {"delta.enableDeletionVectors": "true", **(configuration or {})},
        "createdTime": 1_700_000_000_000,
    }


def _add(i: int, dv: dict[str, Any] | None = None) -> dict[str, Any]:
    part = "a" if i % 2 else "b b"
    add: dict[str, Any] = {
        "path": f"part={part.replace(' ', '%20')}/f{i}.parquet",
        "partitionValues": {"part": part},
        "size": 100 + i,
        "modificationTime": 1_700_000_000_000 + i,
        "dataChange": True,
        "stats": json.dumps(
            {
                "numRecords": 10,
                "minValues": {"id": i},
                "maxValues": {"id": i + 9},
                "nullCount": {"id": 0},
            }
        ),
        "tags": {"INSERTION_TIME": str(1_700_000_000 + i)},
    }
    if dv is not None:
        add["deletionVector"] = dv
    return add


def _remove(add: dict[str, Any], deletion_timestamp: int) -> dict[str, Any]:
    keep = ("path", "partitionValues", "size", "deletionVector")
    return {
        **{k: add[k] for k in keep if k in add},
        "deletionTimestamp": deletion_timestamp,
        "dataChange": True,
        "extendedFileMetadata": True,
    }


def _write(root: Path, version: int, actions: list[tuple[str, dict[str, Any]]]) -> None:
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True, exist_ok=True)
    lines = [{"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE"}}]
    lines += [{kind: body} for kind, body in actions]
    (log_dir / f"{version:020d}.json").write_text("\n".join(map(json.dumps, lines)) + "\n")


def build_table(
    root: Path, versions: int = 12, configuration: dict[str, str] | None = None
) -> None:
    """Commits 0..versions with adds, removes, DV updates, txns and domains."""
    now = _now()
    _write(
        root,
        0,
        [
            ("protocol", PROTOCOL),
            ("metaData", _metadata(configuration)),
            *[("add", _add(i)) for i in range(4)],
            ("txn", {"appId": "app-1", "version": 0, "lastUpdated": now}),
            ("domainMetadata", {"domain": "user.a", "configuration": "{}", "removed": False}),
        ],
    )
    for v in range(1, versions + 1):
        i = 4 + 2 * v
        actions: list[tuple[str, dict[str, Any]]] = [("add", _add(i)), ("add", _add(i + 1))]
        if v % 3 == 0:  # a deletion vector replaces the logical file (same path, new DV)
            dv = {
                "storageType": "i",
                "pathOrInlineDv": f"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D7{v}",
                "sizeInBytes": 40,
                "cardinality": 1,
            }
            actions += [("remove", _remove(_add(i - 2), now)), ("add", _add(i - 2, dv))]
        elif v % 3 == 1:
            actions.append(("remove", _remove(_add(i - 3), now - v)))
        actions.append(("txn", {"appId": f"app-{v % 2}", "version": v, "lastUpdated": now}))
        if v % 4 == 0:
            actions.append(
                (
                    "domainMetadata",
                    {
                        "domain": f"user.{v}",
                        "configuration": json.dumps({"v": v}),
                        "removed": False,
                    },
                )
            )
        if v == 5:
            actions.append(
                ("domainMetadata", {"domain": "user.a", "configuration": "{}", "removed": True})
            )
        _write(root, v, actions)


def _rows(table: pa.Table, columns: list[str] | None = None) -> set[str]:
    if columns is not None:
        table = table.select(columns)

    def norm(value: Any) -> Any:
        if isinstance(value, list) and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return dict(value)
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        return value

    return {json.dumps(norm(r), sort_keys=True) for r in table.to_pylist()}


def assert_same_state(a: Snapshot, b: Snapshot) -> None:
    assert a.version == b.version
    assert a.protocol == b.protocol
    assert a.metadata == b.metadata
    assert _rows(a.files) == _rows(b.files)
    assert a.num_files == b.num_files
    assert _rows(a.tombstones, CHECKPOINT_REMOVE_FIELDS) == _rows(
        b.tombstones, CHECKPOINT_REMOVE_FIELDS
    )
    assert dict(a.set_transactions) == dict(b.set_transactions)
    assert dict(a.domain_metadata) == dict(b.domain_metadata)


def _deltalake_paths(root: Path) -> tuple[int, list[str]]:
    import deltalake

    dt = deltalake.DeltaTable(str(root))
    return dt.version(), sorted(pa.table(dt.get_add_actions()).column("path").to_pylist())


# ------------------------------------------------------------------ round trip


def test_checkpoint_reads_back_the_replayed_state(tmp_path: Path) -> None:
    build_table(tmp_path)
    log = DeltaLog(str(tmp_path))
    replayed = log.snapshot()
    assert replayed.segment.checkpoint is None
    assert replayed.num_files > 0 and replayed.tombstones.num_rows > 0
    assert len(replayed.domain_metadata) > 1 and len(replayed.set_transactions) == 2

    hint = write_checkpoint(LocalLogStore(), log.log_dir, replayed.state)
    assert hint["version"] == 12 and hint["numOfAddFiles"] == replayed.num_files
    last = json.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == 12 and last["size"] == hint["size"]

    loaded = DeltaLog(str(tmp_path)).snapshot()
    assert loaded.segment.checkpoint is not None
    assert loaded.segment.checkpoint.kind is CheckpointKind.CLASSIC
    assert loaded.segment.deltas == ()
    assert_same_state(loaded, replayed)


def test_deltalake_reads_our_checkpoint(tmp_path: Path) -> None:
    build_table(tmp_path)
    log = DeltaLog(str(tmp_path))
    replayed = log.snapshot(10)
    checkpoint_now(log.store, replayed)
    for v in range(10):  # only the checkpoint can now reconstruct version 10
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()

    ours = DeltaLog(str(tmp_path)).snapshot()
    version, paths = _deltalake_paths(tmp_path)
    assert version == ours.version == 12
    assert paths == sorted(ours.files.column("path").to_pylist())
    assert_same_state(DeltaLog(str(tmp_path)).snapshot(10), replayed)

    import deltalake

    at_checkpoint = deltalake.DeltaTable(str(tmp_path), version=10)
    assert sorted(pa.table(at_checkpoint.get_add_actions()).column("path").to_pylist()) == sorted(
        replayed.files.column("path").to_pylist()
    )
    assert at_checkpoint.transaction_version("app-0") == replayed.app_transaction_version("app-0")
    assert at_checkpoint.metadata().partition_columns == ["part"]
    with pytest.raises(VersionNotFoundError, match="cleaned up"):
        DeltaLog(str(tmp_path)).snapshot(9)


def test_v2_checkpoint_round_trip(tmp_path: Path) -> None:
    build_table(tmp_path)
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors", "v2Checkpoint"],
        "writerFeatures": ["deletionVectors", "domainMetadata", "v2Checkpoint"],
    }
    _write(tmp_path, 13, [("protocol", protocol)])
    replayed = DeltaLog(str(tmp_path)).snapshot()
    checkpoint_now(LocalLogStore(), replayed)
    names = [p.name for p in (tmp_path / "_delta_log").glob(f"{13:020d}.checkpoint.*.parquet")]
    assert len(names) == 1  # UUID-named
    loaded = DeltaLog(str(tmp_path)).snapshot()
    assert loaded.segment.checkpoint is not None
    assert loaded.segment.checkpoint.kind is CheckpointKind.UUID
    assert_same_state(loaded, replayed)
    assert _deltalake_paths(tmp_path) == (13, sorted(loaded.files.column("path").to_pylist()))


# ------------------------------------------------------------------ hints and parts


def _last_checkpoint_cases() -> Iterator[tuple[str, bytes | None]]:
    yield "missing", None
    yield "stale", json.dumps({"version": 5, "size": 1}).encode()
    yield "beyond-latest", json.dumps({"version": 15, "size": 1}).encode()
    yield "no-checkpoint-there", json.dumps({"version": 11, "size": 1}).encode()
    yield "garbage", b"\x00\xffnot json"
    yield "truncated", b'{"version": '
    yield "wrong-type", b'{"version": "ten"}'


@pytest.mark.parametrize(("case", "content"), list(_last_checkpoint_cases()))
def test_unusable_last_checkpoint_falls_back(
    tmp_path: Path, case: str, content: bytes | None
) -> None:
    build_table(tmp_path)
    log = DeltaLog(str(tmp_path))
    write_checkpoint(log.store, log.log_dir, log.snapshot(5).state)
    write_checkpoint(log.store, log.log_dir, log.snapshot(10).state)
    hint = tmp_path / "_delta_log" / "_last_checkpoint"
    if content is None:
        hint.unlink()
    else:
        hint.write_bytes(content)
    loaded = DeltaLog(str(tmp_path)).snapshot()
    assert loaded.segment.checkpoint_version == 10
    hint.unlink(missing_ok=True)
    for v in range(11):  # from commits alone, for comparison
        (tmp_path / "_delta_log" / f"{v:020d}.checkpoint.parquet").unlink(missing_ok=True)
    assert_same_state(loaded, DeltaLog(str(tmp_path)).snapshot())


def _multipart_name(version: int, part: int, parts: int) -> str:
    return f"{version:020d}.checkpoint.{part:010d}.{parts:010d}.parquet"


def test_incomplete_multipart_checkpoint_is_ignored(tmp_path: Path) -> None:
    build_table(tmp_path)
    log = DeltaLog(str(tmp_path))
    write_checkpoint(log.store, log.log_dir, log.snapshot(5).state)
    replayed = log.snapshot()
    # Part 1 of 2 at version 10 (deliberately unreadable: it must never be opened).
    (tmp_path / "_delta_log" / _multipart_name(10, 1, 2)).write_bytes(b"torn write")
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(
        json.dumps({"version": 10, "parts": 2})
    )
    loaded = DeltaLog(str(tmp_path)).snapshot()
    assert loaded.segment.checkpoint_version == 5
    assert_same_state(loaded, replayed)


def test_complete_multipart_checkpoint_is_used(tmp_path: Path) -> None:
    build_table(tmp_path)
    replayed = DeltaLog(str(tmp_path)).snapshot(10)
    table = checkpoint_table(replayed.state)
    half = table.num_rows // 2
    for part, piece in enumerate((table.slice(0, half), table.slice(half)), 1):
        pq.write_table(piece, tmp_path / "_delta_log" / _multipart_name(10, part, 2))
    loaded = DeltaLog(str(tmp_path)).snapshot(10)
    assert loaded.segment.checkpoint is not None
    assert loaded.segment.checkpoint.kind is CheckpointKind.MULTIPART
    assert len(loaded.segment.checkpoint.files) == 2
    assert_same_state(loaded, replayed)
    assert _deltalake_paths(tmp_path)[1] == sorted(
        DeltaLog(str(tmp_path)).snapshot().files.column("path").to_pylist()
    )


# ------------------------------------------------------------------ tombstone expiry


@pytest.mark.parametrize(
    ("retention", "kept_days"),
    [(None, [0, 6]), ("interval 2 days", [0]), ("interval 30 days", [0, 6, 8])],
)
def test_tombstones_expire_from_checkpoints(
    tmp_path: Path, retention: str | None, kept_days: list[int]
) -> None:
    conf = {"delta.deletedFileRetentionDuration": retention} if retention else {}
    now = _now()
    adds = [_add(i) for i in range(3)]
    _write(
        tmp_path,
        0,
        [("protocol", PROTOCOL), ("metaData", _metadata(conf)), *[("add", a) for a in adds]],
    )
    ages = [0, 6, 8]  # days since each file was removed
    _write(
        tmp_path,
        1,
        [
            ("remove", _remove(a, now - age * DAY_MS - 1000))
            for a, age in zip(adds, ages, strict=True)
        ],
    )
    log = DeltaLog(str(tmp_path))
    replayed = log.snapshot()
    assert replayed.tombstones.num_rows == 3  # replay keeps them all
    write_checkpoint(log.store, log.log_dir, replayed.state)
    loaded = DeltaLog(str(tmp_path)).snapshot()
    kept = sorted(loaded.tombstones.column("path").to_pylist())
    assert kept == sorted(adds[ages.index(d)]["path"] for d in kept_days)
    assert loaded.num_files == 0


# ------------------------------------------------------------------ writers: schedule and cleanup


def _create(
    root: Path, configuration: dict[str, str] | None = None, protocol: Any = None
) -> DeltaLog:
    from delta_pyspark.core.transaction.table_definition import create_table

    log = DeltaLog(str(root))
    create_table(log, SCHEMA, ["part"], configuration, protocol=protocol)
    return log


def _append(log: DeltaLog, i: int) -> Snapshot:
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction

    txn = Transaction(log, log.snapshot())
    txn.add_files([_add(i)])
    return txn.commit("WRITE", {"mode": "Append"})


def _checkpoint_versions(root: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (root / "_delta_log").glob("*.checkpoint*.parquet"))


def test_checkpoint_every_ten_commits_by_default(tmp_path: Path) -> None:
    log = _create(tmp_path)
    for i in range(1, 25):
        _append(log, i)
    assert _checkpoint_versions(tmp_path) == [10, 20]
    assert json.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_text())["version"] == 20
    snapshot = DeltaLog(str(tmp_path)).snapshot()
    assert snapshot.segment.checkpoint_version == 20
    assert snapshot.version == 24 and snapshot.num_files == 24


def test_checkpoint_interval_property(tmp_path: Path) -> None:
    log = _create(tmp_path, {"delta.checkpointInterval": "3"})
    for i in range(1, 8):
        _append(log, i)
    assert _checkpoint_versions(tmp_path) == [3, 6]


def test_v2_checkpoint_feature_writes_uuid_checkpoints(tmp_path: Path) -> None:
    from delta_pyspark.core.protocol.actions import Protocol

    protocol = Protocol(3, 7, frozenset({"v2Checkpoint"}), frozenset({"v2Checkpoint"}))
    log = _create(tmp_path, {"delta.checkpointInterval": "2"}, protocol)
    for i in range(1, 3):
        _append(log, i)
    (name,) = [p.name for p in (tmp_path / "_delta_log").glob("*.checkpoint.*")]
    assert name.startswith(f"{2:020d}.checkpoint.") and name.count(".") == 3
    loaded = DeltaLog(str(tmp_path)).snapshot()
    assert loaded.segment.checkpoint is not None
    assert loaded.segment.checkpoint.kind is CheckpointKind.UUID
    assert loaded.num_files == 2


def _age(root: Path, max_version: int, days: int) -> None:
    """Backdate every log file of versions <= max_version by ``days``."""
    old = time.time() - days * 86_400
    for p in (root / "_delta_log").iterdir():
        if p.name[:20].isdigit() and int(p.name[:20]) <= max_version:
            os.utime(p, (old, old))


def _commit_versions(root: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json"))


def test_cleanup_deletes_only_expired_commits_before_a_checkpoint(tmp_path: Path) -> None:
    log = _create(tmp_path)
    for i in range(1, 26):
        _append(log, i)
    expected = {v: DeltaLog(str(tmp_path)).snapshot(v).num_files for v in range(26)}
    _age(tmp_path, 14, days=40)
    deleted = cleanup_expired_logs(log.store, log.log_dir, 30 * DAY_MS)
    assert sorted(Path(p).name for p in deleted) == sorted(
        [f"{v:020d}.json" for v in range(10)] + [f"{v:020d}.crc" for v in range(10)]
    )
    assert _commit_versions(tmp_path) == list(range(10, 26))
    assert _checkpoint_versions(tmp_path) == [10, 20]
    for v in range(10, 26):
        assert DeltaLog(str(tmp_path)).snapshot(v).num_files == expected[v]
    with pytest.raises(VersionNotFoundError, match="cleaned up"):
        DeltaLog(str(tmp_path)).snapshot(9)


def test_cleanup_keeps_everything_without_an_old_checkpoint(tmp_path: Path) -> None:
    log = _create(tmp_path)
    for i in range(1, 15):
        _append(log, i)
    assert cleanup_expired_logs(log.store, log.log_dir, 30 * DAY_MS) == []  # nothing is old
    _age(tmp_path, 9, days=40)  # old, but the first checkpoint (10) is not
    assert cleanup_expired_logs(log.store, log.log_dir, 30 * DAY_MS) == []
    assert _commit_versions(tmp_path) == list(range(15))


def test_commit_hook_cleans_up_after_checkpoint(tmp_path: Path) -> None:
    log = _create(tmp_path)
    for i in range(1, 25):
        _append(log, i)
    _age(tmp_path, 14, days=40)
    for i in range(25, 31):  # version 30 checkpoints, then cleans up
        _append(log, i)
    assert _commit_versions(tmp_path) == list(range(10, 31))
    assert DeltaLog(str(tmp_path)).snapshot(10).num_files == 10


def test_commit_hook_cleanup_can_be_disabled(tmp_path: Path) -> None:
    log = _create(tmp_path, {"delta.enableExpiredLogCleanup": "false"})
    for i in range(1, 20):
        _append(log, i)
    _age(tmp_path, 14, days=40)
    _append(log, 20)
    assert _commit_versions(tmp_path) == list(range(21))


# ------------------------------------------------------------------ keys across checkpoint/commits


URI_FORMS = ["file:/abs/p.parquet", "file:///abs/p.parquet", "/abs/p.parquet"]


@pytest.mark.parametrize(
    ("added", "removed"),
    [(a, r) for a in URI_FORMS for r in URI_FORMS],
    ids=[f"add={a}|remove={r}" for a in URI_FORMS for r in URI_FORMS],
)
def test_file_uri_forms_are_one_file_across_a_checkpoint(
    tmp_path: Path, added: str, removed: str
) -> None:
    """A checkpointed ``add`` and a later ``remove`` naming the same file with another
    spelling of its URI must cancel out, exactly as they do during plain replay."""
    add = {**_add(0), "path": added}
    _write(tmp_path, 0, [("protocol", PROTOCOL), ("metaData", _metadata()), ("add", add)])
    _write(tmp_path, 1, [("remove", {**_remove(add, _now()), "path": removed})])
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 0  # replay from commits
    log = DeltaLog(str(tmp_path))
    write_checkpoint(log.store, log.log_dir, log.snapshot(0).state)
    loaded = DeltaLog(str(tmp_path)).snapshot()
    assert loaded.segment.checkpoint_version == 0
    assert loaded.files.column("path").to_pylist() == []


def test_write_stats_as_struct_adds_parsed_columns(tmp_path: Path) -> None:
    """With delta.checkpoint.writeStatsAsStruct=true (and writeStatsAsJson=false) the
    checkpoint carries typed stats_parsed/partitionValues_parsed, and reading it back
    recovers the stats; delta-rs opens it too."""
    import glob

    import deltalake
    import pyarrow.parquet as pq

    from delta_pyspark.core.transaction.commit import checkpoint_now
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction
    from delta_pyspark.core.transaction.table_definition import create_table

    log = DeltaLog(str(tmp_path))
    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
        '{"name":"day","type":"date","nullable":true,"metadata":{}}]}'
    )
    conf = {
        "delta.checkpoint.writeStatsAsStruct": "true",
        "delta.checkpoint.writeStatsAsJson": "false",
    }
    create_table(log, schema, ["day"], conf)
    txn = Transaction(log, log.snapshot())
    stats = {
        "numRecords": 3,
        "minValues": {"id": 1},
        "maxValues": {"id": 9},
        "nullCount": {"id": 0},
    }
    txn.add_files(
        [
            {
                "path": "day=2024-01-01/a.parquet",
                "partitionValues": {"day": "2024-01-01"},
                "size": 1,
                "modificationTime": 1,
                "dataChange": True,
                "stats": json.dumps(stats),
            }
        ]
    )
    checkpoint_now(log.store, txn.commit("WRITE"))
    (path,) = glob.glob(str(tmp_path / "_delta_log" / "*.checkpoint.parquet"))
    adds = [r for r in pq.read_table(path).column("add").to_pylist() if r]
    assert adds[0]["stats"] is None
    assert adds[0]["stats_parsed"]["minValues"] == {"id": 1}
    assert adds[0]["stats_parsed"]["numRecords"] == 3
    assert str(adds[0]["partitionValues_parsed"]["day"]) == "2024-01-01"
    back = DeltaLog(str(tmp_path)).snapshot()
    assert json.loads(back.files.column("stats")[0].as_py())["maxValues"] == {"id": 9}
    assert [u.rsplit("/", 1)[-1] for u in deltalake.DeltaTable(str(tmp_path)).file_uris()] == [
        "a.parquet"
    ]


def test_struct_only_stats_keep_wide_decimals_exact(tmp_path: Path) -> None:
    """A checkpoint with stats only in stats_parsed: a decimal(38,2) bound with 20 digits
    comes back exactly (as a float it would round up past the file's minimum, and a
    point query on that minimum would skip the file)."""
    import decimal

    from delta_pyspark.core.expressions.parser import parse_predicate
    from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
    from delta_pyspark.core.skipping.data_skipping import may_match
    from delta_pyspark.core.transaction.commit import checkpoint_now
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction
    from delta_pyspark.core.transaction.table_definition import create_table

    log = DeltaLog(str(tmp_path))
    schema = (
        '{"type":"struct","fields":[{"name":"x","type":"decimal(38,2)",'
        '"nullable":true,"metadata":{}}]}'
    )
    conf = {
        "delta.checkpoint.writeStatsAsStruct": "true",
        "delta.checkpoint.writeStatsAsJson": "false",
    }
    create_table(log, schema, [], conf)
    low, high = "123456789012345678.91", "223456789012345678.99"
    txn = Transaction(log, log.snapshot())
    stats = (
        f'{{"numRecords":2,"minValues":{{"x":{low}}},"maxValues":{{"x":{high}}},'
        '"nullCount":{"x":0}}'
    )
    add = {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1}
    txn.add_files([add | {"dataChange": True, "stats": stats}])
    checkpoint_now(log.store, txn.commit("WRITE"))
    back = DeltaLog(str(tmp_path)).snapshot()
    text = back.files.column("stats")[0].as_py()
    parsed = json.loads(text, parse_float=decimal.Decimal)
    assert parsed["minValues"] == {"x": decimal.Decimal(low)}
    assert parsed["maxValues"] == {"x": decimal.Decimal(high)}

    def kept(sql: str) -> list[bool]:
        arrow_schema = to_arrow_schema(back.schema)
        return may_match(parse_predicate(sql), back.files, arrow_schema, []).to_pylist()

    assert kept(f"x = {low}") == [True]
    assert kept(f"x < {low}") == [False]
