"""Damaged and hostile logs (issue: untrusted logs and paths): each one is reported as a
``CorruptLogError`` naming the log file and the field, never read as something else and
never raised as an untyped exception."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyspark.core.log.checkpoint import write_checkpoint
from delta_pyspark.core.log.table_paths import invalid_file_paths
from delta_pyspark.core.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.exceptions import CorruptLogError, DeltaError

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
UUID_Z85 = "^-aqEH.-t@S}K{vb[*k^"
DV = {"storageType": "u", "pathOrInlineDv": "ab" + UUID_Z85, "offset": 1,
      "sizeInBytes": 36, "cardinality": 1}  # fmt: skip


def commit_path(root: Path, version: int) -> Path:
    return root / "_delta_log" / f"{version:020d}.json"


def write_commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    path = commit_path(root, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))


def add(path: str, **fields: Any) -> dict[str, Any]:
    body = {"path": path, "partitionValues": {}, "size": 100, "modificationTime": 1,
            "dataChange": True}  # fmt: skip
    body.update(fields)
    return {"add": body}


def make_table(root: Path, partitioned: bool = False, files: int = 3) -> Path:
    """Version 0 creates the table; versions 1.. each add one real 3-row Parquet file."""
    metadata = {"id": "t", "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA, "partitionColumns": ["p"] if partitioned else [],
                "configuration": {}}  # fmt: skip
    write_commit(
        root,
        0,
        [
            {"commitInfo": {"timestamp": 0, "operation": "CREATE TABLE"}},
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": metadata},
        ],
    )
    for v in range(1, files + 1):
        rel = f"p=x/f{v}.parquet" if partitioned else f"f{v}.parquet"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": pa.array([3 * v, 3 * v + 1, 3 * v + 2], pa.int64())}),
                       root / rel)  # fmt: skip
        values = {"p": "x"} if partitioned else {}
        write_commit(
            root,
            v,
            [
                {"commitInfo": {"timestamp": v, "operation": "WRITE"}},
                add(rel, size=(root / rel).stat().st_size, partitionValues=values),
            ],
        )
    return root


def edit(root: Path, version: int, change: Callable[[list[dict[str, Any]]], None]) -> None:
    """Rewrite commit ``version`` after ``change`` edits its parsed actions in place."""
    actions = [json.loads(line) for line in commit_path(root, version).read_text().splitlines()]
    change(actions)
    write_commit(root, version, actions)


def set_field(kind: str, key: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(actions: list[dict[str, Any]]) -> None:
        for action in actions:
            if kind in action:
                action[kind][key] = value

    return change


def corrupt(root: Path, *needles: str) -> CorruptLogError:
    with pytest.raises(CorruptLogError) as e:
        DeltaLog(str(root)).snapshot()
    for needle in needles:
        assert needle in str(e.value), str(e.value)
    return e.value


@pytest.mark.parametrize(
    ("version", "kind", "key", "value", "needles"),
    [
        (0, "metaData", "configuration", [1, 2], ["00000000000000000000.json:3",
                                                  "metaData.configuration"]),
        (0, "metaData", "partitionColumns", "p", ["metaData.partitionColumns"]),
        (0, "protocol", "minReaderVersion", "1", ["protocol.minReaderVersion"]),
        (0, "protocol", "minWriterVersion", 0, ["protocol.minWriterVersion", "out of range"]),
        (1, "add", "size", 2**70, ["00000000000000000001.json:2", "add.size", "out of range"]),
        (1, "add", "size", -5, ["add.size"]),
        (1, "add", "size", "12", ["add.size must be an integer"]),
        (1, "add", "dataChange", "yes", ["add.dataChange must be a boolean"]),
        (1, "add", "partitionValues", [1], ["add.partitionValues"]),
        (1, "add", "stats", 5, ["add.stats must be a string"]),
        (1, "add", "modificationTime", 1.5, ["add.modificationTime"]),
    ],
)  # fmt: skip
def test_wrong_field_types_and_ranges(
    tmp_path: Path, version: int, kind: str, key: str, value: Any, needles: list[str]
) -> None:
    make_table(tmp_path)
    edit(tmp_path, version, set_field(kind, key, value))
    corrupt(tmp_path, *needles)


@pytest.mark.parametrize(
    "path", ["", ".", "./", "../x.parquet", "a/../../x.parquet", "%2E%2E/x.parquet",
             "..%2Fx.parquet", "/", "file:/"],
)  # fmt: skip
def test_paths_outside_the_table_are_refused(tmp_path: Path, path: str) -> None:
    make_table(tmp_path)
    edit(tmp_path, 2, set_field("add", "path", path))
    error = corrupt(tmp_path, "00000000000000000002.json", f"add.path {path!r} cannot name a file")
    assert "at version 3" in str(error)


def test_a_remove_with_an_escaping_path_is_refused_too(tmp_path: Path) -> None:
    make_table(tmp_path)
    write_commit(tmp_path, 4, [{"remove": {"path": "../../etc/passwd", "dataChange": True}}])
    corrupt(tmp_path, "remove.path '../../etc/passwd' cannot name a file")


def test_paths_the_protocol_allows_are_accepted(tmp_path: Path) -> None:
    paths = ["a/./b.parquet", "dir/../f.parquet", "/abs/f.parquet", "file:/abs/f.parquet",
             "s3://bucket/f.parquet", "f%20g.parquet", "f%5B1%5D.parquet"]  # fmt: skip
    files = pa.table({"path": pa.array(paths)})
    assert invalid_file_paths(str(tmp_path), files) == []


@pytest.mark.parametrize("prefix", ["../", "../../x", "/etc", "a/../../"])
def test_a_deletion_vector_outside_the_table_is_refused(prefix: str) -> None:
    descriptor = DeletionVectorDescriptor.from_dict({**DV, "pathOrInlineDv": prefix + UUID_Z85})
    with pytest.raises(CorruptLogError, match="leads outside the table"):
        descriptor.absolute_path("/t")
    inside = DeletionVectorDescriptor.from_dict({**DV, "pathOrInlineDv": "ab" + UUID_Z85})
    assert (inside.absolute_path("/t") or "").startswith("/t/ab/deletion_vector_")


@pytest.mark.parametrize("stored", [("p", "../outside/deletion_vector_x.bin"),
                                    ("p", "file:/"), ("u", "../" + "ab" + UUID_Z85)])  # fmt: skip
def test_the_reader_refuses_a_deletion_vector_file_outside_the_table(
    tmp_path: Path, stored: tuple[str, str]
) -> None:
    make_table(tmp_path)
    storage, path = stored
    dv = {**DV, "storageType": storage, "pathOrInlineDv": path}
    remove = {"remove": {"path": "f1.parquet", "dataChange": True}}
    write_commit(tmp_path, 4, [remove, add("f1.parquet", deletionVector=dv)])
    corrupt(tmp_path, "deletion", "outside")


def test_an_empty_commit_file_is_corrupt(tmp_path: Path) -> None:
    make_table(tmp_path)
    commit_path(tmp_path, 2).write_bytes(b"")
    corrupt(tmp_path, "00000000000000000002.json", "empty")
    commit_path(tmp_path, 2).write_bytes(b"\n  \n")
    corrupt(tmp_path, "00000000000000000002.json", "empty")


def test_deeply_nested_json_is_corrupt_not_a_recursion_error(tmp_path: Path) -> None:
    make_table(tmp_path)
    deep = '{"commitInfo":' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}\n"
    with commit_path(tmp_path, 3).open("a") as f:
        f.write(deep)
    corrupt(tmp_path, "00000000000000000003.json:3", "nested too deeply")


def test_a_deeply_nested_schema_is_corrupt(tmp_path: Path) -> None:
    make_table(tmp_path)
    nested = '{"type":"struct","fields":[{"name":"a","type":' * 5_000 + '"long"'
    nested += ',"nullable":true,"metadata":{}}]}' * 5_000
    edit(tmp_path, 0, set_field("metaData", "schemaString", nested))
    corrupt(tmp_path, "schemaString")


def test_partition_columns_must_be_schema_columns(tmp_path: Path) -> None:
    make_table(tmp_path)
    edit(tmp_path, 0, set_field("metaData", "partitionColumns", ["nope"]))
    corrupt(tmp_path, "metaData.partitionColumns names ['nope']")


def test_an_add_without_a_value_for_a_partition_column_is_corrupt(tmp_path: Path) -> None:
    make_table(tmp_path, partitioned=True)
    edit(tmp_path, 2, set_field("add", "partitionValues", {}))
    corrupt(tmp_path, "00000000000000000002.json", "'p=x/f2.parquet'", "partition column 'p'")
    # an explicit null is a value (the null partition)
    edit(tmp_path, 2, set_field("add", "partitionValues", {"p": None}))
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 3


def test_a_file_live_with_two_deletion_vectors_is_corrupt(tmp_path: Path) -> None:
    make_table(tmp_path)
    # f1 gets a vector, but the remove of the vector-less f1 is missing
    write_commit(tmp_path, 4, [add("f1.parquet", deletionVector=DV)])
    corrupt(tmp_path, "00000000000000000004.json", "'f1.parquet' is live twice")
    # with the remove the same commit is a valid deletion
    write_commit(
        tmp_path,
        4,
        [
            {"remove": {"path": "f1.parquet", "dataChange": True}},
            add("f1.parquet", deletionVector=DV),
        ],
    )
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 3


def test_a_stray_commit_with_a_huge_version_is_reported_fast(tmp_path: Path) -> None:
    make_table(tmp_path)
    stray = tmp_path / "_delta_log" / f"{10**15:020d}.json"
    stray.write_text('{"commitInfo":{}}\n')
    start = time.monotonic()
    corrupt(tmp_path, "not contiguous", "missing commit(s) [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]")
    assert time.monotonic() - start < 5  # no list of 10^15 versions
    # time travel below the gap still works
    assert DeltaLog(str(tmp_path)).snapshot(2).num_files == 2
    stray.unlink()
    (tmp_path / "_delta_log" / ("9" * 20 + ".json")).write_text('{"commitInfo":{}}\n')
    corrupt(tmp_path, "99999999999999999999.json", "beyond 2^63 - 1")


def test_a_lost_newest_commit_is_reported_when_its_checksum_remains(tmp_path: Path) -> None:
    make_table(tmp_path)
    log = DeltaLog(str(tmp_path))
    (tmp_path / "_delta_log" / f"{3:020d}.crc").write_text(
        json.dumps({"numFiles": 3, "tableSizeBytes": log.snapshot().size_in_bytes})
    )
    assert log.snapshot().version == 3  # the checksum agrees with its commit
    commit_path(tmp_path, 3).unlink()
    corrupt(tmp_path, "checksum of version 3 exists", "log ends at version 2")
    assert DeltaLog(str(tmp_path)).snapshot(2).num_files == 2  # time travel reads on


@pytest.mark.parametrize("dv", [None, DV])
def test_a_commit_adding_and_removing_one_logical_file_is_corrupt(
    tmp_path: Path, dv: dict[str, Any] | None
) -> None:
    """E.g. a DELETE's re-add lost its ``deletionVector`` field: the rows it deleted
    would come back. The protocol forbids one (path, vector) in both lists of a commit."""
    make_table(tmp_path)
    vector = {} if dv is None else {"deletionVector": dv}
    remove = {"remove": {"path": "f1.parquet", "dataChange": True, **vector}}
    write_commit(tmp_path, 4, [remove, add("f1.parquet", **vector)])
    corrupt(tmp_path, "00000000000000000004.json", "adds and removes the same file 'f1.parquet'")
    # a commit that also has other files goes through the column-wise parser: same error
    write_commit(tmp_path, 4, [remove, add("f1.parquet", **vector), add("f9.parquet")])
    corrupt(tmp_path, "00000000000000000004.json", "adds and removes the same file 'f1.parquet'")


def test_a_last_checkpoint_hint_that_is_a_directory_is_ignored(tmp_path: Path) -> None:
    make_table(tmp_path)
    (tmp_path / "_delta_log" / "_last_checkpoint").mkdir()
    assert DeltaLog(str(tmp_path)).snapshot().num_files == 3


@pytest.mark.parametrize("partitioned", [False, True])
def test_damaged_checkpoint_bytes_give_typed_errors(tmp_path: Path, partitioned: bool) -> None:
    """Every byte of the checkpoint flipped in turn (a seeded sample): the load either
    succeeds or raises one of our errors (a flipped string byte may read as another
    valid string: Parquet without page checksums cannot tell)."""
    make_table(tmp_path, partitioned)
    log = DeltaLog(str(tmp_path))
    write_checkpoint(LocalLogStore(), log.log_dir, log.snapshot().state)
    checkpoint = tmp_path / "_delta_log" / f"{3:020d}.checkpoint.parquet"
    original = checkpoint.read_bytes()
    rng = random.Random(17)
    outcomes = {"loaded": 0, "typed": 0}
    for position in rng.sample(range(len(original)), min(150, len(original))):
        damaged = bytearray(original)
        damaged[position] ^= 1 << rng.randrange(8)
        checkpoint.write_bytes(bytes(damaged))
        try:
            DeltaLog(str(tmp_path)).snapshot()
            outcomes["loaded"] += 1
        except DeltaError:
            outcomes["typed"] += 1
    assert outcomes["typed"] > 0, outcomes
    checkpoint.write_bytes(original[: len(original) // 2])
    with pytest.raises(CorruptLogError, match="checkpoint"):
        DeltaLog(str(tmp_path)).snapshot()


def test_the_valid_table_still_loads(tmp_path: Path) -> None:
    """The builder itself makes a readable table (so the failures above are the edits')."""
    make_table(tmp_path, partitioned=True)
    snapshot = DeltaLog(str(tmp_path)).snapshot()
    assert snapshot.version == 3
    assert sorted(snapshot.files.column("path").to_pylist()) == [
        "p=x/f1.parquet",
        "p=x/f2.parquet",
        "p=x/f3.parquet",
    ]
    assert os.path.exists(tmp_path / "p=x" / "f1.parquet")
