"""UniForm without Spark: Iceberg metadata written after each commit of an IcebergCompatV2
table, read back by pyiceberg and by DuckDB's iceberg extension at every snapshot, and
the IcebergCompatV2 rules refusing commits that break them (leaving no version behind)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.conversions import from_bytes
from pyiceberg.table import StaticTable
from pyiceberg.types import StringType, TimestamptzType

from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.protocol.column_mapping import to_physical_schema
from delta_pyspark.core.protocol.schema import StructType, parse_schema_string
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.stats.collection import collect_parquet_stats
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.core.uniform import conversion
from delta_pyspark.exceptions import (
    DeltaConcurrentModificationException,
    DeltaUnsupportedOperationException,
    IcebergCompatViolationError,
)
from iceberg_readers import duckdb_rows

UNIFORM = {
    "delta.enableIcebergCompatV2": "true",
    "delta.universalFormat.enabledFormats": "iceberg",
}


def _schema(*fields: tuple[str, str]) -> str:
    return json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }
    )


SCHEMA = _schema(("id", "long"), ("name", "string"), ("p", "string"))


def _create(root: Path, conf: dict[str, str] | None = None, schema: str = SCHEMA) -> DeltaLog:
    log = DeltaLog.for_table(str(root))
    conf = dict(UNIFORM if conf is None else conf)
    create_table(log, schema, ["p"], conf, protocol_for(parse_schema_string(schema), conf))
    return log


def _write(log: DeltaLog, rows: list[dict[str, Any]], p: str, name: str) -> dict[str, Any]:
    """A data file of ``rows`` (logical names) in partition ``p``, as our writes make them:
    physical names, Parquet field ids, no partition column; its add with stats."""
    snapshot = log.snapshot()
    physical = to_physical_schema(snapshot.schema, "name")
    by_logical = dict(zip(snapshot.schema.field_names, physical.fields, strict=True))
    data = StructType(tuple(f for n, f in by_logical.items() if n != "p"))
    arrow = to_arrow_schema(data)
    table = pa.Table.from_pylist(
        [{by_logical[k].name: v for k, v in r.items() if k != "p"} for r in rows], schema=arrow
    )
    part = by_logical["p"].name
    relative = f"{part}={p}/{name}.parquet"
    path = Path(log.table_root) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return {
        "path": relative,
        "partitionValues": {part: p},
        "size": path.stat().st_size,
        "modificationTime": 0,
        "dataChange": True,
        "stats": collect_parquet_stats(pq.read_metadata(path), arrow, 32, None),
    }


def _commit(log: DeltaLog, adds: list[dict] = (), removes: list[dict] = (), op: str = "WRITE"):
    txn = Transaction(log, log.snapshot())
    txn.add_files(adds)
    txn.remove_files({"path": r["path"], "deletionTimestamp": 0} for r in removes)
    return txn.commit(op)


def _by_version(root: Path) -> dict[int, list[dict[str, Any]]]:
    """pyiceberg's rows at each snapshot, keyed by the Delta version it says it is."""
    table = StaticTable.from_metadata(str(root))
    out = {}
    for snap in table.metadata.snapshots:
        rows = table.scan(snapshot_id=snap.snapshot_id).to_arrow().to_pylist()
        out[int(snap.summary["delta-version"])] = sorted(rows, key=lambda r: r["id"])
    return out


def _row(i: int, name: str, p: str) -> dict[str, Any]:
    return {"id": i, "name": name, "p": p}


def test_every_version_reads_the_same_in_pyiceberg_and_duckdb(tmp_path: Path) -> None:
    log = _create(tmp_path)
    a = _write(log, [_row(1, "a", "x"), _row(2, "b", "x")], "x", "a")
    _commit(log, [a])
    b = _write(log, [_row(3, "c", "y")], "y", "b")
    _commit(log, [b])
    a2 = _write(log, [_row(1, "a", "x")], "x", "a2")
    _commit(log, [a2], [a], op="DELETE")  # copy-on-write: row 2 gone
    _commit(log, [], [b], op="DELETE")

    expected = {
        0: [],
        1: [_row(1, "a", "x"), _row(2, "b", "x")],
        2: [_row(1, "a", "x"), _row(2, "b", "x"), _row(3, "c", "y")],
        3: [_row(1, "a", "x"), _row(3, "c", "y")],
        4: [_row(1, "a", "x")],
    }
    assert _by_version(tmp_path) == expected
    table = StaticTable.from_metadata(str(tmp_path))
    assert table.metadata.properties["delta-version"] == "4"
    for snap in table.metadata.snapshots:
        version = int(snap.summary["delta-version"])
        assert duckdb_rows(tmp_path, snap.snapshot_id) == expected[version]
    assert duckdb_rows(tmp_path) == expected[4]
    assert [s.summary.operation.value for s in table.metadata.snapshots] == [
        "overwrite",
        "append",
        "append",
        "overwrite",
        "delete",
    ]


