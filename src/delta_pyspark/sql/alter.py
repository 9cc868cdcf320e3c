"""ALTER TABLE on Delta tables: properties, constraints, columns and identity marks."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from delta_pyspark.core.commands.clustering import alter_clustering
from delta_pyspark.core.commands.column_changes import (
    ColumnChange,
    change_columns,
    drop_columns,
    rename_column,
    sync_identity,
)
from delta_pyspark.core.protocol.schema import DataType, data_type_from_json
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaParseException,
    DeltaUnsupportedOperationException,
)
from delta_pyspark.spark.columns.identity import value_range
from delta_pyspark.spark.jvm.helpers import data_type_json
from delta_pyspark.sql.statement import Statement, nothing
from delta_pyspark.sql.text import StatementParser, TableRef
from delta_pyspark.tables import DeltaTable

#: clauses that change only a named table's catalog entry (its name, its location), never
#: the table's log: Spark's own commands run them, as with delta-spark (a managed table's
#: directory moves with its name, log included); a table given by path has no entry
_CATALOG_CLAUSES = (("RENAME", "TO"), ("SET", "LOCATION"))


def alter(p: StatementParser) -> Statement | None:
    """ALTER TABLE: every clause may change what the catalog entry shows; None for the
    clauses Spark runs itself."""
    table = p.table()
    if table.delta_path is None and any(p.at(*words) for words in _CATALOG_CLAUSES):
        return None
    return replace(_clause(p, table), changes_schema=True)


def _clause(p: StatementParser, table: TableRef) -> Statement:
    if p.accept("SET", "TBLPROPERTIES"):
        props = p.group("the TBLPROPERTIES list").properties()
        p.end()
        return Statement(
            "SET TBLPROPERTIES",
            table,
            "",
            lambda spark, path: DeltaTable(spark, path).setProperties(props),
            spark_knows=True,
        )
    if p.accept("UNSET", "TBLPROPERTIES"):
        if_exists = p.accept("IF", "EXISTS")
        keys = p.group("the TBLPROPERTIES keys").keys()
        p.end()
        return Statement(
            "UNSET TBLPROPERTIES",
            table,
            "",
            lambda spark, path: DeltaTable(spark, path).unsetProperties(keys, if_exists),
            spark_knows=True,
        )
    if p.accept("ADD", "CONSTRAINT"):
        name = p.identifier("a constraint name")
        p.expect("CHECK", what="CHECK (<expression>)")
        expression = p.group("the CHECK expression").all_text()
        p.end()
        return Statement(
            "ADD CONSTRAINT",
            table,
            "",
            lambda spark, path: DeltaTable(spark, path).addConstraint(name, expression),
            spark_knows=True,
        )
    if p.accept("DROP", "CONSTRAINT"):
        if_exists = p.accept("IF", "EXISTS")
        name = p.identifier("a constraint name")
        p.end()
        return Statement(
            "DROP CONSTRAINT",
            table,
            "",
            lambda spark, path: DeltaTable(spark, path).dropConstraint(name, if_exists),
            spark_knows=True,
        )
    if p.accept("ADD", "COLUMNS") or p.accept("ADD", "COLUMN"):
        ddl = p.group("the column list") if p.at("(") else p.rest()
        p.end()
        if not ddl.tokens:
            p.fail("a column")
        return Statement(
            "ADD COLUMNS", table, "", lambda spark, path: _add_columns(spark, path, ddl), True
        )
    if p.accept("CLUSTER", "BY"):
        return _cluster_by(p, table)
    if p.accept("DROP", "FEATURE"):
        return _drop_feature(p, table)
    columns = _column_clause(p, table)
    if columns is not None:
        return columns
    clause = " ".join(t.text.upper() for t in p.tokens[p.pos : p.pos + 2])
    refusal = (
        f"ALTER TABLE ... {clause} is not supported on Delta tables yet (supported: SET/UNSET "
        "TBLPROPERTIES, ADD/DROP CONSTRAINT, ADD COLUMNS, RENAME COLUMN, DROP COLUMN(S), "
        "ALTER/CHANGE COLUMN, CLUSTER BY, DROP FEATURE)"
    )
    return Statement("ALTER TABLE", table, "", nothing, spark_knows=True, refusal=refusal)


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
    return Statement(
        "DROP FEATURE",
        table,
        "",
        lambda spark, path: DeltaTable(spark, path).dropFeatureSupport(name, truncate),
    )


def _column_clause(p: StatementParser, table: TableRef) -> Statement | None:
    """RENAME COLUMN, DROP COLUMN(S), ALTER/CHANGE COLUMN; None for any other clause."""
    if p.accept("RENAME", "COLUMN"):
        old = _column_path(p)
        p.expect("TO", what="TO <new name>")
        new = p.identifier("the column's new name")
        p.end()
        return Statement(
            "RENAME COLUMN",
            table,
            "",
            lambda spark, path: _no_result(rename_column(DeltaLog.for_table(path), old, new)),
            spark_knows=True,
        )
    # The column lists are parsed when the statement runs, that is only on a Delta table:
    # the same text on another table is Spark's to parse (and to refuse).
    if p.accept("DROP", "COLUMN") or p.accept("DROP", "COLUMNS"):
        if_exists = p.accept("IF", "EXISTS")
        text = p.group("the column list") if p.at("(") else p.rest()
        p.end()
        return Statement(
            "DROP COLUMNS",
            table,
            "",
            lambda spark, path: _no_result(
                drop_columns(DeltaLog.for_table(path), _paths(text), if_exists)
            ),
            spark_knows=True,
        )
    if p.accept("ALTER") or p.accept("CHANGE"):
        p.accept("COLUMN")
        text = p.rest()
        return Statement(
            "CHANGE COLUMN",
            table,
            "",
            lambda spark, path: _change_columns(spark, path, text),
            spark_knows=True,
        )
    return None


def _cluster_by(p: StatementParser, table: TableRef) -> Statement:
    """``CLUSTER BY (cols)`` / ``CLUSTER BY NONE``: a new ``delta.clustering`` domain."""
    names: list[str] = []
    if not p.accept("NONE"):
        names = p.group("the CLUSTER BY columns").names()
    p.end()

    def run(_spark: SparkSession, path: str) -> None:
        alter_clustering(DeltaLog.for_table(path), names)

    return Statement("CLUSTER BY", table, "", run, spark_knows=True)


def _no_result(_snapshot: object) -> None:
    """ALTER TABLE answers no rows, whatever the core returns."""


def _paths(columns: StatementParser) -> list[tuple[str, ...]]:
    paths = [_column_path(item, whole=True) for item in columns.items()]
    if not paths:
        raise DeltaParseException("DROP COLUMNS needs at least one column")
    return paths


@dataclass(frozen=True)
class _ColumnSpec:
    """One column of ALTER/CHANGE COLUMN as written; the type is parsed by Spark at run time."""

    path: tuple[str, ...]
    type_text: str | None = None
    comment: str | None = None
    first: bool = False
    after: str | None = None
    nullable: bool | None = None


def _column_spec(p: StatementParser) -> _ColumnSpec:
    """``path action`` (Spark's ALTER COLUMN) or ``path name type [NOT NULL] [COMMENT 'c']
    [FIRST | AFTER col]`` (the Hive-style CHANGE COLUMN, which cannot rename)."""
    path = _column_path(p)
    if (
        p.at("TYPE")
        or p.at("COMMENT")
        or p.at("FIRST")
        or p.at("AFTER")
        or p.at("SET")
        or (p.at("DROP"))
    ):
        spec = _column_action(p, path)
        p.end()
        return spec
    name = p.identifier("TYPE, COMMENT, FIRST, AFTER, SET/DROP NOT NULL, or a column definition")
    if name.lower() != path[-1].lower():
        raise DeltaAnalysisException(
            f"Renaming column {'.'.join(path)} to {name} is not supported in Hive-style "
            "CHANGE COLUMN: run ALTER TABLE ... RENAME COLUMN instead"
        )
    type_text = p.text_until("NOT", "COMMENT", "FIRST", "AFTER", what="a data type")
    nullable = False if p.accept("NOT", "NULL") else None
    comment = p.literal("a comment string") if p.accept("COMMENT") else None
    first = p.accept("FIRST")
    after = p.identifier("a column after AFTER") if p.accept("AFTER") else None
    p.end()
    return _ColumnSpec(path, type_text, comment, first, after, nullable)


def _column_action(p: StatementParser, path: tuple[str, ...]) -> _ColumnSpec:
    if p.accept("TYPE"):
        return _ColumnSpec(path, type_text=p.text_until(what="a data type after TYPE"))
    if p.accept("COMMENT"):
        return _ColumnSpec(path, comment=p.literal("a comment string"))
    if p.accept("FIRST"):
        return _ColumnSpec(path, first=True)
    if p.accept("AFTER"):
        return _ColumnSpec(path, after=p.identifier("a column after AFTER"))
    if p.accept("SET", "NOT", "NULL"):
        return _ColumnSpec(path, nullable=False)
    if p.accept("DROP", "NOT", "NULL"):
        return _ColumnSpec(path, nullable=True)
    if p.at("SET", "DEFAULT") or p.at("DROP", "DEFAULT"):
        raise DeltaUnsupportedOperationException(
            "ALTER COLUMN ... SET/DROP DEFAULT is not supported: column defaults need the "
            "allowColumnDefaults table feature, which delta-pyspark does not write"
        )
    p.fail("TYPE, COMMENT, FIRST, AFTER, SET NOT NULL or DROP NOT NULL")


def _column_path(p: StatementParser, whole: bool = False) -> tuple[str, ...]:
    """``a`` / ``s.x`` / ```a.b`.c``; ``whole`` requires it to be all of ``p``'s text."""
    parts = [p.identifier("a column name")]
    while p.accept("."):
        parts.append(p.identifier("a field name after '.'"))
    if whole:
        p.end()
    return tuple(parts)


def _change_columns(spark: SparkSession, path: str, columns: StatementParser) -> None:
    synced = _sync_identity_column(replace(columns, pos=0))
    if synced is not None:
        sync_identity(
            DeltaLog.for_table(path),
            synced,
            lambda snapshot, name: value_range(spark, snapshot, name),
        )
        return
    specs = [_column_spec(item) for item in columns.items()]
    if not specs:
        raise DeltaParseException("ALTER COLUMN needs at least one column")
    changes = [
        ColumnChange(
            spec.path,
            None if spec.type_text is None else _data_type(spark, spec.type_text),
            spec.comment,
            spec.first,
            spec.after,
            spec.nullable,
        )
        for spec in specs
    ]
    change_columns(DeltaLog.for_table(path), changes)


def _sync_identity_column(p: StatementParser) -> tuple[str, ...] | None:
    """The column of ``col SYNC IDENTITY``; None for any other ALTER COLUMN text."""
    column = _column_path(p)
    if not p.accept("SYNC", "IDENTITY"):
        return None
    p.end()
    return column


def _data_type(spark: SparkSession, text: str) -> DataType:
    """A SQL type as Spark parses it (``bigint``, ``decimal(10,2)``, ``struct<a:int>``)."""
    parsed = data_type_json(spark, text)
    return data_type_from_json(json.loads(parsed))


def _add_columns(spark: SparkSession, path: str, columns: StatementParser) -> None:
    from delta_pyspark.core.commands.alter_table import add_columns
    from delta_pyspark.core.protocol.generated_columns import generation_expressions
    from delta_pyspark.core.protocol.identity_columns import identity_columns
    from delta_pyspark.spark.types import from_spark_schema, spark_schema_from_ddl

    for column in columns.items():
        words = column.tokens
        if len(words) > 2 and (words[-1].is_word("FIRST") or words[-2].is_word("AFTER")):
            raise DeltaUnsupportedOperationException(
                f"ADD COLUMNS ... FIRST/AFTER is not supported ({column.all_text()}): new "
                "columns go last"
            )
    ddl = columns.all_text()
    schema = from_spark_schema(spark_schema_from_ddl(spark, ddl))
    if identity_columns(schema):
        raise DeltaUnsupportedOperationException(
            "ALTER TABLE ADD COLUMNS cannot add an IDENTITY column: the table's existing rows "
            "would have no values for it"
        )
    if generation_expressions(schema):  # existing rows would have no values for them
        raise DeltaUnsupportedOperationException(
            f"ADD COLUMNS ... GENERATED ALWAYS AS is not supported ({ddl}): generated columns "
            "are declared when the table is created"
        )
    add_columns(DeltaLog.for_table(path), schema.fields)
