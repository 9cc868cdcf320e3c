"""RENAME COLUMN, DROP COLUMN(S) and ALTER/CHANGE COLUMN in the core (Spark-free): the schema,
partition columns and properties each commit leaves, what delta-spark refuses, and that a
refused change writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.commands.column_changes import (
    ColumnChange,
    change_columns,
    drop_columns,
    rename_column,
)
from delta_pyspark.core.protocol.column_mapping import PHYSICAL_NAME_KEY
from delta_pyspark.core.protocol.schema import PrimitiveType, StructType
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import DeltaAnalysisException

INTEGER, LONG, STRING = PrimitiveType("integer"), PrimitiveType("long"), PrimitiveType("string")


def _field(name: str, type_: Any, nullable: bool = True, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata}


SCHEMA = {
    "type": "struct",
    "fields": [
        _field("id", "long", False),
        _field("s", {"type": "struct", "fields": [_field("x", "integer"), _field("y", "string")]}),
        _field("v", "integer"),
        _field("p", "string"),
    ],
}


def _table(tmp_path: Path, mapping: bool = True, **conf: str) -> DeltaLog:
    log = DeltaLog(str(tmp_path / "t"))
    configuration = dict(conf)
    if mapping:
        configuration["delta.columnMapping.mode"] = "name"
    protocol = protocol_for(StructType.from_json(SCHEMA), configuration)
    create_table(log, json.dumps(SCHEMA), ["p"], configuration, protocol=protocol)
    return log


def _commit_info(log: DeltaLog, version: int) -> dict[str, Any]:
    path = Path(log.table_root) / "_delta_log" / f"{version:020d}.json"
    for line in path.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return dict(action["commitInfo"])
    raise AssertionError("no commitInfo")


def _names(log: DeltaLog) -> list[str]:
    return log.snapshot().schema.field_names


def _nested(log: DeltaLog) -> list[str]:
    s = log.snapshot().schema.field("s").type
    assert isinstance(s, StructType)
    return s.field_names


def _refused(log: DeltaLog, error_class: str, call: Any, *args: Any) -> str:
    """Run a change that must fail: the error names ``error_class`` and nothing is committed."""
    before = log.snapshot().version
    with pytest.raises(DeltaAnalysisException) as caught:
        call(log, *args)
    assert f"[{error_class}]" in str(caught.value)
    assert DeltaLog(log.table_root).snapshot().version == before
    return str(caught.value)


# ---------------------------------------------------------------------- RENAME COLUMN


def test_rename_keeps_physical_name_and_logs_paths(tmp_path: Path) -> None:
    log = _table(tmp_path)
    physical = log.snapshot().schema.field("v").metadata[PHYSICAL_NAME_KEY]
    snap = rename_column(log, ["V"], "value")
    assert snap.version == 1
    assert _names(log) == ["id", "s", "value", "p"]
    assert log.snapshot().schema.field("value").metadata[PHYSICAL_NAME_KEY] == physical
    info = _commit_info(log, 1)
    assert info["operation"] == "RENAME COLUMN"
    assert info["operationParameters"] == {"oldColumnPath": "v", "newColumnPath": "value"}


def test_rename_nested_field_and_partition_column(tmp_path: Path) -> None:
    log = _table(tmp_path)
    rename_column(log, ["s", "x"], "x2")
    assert _nested(log) == ["x2", "y"]
    assert _commit_info(log, 1)["operationParameters"]["newColumnPath"] == "s.x2"
    rename_column(log, ["p"], "part")
    assert log.snapshot().metadata.partition_columns == ("part",)
    assert _names(log) == ["id", "s", "v", "part"]


def test_rename_needs_column_mapping(tmp_path: Path) -> None:
    log = _table(tmp_path, mapping=False)
    message = _refused(log, "DELTA_UNSUPPORTED_RENAME_COLUMN", rename_column, ["v"], "w")
    assert "delta.columnMapping.mode" in message


def test_rename_onto_an_existing_name_is_refused(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _refused(log, "DELTA_DUPLICATE_COLUMNS_FOUND", rename_column, ["v"], "ID")
    _refused(log, "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA", rename_column, ["nope"], "w")
    rename_column(log, ["v"], "V")  # a change of case only is a rename
    assert _names(log) == ["id", "s", "V", "p"]


def test_rename_of_a_column_a_constraint_reads_is_refused(tmp_path: Path) -> None:
    log = _table(tmp_path, **{"delta.constraints.positive": "v > 0 AND s.x < 10"})
    message = _refused(log, "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE", rename_column, ["v"], "w")
    assert "positive: v > 0 AND s.x < 10" in message
    # a struct holding a read field, and the field itself, are both dependencies
    _refused(log, "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE", rename_column, ["s"], "t")
    _refused(log, "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE", rename_column, ["s", "x"], "z")
    rename_column(log, ["s", "y"], "z")  # a sibling nobody reads
    assert _nested(log) == ["x", "z"]


def test_rename_follows_in_stats_columns_property(tmp_path: Path) -> None:
    log = _table(tmp_path, **{"delta.dataSkippingStatsColumns": "v,s.x,id"})
    rename_column(log, ["s"], "t")
    rename_column(log, ["v"], "w")
    conf = log.snapshot().configuration
    assert conf["delta.dataSkippingStatsColumns"] == "w,t.x,id"


# ---------------------------------------------------------------------- DROP COLUMNS


def test_drop_columns_top_level_and_nested(tmp_path: Path) -> None:
    log = _table(tmp_path, **{"delta.dataSkippingStatsColumns": "v,s.x"})
    snap = drop_columns(log, [["V"], ["s", "x"]])
    assert snap.version == 1
    assert _names(log) == ["id", "s", "p"]
    assert _nested(log) == ["y"]
    assert log.snapshot().configuration["delta.dataSkippingStatsColumns"] == ""
    info = _commit_info(log, 1)
    assert info["operation"] == "DROP COLUMNS"
    assert json.loads(info["operationParameters"]["columns"]) == ["v", "s.x"]


def test_drop_refusals(tmp_path: Path) -> None:
    log = _table(tmp_path, **{"delta.constraints.c": "v IS NOT NULL"})
    _refused(log, "DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN", drop_columns, [["p"]])
    _refused(log, "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE", drop_columns, [["v"]])
    _refused(log, "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA", drop_columns, [["missing"]])
    drop_columns(log, [["s", "x"]])
    _refused(log, "DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA", drop_columns, [["s", "y"]])
    plain = _table(tmp_path / "plain", mapping=False)
    _refused(plain, "DELTA_UNSUPPORTED_DROP_COLUMN", drop_columns, [["v"]])


def test_drop_if_exists_skips_missing_names(tmp_path: Path) -> None:
    log = _table(tmp_path)
    assert drop_columns(log, [["missing"]], if_exists=True).version == 0  # nothing committed
    drop_columns(log, [["missing"], ["v"]], if_exists=True)
    assert _names(log) == ["id", "s", "p"]
    assert json.loads(_commit_info(log, 1)["operationParameters"]["columns"]) == ["v"]


# ---------------------------------------------------------------------- ALTER COLUMN


def test_comment_and_drop_not_null(tmp_path: Path) -> None:
    log = _table(tmp_path, mapping=False)
    change_columns(log, [ColumnChange(("ID",), comment="the key", nullable=True)])
    field = log.snapshot().schema.field("id")
    assert field.nullable and field.metadata["comment"] == "the key"
    info = _commit_info(log, 1)
    assert info["operation"] == "CHANGE COLUMN"
    column = json.loads(info["operationParameters"]["column"])
    assert column == {
        "name": "id",
        "type": "long",
        "nullable": True,
        "metadata": {"comment": "the key"},
    }


def test_positions_first_and_after(tmp_path: Path) -> None:
    log = _table(tmp_path, mapping=False)
    change_columns(log, [ColumnChange(("p",), first=True)])
    assert _names(log) == ["p", "id", "s", "v"]
    assert _commit_info(log, 1)["operationParameters"]["position"] == "FIRST"
    change_columns(log, [ColumnChange(("s", "x"), after="y"), ColumnChange(("id",), after="v")])
    assert _nested(log) == ["y", "x"]
    assert _names(log) == ["p", "s", "v", "id"]
    info = _commit_info(log, 2)
    assert info["operation"] == "CHANGE COLUMNS"
    assert [c["position"] for c in json.loads(info["operationParameters"]["columns"])] == [
        "AFTER y",
        "AFTER v",
    ]
    _refused(
        log, "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA", change_columns, [ColumnChange(("v",), after="z")]
    )


def test_type_change_needs_type_widening_and_records_it(tmp_path: Path) -> None:
    log = _table(tmp_path, mapping=False)
    message = _refused(
        log,
        "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        change_columns,
        [ColumnChange(("v",), data_type=LONG)],
    )
    assert "delta.enableTypeWidening" in message
    widened = _table(tmp_path / "w", mapping=False, **{"delta.enableTypeWidening": "true"})
    change_columns(
        widened, [ColumnChange(("v",), data_type=LONG), ColumnChange(("id",), data_type=LONG)]
    )
    field = widened.snapshot().schema.field("v")
    assert field.type == LONG
    assert field.metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert "delta.typeChanges" not in widened.snapshot().schema.field("id").metadata  # same type
    _refused(  # a narrowing is never allowed
        widened,
        "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        change_columns,
        [ColumnChange(("v",), data_type=INTEGER)],
    )
    _refused(
        widened,
        "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        change_columns,
        [ColumnChange(("p",), data_type=INTEGER)],
    )


def test_set_not_null_is_refused(tmp_path: Path) -> None:
    log = _table(tmp_path, mapping=False)
    message = _refused(
        log,
        "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        change_columns,
        [ColumnChange(("v",), nullable=False)],
    )
    assert "NOT NULL" in message
    change_columns(log, [ColumnChange(("id",), nullable=False)])  # already NOT NULL: no change
    assert not log.snapshot().schema.field("id").nullable


def test_type_change_of_a_constrained_column_is_refused(tmp_path: Path) -> None:
    log = _table(
        tmp_path,
        mapping=False,
        **{"delta.enableTypeWidening": "true", "delta.constraints.c": "`v` < 5"},
    )
    _refused(
        log,
        "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE",
        change_columns,
        [ColumnChange(("v",), data_type=LONG)],
    )
    change_columns(log, [ColumnChange(("v",), comment="ok")])  # a comment is no dependency
    assert log.snapshot().schema.field("v").metadata["comment"] == "ok"