def test_a_commit_adds_one_manifest_and_rewrites_only_the_one_holding_a_removed_file(
    tmp_path: Path,
) -> None:
    log = _create(tmp_path)
    files = []
    for i in range(3):
        files.append(_write(log, [_row(i, "n", "x")], "x", f"f{i}"))
        _commit(log, [files[-1]])
    table = StaticTable.from_metadata(str(tmp_path))
    before = [m.manifest_path for m in table.current_snapshot().manifests(table.io)]
    assert len(before) == 3

    _commit(log, [], [files[1]], op="DELETE")
    table = StaticTable.from_metadata(str(tmp_path))
    after = [m.manifest_path for m in table.current_snapshot().manifests(table.io)]
    assert [before[0], before[2]] == [p for p in after if p in before]  # reused as they were
    assert len(after) == 3 and after[1] not in before  # the one holding f1, rewritten
    rewritten = table.current_snapshot().manifests(table.io)[1]
    assert (rewritten.deleted_files_count, rewritten.existing_files_count) == (1, 0)
    assert [r["id"] for r in _by_version(tmp_path)[4]] == [0, 2]


def test_versions_missed_by_a_failed_conversion_are_converted_one_snapshot_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _create(tmp_path)
    _commit(log, [_write(log, [_row(1, "a", "x")], "x", "a")])

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise OSError("the object store is down")

    with monkeypatch.context() as m:
        m.setattr(conversion, "_apply", broken)
        _commit(log, [_write(log, [_row(2, "b", "x")], "x", "b")])  # the commit stands
        _commit(log, [_write(log, [_row(3, "c", "y")], "y", "c")])
    assert log.snapshot().version == 3
    assert max(_by_version(tmp_path)) == 1

    _commit(log, [_write(log, [_row(4, "d", "y")], "y", "d")])
    got = _by_version(tmp_path)
    assert sorted(got) == [0, 1, 2, 3, 4]
    assert [r["id"] for r in got[2]] == [1, 2] and [r["id"] for r in got[4]] == [1, 2, 3, 4]


def test_a_newer_metadata_file_than_the_hint_names_is_found_and_followed(
    tmp_path: Path,
) -> None:
    """A converter that crashed between creating ``v<N>`` and updating the hint (or lost
    the race for the hint) leaves the hint behind: the next one must not reuse ``N``."""
    log = _create(tmp_path)
    _commit(log, [_write(log, [_row(1, "a", "x")], "x", "a")])
    hint = tmp_path / "metadata" / "version-hint.text"
    assert hint.read_text() == "2"
    hint.write_text("1")
    _commit(log, [_write(log, [_row(2, "b", "x")], "x", "b")])
    assert hint.read_text() == "3"
    assert sorted(_by_version(tmp_path)) == [0, 1, 2]


def test_rerun_converts_the_version_whole(tmp_path: Path) -> None:
    log = _create(tmp_path)
    _commit(log, [_write(log, [_row(1, "a", "x")], "x", "a")])
    snapshot = _commit(log, [_write(log, [_row(2, "b", "y")], "y", "b")])
    location = conversion.convert(log, snapshot, rerun=True)
    assert location is not None and location.endswith("v4.metadata.json")
    table = StaticTable.from_metadata(str(tmp_path))
    current = table.current_snapshot()
    assert current.summary["delta-version"] == "2"
    assert len(current.manifests(table.io)) == 1  # every live file in one new manifest
    assert [r["id"] for r in table.scan().to_arrow().to_pylist()] == [1, 2]
    assert conversion.convert(log, snapshot) is None  # up to date: nothing written


