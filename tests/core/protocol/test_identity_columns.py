"""Identity columns without Spark: definitions, the SQL clause, the high-water mark rules
(delta-spark's rounding), the protocol a table gets, and two writers racing on the mark."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.identity_columns import (
    HIGH_WATER_MARK,
    IdentityInfo,
    check_definitions,
    check_explicit_insert,
    check_update,
    identity_info,
    identity_metadata,
    next_high_water_mark,
    round_to_next,
    with_written_high_water_marks,
)
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.core.protocol.table_features import check_writable, features_in_use, protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    IdentityColumnDataTypeError,
    IdentityColumnExplicitInsertError,
    IdentityColumnPartitionError,
    IdentityColumnUpdateError,
    IdentityColumnWithGenerationError,
    MetadataChangedException,
)

LONG = PrimitiveType("long")


def _schema(start: int = 1, step: int = 1, by_default: bool = False) -> StructType:
    return StructType(
        (
            StructField("id", LONG, True, identity_metadata(start, step, by_default)),
            StructField("v", PrimitiveType("string")),
        )
    )


@pytest.mark.parametrize(
    ("start", "step", "value", "rounded"),
    [
        (1, 1, 5, 5),
        (1, 3, 5, 7),  # 1, 4, 7: up to the next value of the sequence
        (1, 3, 7, 7),
        (10, 3, 5, 7),  # before the start: rounded without passing it
        (-1, -3, -5, -7),
        (-1, -3, -7, -7),
        (0, -2, 3, 2),
        (1, 2, 2**62 + 2**60, 2**62 + 2**60 + 1),  # exact beyond a double's 53 bits
    ],
)
def test_round_to_next_follows_delta_spark(start: int, step: int, value: int, rounded: int) -> None:
    assert round_to_next(start, step, value) == rounded


def test_high_water_mark_moves_only_forward_and_never_before_the_start() -> None:
    fresh = IdentityInfo(start=10, step=3, high_water_mark=None, allow_explicit_insert=True)
    assert fresh.next_value == 10
    assert next_high_water_mark(fresh, 14) == 16
    assert next_high_water_mark(fresh, 9) is None  # before the start: the mark stays unset
    marked = IdentityInfo(start=10, step=3, high_water_mark=19, allow_explicit_insert=True)
    assert marked.next_value == 22
    assert next_high_water_mark(marked, 13) is None  # behind the mark
    assert next_high_water_mark(marked, 19) is None  # no change
    assert next_high_water_mark(marked, 20) == 22
    down = IdentityInfo(start=0, step=-5, high_water_mark=-10, allow_explicit_insert=False)
    assert next_high_water_mark(down, -12) == -15
    assert next_high_water_mark(down, -3) is None
    bad = IdentityInfo(start=10, step=1, high_water_mark=2, allow_explicit_insert=False)
    assert next_high_water_mark(bad, 5) == 5  # a mark before the start is repaired


def test_definition_rules() -> None:
    check_definitions(_schema(), [])
    as_int = StructType(
        (StructField("id", PrimitiveType("integer"), True, identity_metadata(1, 1, False)),)
    )
    with pytest.raises(IdentityColumnDataTypeError, match="DataType integer is not supported"):
        check_definitions(as_int, [])
    with pytest.raises(IdentityColumnPartitionError, match="PARTITIONED BY IDENTITY column id"):
        check_definitions(_schema(), ["ID"])
    generated = StructType(
        (
            StructField(
                "id",
                LONG,
                True,
                {**identity_metadata(1, 1, False), "delta.generationExpression": "v + 1"},
            ),
        )
    )
    with pytest.raises(IdentityColumnWithGenerationError, match="generated column expression"):
        check_definitions(generated, [])


def test_explicit_values_and_updates() -> None:
    check_explicit_insert(_schema(by_default=True), ["ID", "v"])  # BY DEFAULT takes values
    check_explicit_insert(_schema(), ["v"])
    with pytest.raises(
        IdentityColumnExplicitInsertError,
        match="Providing values for GENERATED ALWAYS AS IDENTITY column id is not supported",
    ):
        check_explicit_insert(_schema(), ["Id", "v"])
    check_update(_schema(), ["v"])
    with pytest.raises(IdentityColumnUpdateError, match="UPDATE on IDENTITY column id"):
        check_update(_schema(by_default=True), ["id"])


def test_protocol_declares_identity_columns() -> None:
    assert protocol_for(_schema(), {}) == Protocol(
        1, 7, None, frozenset({"appendOnly", "invariants", "identityColumns"})
    )
    with_ntz = StructType((*_schema().fields, StructField("t", PrimitiveType("timestamp_ntz"))))
    upgraded = protocol_for(with_ntz, {})
    assert (upgraded.min_reader_version, upgraded.min_writer_version) == (3, 7)
    assert {"identityColumns", "timestampNtz"} <= set(upgraded.writer_features or ())
    check_writable(Protocol(1, 6), "t", used_legacy_features=frozenset({"identityColumns"}))


def _data_file(root: Path, name: str, ids: list[int | None]) -> dict:
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / name)
    return {"path": name, "size": (root / name).stat().st_size, "partitionValues": {}}


def _identity_table(tmp_path: Path, step: int = 1) -> DeltaLog:
    log = DeltaLog(str(tmp_path))
    create_table(log, schema_to_string(_schema(start=1, step=step)), [], {})
    return log


def test_marks_come_from_the_written_files(tmp_path: Path) -> None:
    log = _identity_table(tmp_path, step=-1)
    metadata = log.snapshot().metadata
    assert features_in_use(metadata) == {"identityColumns"}
    adds = [
        _data_file(tmp_path, "a.parquet", [1, 0, -7]),
        _data_file(tmp_path, "b.parquet", [None]),
    ]
    moved = with_written_high_water_marks(metadata, ["id"], str(tmp_path), adds)
    assert moved is not None
    assert identity_info(parse_schema_string(moved.schema_string).fields[0]).high_water_mark == -7
    assert with_written_high_water_marks(metadata, ["id"], str(tmp_path), adds[1:]) is None


def _identity_append(log: DeltaLog, tmp_path: Path, name: str, ids: list[int]) -> Transaction:
    snapshot = log.snapshot()
    txn = Transaction(log, snapshot)
    add = {**_data_file(tmp_path, name, ids), "modificationTime": 1, "dataChange": True}
    moved = with_written_high_water_marks(snapshot.metadata, ["id"], str(tmp_path), [add])
    assert moved is not None
    txn.update_metadata(moved)
    txn.add_files([add])
    return txn


def test_concurrent_identity_appends_conflict(tmp_path: Path) -> None:
    """Both writers generated 1, 2 from the same mark: the second must not commit them."""
    log = _identity_table(tmp_path)
    first = _identity_append(log, tmp_path, "a.parquet", [1, 2])
    second = _identity_append(log, tmp_path, "b.parquet", [1, 2])
    first.commit("WRITE", {"mode": "Append"})
    with pytest.raises(MetadataChangedException, match="metadata"):
        second.commit("WRITE", {"mode": "Append"})
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json")) == [
        "00000000000000000000.json",
        "00000000000000000001.json",
    ]
    snapshot = DeltaLog(str(tmp_path)).snapshot()
    assert snapshot.files.column("path").to_pylist() == ["a.parquet"]
    assert identity_info(snapshot.schema.fields[0]).high_water_mark == 2
    commit = (tmp_path / "_delta_log" / "00000000000000000001.json").read_text().splitlines()
    schema = json.loads(
        next(json.loads(x) for x in commit if "metaData" in x)["metaData"]["schemaString"]
    )
    assert schema["fields"][0]["metadata"][HIGH_WATER_MARK] == 2


def test_a_moved_mark_does_not_fail_a_transaction_without_metadata(tmp_path: Path) -> None:
    """delta-spark's case: a DELETE-like commit (no metadata) survives an identity append
    that won meanwhile; a transaction changing metadata too does not."""
    log = _identity_table(tmp_path)
    snapshot = log.snapshot()
    plain = Transaction(log, snapshot)
    given = _data_file(tmp_path, "given.parquet", [50])
    plain.add_files([{**given, "modificationTime": 1, "dataChange": True}])
    other = Transaction(log, snapshot)
    other.update_metadata(snapshot.metadata.with_changes(configuration={"a": "b"}))
    _identity_append(log, tmp_path, "a.parquet", [1, 2]).commit("WRITE", {"mode": "Append"})
    plain.commit("WRITE", {"mode": "Append"})
    with pytest.raises(MetadataChangedException):
        other.commit("SET TBLPROPERTIES")
    latest = DeltaLog(str(tmp_path)).snapshot()
    assert latest.version == 2
    assert sorted(latest.files.column("path").to_pylist()) == ["a.parquet", "given.parquet"]
    assert identity_info(latest.schema.fields[0]).high_water_mark == 2
