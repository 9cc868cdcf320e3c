"""ALTER TABLE on Delta tables. Spark's own parser reads the forms its grammar has (SET/UNSET
TBLPROPERTIES, ADD/DROP/RENAME/ALTER/CHANGE COLUMN, CLUSTER BY), which run here as
``spark_parsed`` changes (``AlterTableChanges.java``); the clauses it lacks (ADD/DROP
CONSTRAINT, DROP FEATURE, ALTER COLUMN ... SYNC IDENTITY) are Delta's own grammar
(``alter``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from delta_pyspark.core.commands.alter_table import add_columns
from delta_pyspark.core.commands.clustering import alter_clustering
from delta_pyspark.core.commands.column_changes import (
    ColumnChange,
    change_columns,
    drop_columns,
    rename_column,
    sync_identity,
)
from delta_pyspark.core.protocol.schema import StructField, data_type_from_json
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaUnsupportedOperationException
from delta_pyspark.spark.columns.identity import value_range
from delta_pyspark.sql.statement import Statement, nothing
from delta_pyspark.sql.text import StatementParser, TableRef
from delta_pyspark.tables import DeltaTable


def alter(p: StatementParser) -> Statement | None:
    """ALTER TABLE clauses Spark's grammar lacks; None for every other clause, which Spark
    parses. Each may change what a catalog entry shows."""
    table = p.table()
    if p.accept("ADD", "CONSTRAINT"):
        name = p.identifier("a constraint name")
        p.expect("CHECK", what="CHECK (<expression>)")
        expression = p.group("the CHECK expression").all_text()
        p.end()
        return _statement(
            "ADD CONSTRAINT",
            table,
            lambda spark, path: DeltaTable(spark, path).addConstraint(name, expression),
        )
    if p.accept("DROP", "CONSTRAINT"):
        if_exists = p.accept("IF", "EXISTS")
        name = p.identifier("a constraint name")
        p.end()
        return _statement(
            "DROP CONSTRAINT",
            table,
            lambda spark, path: DeltaTable(spark, path).dropConstraint(name, if_exists),
        )
    if p.accept("DROP", "FEATURE"):
        return _drop_feature(p, table)
    if table.delta_path is not None and (p.at("RENAME", "TO") or p.at("SET", "LOCATION")):
        # a path has no catalog entry to rename or move (on a name, Spark's own commands)
        clause = " ".join(t.text.upper() for t in p.tokens[p.pos : p.pos + 2])
        return _refused(table, clause)
    if p.accept("ALTER") or p.accept("CHANGE"):
        p.accept("COLUMN")
        column = _column_path(p)
        if p.accept("SYNC", "IDENTITY"):
            p.end()
            return _statement(
                "SYNC IDENTITY", table, lambda spark, path: _sync_identity(spark, path, column)
            )
    return None


def spark_parsed(table: TableRef, change: dict[str, Any]) -> Statement:
    """An ALTER TABLE Spark's parser read (``op`` and its arguments) on a Delta table."""
    op = change["op"]
    clause = op.replace("_", " ").upper()
    run = _RUNS.get(op)
    if run is None:
        return _refused(table, clause)
    return _statement(clause, table, lambda spark, path: run(spark, path, change))


def _refused(table: TableRef, clause: str) -> Statement:
    refusal = (
        f"ALTER TABLE ... {clause} is not supported on Delta tables (supported: SET/UNSET "
        "TBLPROPERTIES, ADD/DROP CONSTRAINT, ADD COLUMNS, RENAME COLUMN, DROP COLUMN(S), "
        "ALTER/CHANGE COLUMN, CLUSTER BY, DROP FEATURE)"
    )
    return Statement("ALTER TABLE", table, "", nothing, spark_knows=True, refusal=refusal)


def _statement(kind: str, table: TableRef, run: Callable[[SparkSession, str], object]) -> Statement:
    def execute(spark: SparkSession, path: str) -> None:
        run(spark, path)  # ALTER TABLE answers no rows, whatever the command returns

    return Statement(kind, table, "", execute, spark_knows=True, changes_schema=True)