def test_bounds_are_exact_or_left_out(tmp_path: Path) -> None:
    """Delta keeps timestamps to the millisecond and cuts strings at 32 characters: an
    Iceberg upper bound must still be above every value."""
    schema = _schema(("id", "long"), ("name", "string"), ("ts", "timestamp"), ("p", "string"))
    log = _create(tmp_path, schema=schema)
    import datetime as dt

    moment = dt.datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=dt.UTC)
    rows = [
        {"id": 5, "name": "x" * 40, "ts": moment, "p": "x"},
        {"id": 9, "name": "short", "ts": moment, "p": "x"},
    ]
    _commit(log, [_write(log, rows, "x", "a")])
    table = StaticTable.from_metadata(str(tmp_path))
    entry = next(
        iter(table.current_snapshot().manifests(table.io)[0].fetch_manifest_entry(table.io))
    )
    data = entry.data_file
    ids = {f.name: f.field_id for f in table.schema().fields}
    assert data.record_count == 2
    assert data.lower_bounds[ids["id"]] == (5).to_bytes(8, "little")
    assert data.upper_bounds[ids["id"]] == (9).to_bytes(8, "little")
    assert from_bytes(StringType(), data.lower_bounds[ids["name"]]) == "short"
    assert ids["name"] not in data.upper_bounds  # the 40-character max was cut
    micros = (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    assert from_bytes(TimestamptzType(), data.upper_bounds[ids["ts"]]) >= micros
    assert from_bytes(TimestamptzType(), data.lower_bounds[ids["ts"]]) <= micros
    # and a reader filtering on the bound keeps the row
    assert len(table.scan(row_filter=f"ts >= '{moment.isoformat()}'").to_arrow()) == 2


def _versions(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").glob("*.json"))


@pytest.mark.parametrize(
    ("conf", "condition"),
    [
        ({"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "none"},
         "WRONG_REQUIRED_TABLE_PROPERTY"),
        ({**UNIFORM, "delta.enableDeletionVectors": "true"},
         "DELETION_VECTORS_SHOULD_BE_DISABLED"),
        ({"delta.universalFormat.enabledFormats": "iceberg"}, "DELTA_UNIVERSAL_FORMAT_VIOLATION"),
    ],
)  # fmt: skip
def test_tables_breaking_the_rules_are_not_created(
    tmp_path: Path, conf: dict[str, str], condition: str
) -> None:
    with pytest.raises(IcebergCompatViolationError, match=condition) as info:
        _create(tmp_path, conf)
    assert condition in (info.value.condition or "")
    assert not (tmp_path / "_delta_log").exists() or _versions(tmp_path) == []


def test_array_columns_are_refused_by_name(tmp_path: Path) -> None:
    schema = _schema(("id", "long"), ("p", "string"))
    schema_obj = json.loads(schema)
    schema_obj["fields"].append(
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
         "nullable": True, "metadata": {}}
    )  # fmt: skip
    with pytest.raises(IcebergCompatViolationError, match=r"UNSUPPORTED_DATA_TYPE.*tags"):
        _create(tmp_path, schema=json.dumps(schema_obj))


def test_a_file_without_num_records_is_refused_and_nothing_is_committed(tmp_path: Path) -> None:
    log = _create(tmp_path)
    add = _write(log, [_row(1, "a", "x")], "x", "a")
    with pytest.raises(IcebergCompatViolationError, match="MISSING_NUMRECORDS_STATS"):
        _commit(log, [{**add, "stats": None}])
    assert _versions(tmp_path) == ["00000000000000000000.json"]
    assert sorted(_by_version(tmp_path)) == [0]


def test_other_universal_formats_are_refused(tmp_path: Path) -> None:
    from delta_pyspark.core.protocol.table_properties import validate_property

    with pytest.raises(DeltaUnsupportedOperationException, match="hudi"):
        validate_property("delta.universalFormat.enabledFormats", "iceberg,hudi")
    assert validate_property("delta.universalFormat.enabledFormats", " ICEBERG ") == (
        "delta.universalFormat.enabledFormats",
        "iceberg",
    )


def test_compat_v2_without_a_mapping_mode_gets_name_mapping_at_creation(tmp_path: Path) -> None:
    log = _create(tmp_path, {"delta.enableIcebergCompatV2": "true"})
    snapshot = log.snapshot()
    assert snapshot.configuration["delta.columnMapping.mode"] == "name"
    assert {"columnMapping", "icebergCompatV2"} <= set(snapshot.protocol.writer_features or ())
    assert not (tmp_path / "metadata").exists()  # no UniForm asked for: no Iceberg metadata


@pytest.mark.parametrize("auto_publish", [True, False])
def test_a_catalog_managed_table_is_converted_once_the_catalog_ratified_each_commit(
    catalog_url: str, tmp_path: Path, auto_publish: bool
) -> None:
    """Iceberg metadata follows ratified commits only, published or still held by the
    catalog: a commit the catalog refused never reaches the Iceberg side."""
    with Catalog.open(
        catalog_url, warehouse=str(tmp_path / "warehouse"), auto_publish=auto_publish
    ) as catalog:
        catalog.create_table("t", SCHEMA, ["p"], configuration=UNIFORM)
        log = catalog.delta_log("t")
        for name, rows, p in (("a", [_row(1, "a", "x")], "x"), ("b", [_row(2, "b", "y")], "y")):
            txn = catalog.begin("t")
            txn.add_files([_write(log, rows, p, name)])
            txn.commit("WRITE")
        stale = catalog.begin("t")  # read version 2; loses to the delete below
        stale.read_whole_table()
        stale.add_files([_write(log, [_row(9, "z", "x")], "x", "z")])
        deleting = catalog.begin("t")
        deleting.remove_files([{"path": f["path"], "deletionTimestamp": 0}
                               for f in deleting.snapshot.files.to_pylist()[:1]])  # fmt: skip
        deleting.commit("DELETE")
        with pytest.raises(DeltaConcurrentModificationException):
            stale.commit("WRITE")
        root = Path(catalog.table("t").location)
    assert sorted(_by_version(root)) == [0, 1, 2, 3]
    assert [r["id"] for r in _by_version(root)[2]] == [1, 2]
    assert len(_by_version(root)[3]) == 1
    assert duckdb_rows(root) == _by_version(root)[3]


def test_type_widening_iceberg_cannot_read_is_refused(tmp_path: Path) -> None:
    from delta_pyspark.core.commands.alter_table import set_properties

    schema = _schema(("id", "integer"), ("amount", "integer"), ("p", "string"))
    log = _create(tmp_path, {**UNIFORM, "delta.enableTypeWidening": "true"}, schema=schema)
    snapshot = log.snapshot()

    def widened(to: str) -> Any:
        fields = json.loads(snapshot.metadata.schema_string)["fields"]
        fields[1]["type"] = to
        fields[1]["metadata"]["delta.typeChanges"] = [{"fromType": "integer", "toType": to}]
        return snapshot.metadata.with_changes(
            schema_string=json.dumps({"type": "struct", "fields": fields})
        )

    txn = Transaction(log, snapshot)
    txn.update_metadata(widened("long"))  # Iceberg's int to long: allowed
    txn.commit("CHANGE COLUMN")
    txn = Transaction(log, log.snapshot())
    snapshot = log.snapshot()
    txn.update_metadata(widened("double"))
    with pytest.raises(IcebergCompatViolationError, match=r"UNSUPPORTED_TYPE_WIDENING.*amount"):
        txn.commit("CHANGE COLUMN")
    assert _versions(tmp_path)[-1] == "00000000000000000001.json"
    # and a partitioned table keeps its partition columns
    txn = Transaction(log, log.snapshot())
    txn.update_metadata(log.snapshot().metadata.with_changes(partition_columns=("id",)))
    with pytest.raises(IcebergCompatViolationError, match="REPLACE_TABLE_CHANGE_PARTITION_NAMES"):
        txn.commit("REPLACE TABLE")
    # turning IcebergCompatV2 off alone turns UniForm's Iceberg off too
    set_properties(log, {"delta.enableIcebergCompatV2": "false"})
    assert "delta.universalFormat.enabledFormats" not in log.snapshot().configuration