def _drop_feature(p: StatementParser, table: TableRef) -> Statement:
    """DROP FEATURE name [TRUNCATE HISTORY] (a name with '-' is quoted: `typeWidening-preview`
    or 'typeWidening-preview'), Delta's own clause."""
    token = p.peek()
    if token is not None and token.kind == "string":
        name = p.literal("a feature name")
    else:
        name = p.identifier("a feature name")
    truncate = p.accept("TRUNCATE", "HISTORY")
    p.end()
    return _statement(
        "DROP FEATURE",
        table,
        lambda spark, path: DeltaTable(spark, path).dropFeatureSupport(name, truncate),
    )


def _column_path(p: StatementParser) -> tuple[str, ...]:
    """``a`` / ``s.x`` / ```a.b`.c``."""
    parts = [p.identifier("a column name")]
    while p.accept("."):
        parts.append(p.identifier("a field name after '.'"))
    return tuple(parts)


def _sync_identity(spark: SparkSession, path: str, column: tuple[str, ...]) -> None:
    sync_identity(
        DeltaLog.for_table(path), column, lambda snapshot, name: value_range(spark, snapshot, name)
    )


def _set_properties(spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    DeltaTable(spark, path).setProperties(change["properties"])


def _unset_properties(spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    DeltaTable(spark, path).unsetProperties(change["keys"], change["if_exists"])


def _add_columns(_spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    fields = []
    for column in change["columns"]:
        name = ".".join(column["column"])
        if len(column["column"]) > 1:
            raise DeltaUnsupportedOperationException(
                f"ADD COLUMNS {name}: adding a field inside a struct is not supported"
            )
        if column["position"] is not None:
            raise DeltaUnsupportedOperationException(
                f"ADD COLUMNS ... FIRST/AFTER is not supported ({name}): new columns go last"
            )
        _refuse_default(column["default"])
        metadata = {} if column["comment"] is None else {"comment": column["comment"]}
        data_type = data_type_from_json(json.loads(column["type"]))
        fields.append(StructField(column["column"][0], data_type, column["nullable"], metadata))
    add_columns(DeltaLog.for_table(path), fields)


def _drop_columns(_spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    paths = [tuple(column) for column in change["columns"]]
    drop_columns(DeltaLog.for_table(path), paths, change["if_exists"])


def _rename_column(_spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    rename_column(DeltaLog.for_table(path), tuple(change["column"]), change["new_name"])


def _alter_columns(_spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    changes = []
    for spec in change["specs"]:
        _refuse_default(spec["default"])
        position = spec["position"] or [None, None]
        data_type = None if spec["type"] is None else data_type_from_json(json.loads(spec["type"]))
        changes.append(
            ColumnChange(
                tuple(spec["column"]),
                data_type,
                spec["comment"],
                position[0] == "first",
                position[1] if position[0] == "after" else None,
                spec["nullable"],
            )
        )
    change_columns(DeltaLog.for_table(path), changes)


def _cluster_by(_spark: SparkSession, path: str, change: dict[str, Any]) -> None:
    """``CLUSTER BY (cols)`` / ``CLUSTER BY NONE``: a new ``delta.clustering`` domain."""
    alter_clustering(DeltaLog.for_table(path), [".".join(c) for c in change["columns"]])


_RUNS: dict[str, Callable[[SparkSession, str, dict[str, Any]], None]] = {
    "set_properties": _set_properties,
    "unset_properties": _unset_properties,
    "add_columns": _add_columns,
    "drop_columns": _drop_columns,
    "rename_column": _rename_column,
    "alter_columns": _alter_columns,
    "cluster_by": _cluster_by,
}


def _refuse_default(default: str | None) -> None:
    if default is not None:
        raise DeltaUnsupportedOperationException(
            "column DEFAULT values are not supported: column defaults need the "
            "allowColumnDefaults table feature, which delta-pyspark does not write"
        )
