"""The JVM's side of Delta statements: ``DeltaCommands`` answers the session parser and
runs the accepted statements."""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql import Column, SparkSession

from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
)
from delta_pyspark.spark.catalog.session_catalog import refresh_delta_entry
from delta_pyspark.spark.commands.table_writes import TableDefinition, replace_table
from delta_pyspark.spark.jvm.bridge import java_frame, python_column, python_frame, python_session
from delta_pyspark.spark.jvm.helpers import serve_sql_commands
from delta_pyspark.spark.jvm.hooks import classic_in_callbacks, table_definition
from delta_pyspark.spark.sources.callback_service import answer_error
from delta_pyspark.sql import dml, spark_statements
from delta_pyspark.sql.create_table import create_table
from delta_pyspark.sql.grammar import openings, parse
from delta_pyspark.sql.resolve import not_a_delta_table, resolve
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import TableRef


def _target(spark: SparkSession, statement: Statement) -> str | None:
    """The path of the statement's Delta table; None when the statement is Spark's."""
    ref = statement.table
    assert ref is not None
    kind, location = resolve(spark, ref)
    if kind == "delta":
        assert location is not None
        return location
    if kind == "missing":
        where = f" (looked in {location})" if location and location != ref.delta_path else ""
        raise DeltaTableNotFoundError(
            f"{statement.kind}: table {ref.text} not found or not a Delta table{where}"
        )
    if statement.spark_knows or kind == "foreign":
        return None
    raise not_a_delta_table(ref, location, statement.kind)


def _checked_target(spark: SparkSession, statement: Statement) -> str | None:
    """``_target``, refusing what the statement asks that is not supported on Delta tables."""
    path = _target(spark, statement) if statement.table is not None else ""
    if path is not None and statement.refusal is not None:
        raise DeltaUnsupportedOperationException(statement.refusal)
    return path


@classic_in_callbacks
class DeltaCommands:
    """The JVM's ``deltapyspark.DeltaCommands``: Delta statements parsed and run here."""

    def describe(self, session: Any, sql: str, tokens: str) -> str:
        try:
            statement = parse(sql, tokens)
            if statement is None:
                return "N"
            if _checked_target(python_session(session), statement) is None:
                return "N"
            return "\0".join(["O" + statement.columns, *statement.markers])
        except Exception as e:  # answered as text: the JVM raises it, the user gets ``e``
            return answer_error(e)

    def run(self, session: Any, sql: str, tokens: str, values: Any) -> Any:
        try:
            statement = parse(sql, tokens, [str(v) for v in values])
            assert statement is not None  # ``describe`` accepted it
            return _execute(python_session(session), statement)
        except Exception as e:
            return answer_error(e)

    def sparkStatement(self, session: Any, kind: str, nameParts: str, argument: str) -> str:
        """``describe`` for a statement Spark parsed (see ``spark_statements``)."""
        try:
            statement = spark_statements.statement(kind, _parts(nameParts), argument)
            if statement is None or _checked_target(python_session(session), statement) is None:
                return "N"
            return "O" + statement.columns
        except Exception as e:
            return answer_error(e)

    def runSparkStatement(self, session: Any, kind: str, nameParts: str, argument: str) -> Any:
        """``run`` for a statement Spark parsed, once ``sparkStatement`` accepted it."""
        try:
            statement = spark_statements.statement(kind, _parts(nameParts), argument)
            assert statement is not None
            return _execute(python_session(session), statement)
        except Exception as e:
            return answer_error(e)

    def merge(
        self,
        session: Any,
        table: str,
        name: str | None,
        targetAlias: str,
        source: Any,
        sourceAlias: str,
        condition: Any,
        clauses: Any,
        evolve: bool,
    ) -> Any:
        try:
            spark = python_session(session)
            result = dml.merge(
                spark,
                table,
                name,
                targetAlias,
                python_frame(source, spark),
                sourceAlias,
                python_column(condition),
                [_clause(clause) for clause in clauses],
                evolve,
            )
            return java_frame(result)
        except Exception as e:
            return answer_error(e)

    def update(self, session: Any, table: str, condition: Any, assignments: Any) -> Any:
        try:
            spark = python_session(session)
            return java_frame(
                dml.update(spark, table, _column(condition), _assignments(assignments) or {})
            )
        except Exception as e:
            return answer_error(e)

    def delete(self, session: Any, table: str, condition: Any) -> Any:
        try:
            spark = python_session(session)
            return java_frame(dml.delete(spark, table, _column(condition)))
        except Exception as e:
            return answer_error(e)

    def refusal(self, condition: str, message: str) -> str:
        return answer_error(DeltaAnalysisException(f"[{condition}] {message}"))

    # Delta Connect needs the ``connect`` extra's protobuf: imported when a client calls
    def connectRelation(self, planner: Any, relation: bytes) -> Any:
        from delta_pyspark.connect import delta_connect

        try:
            return java_frame(delta_connect.relation(planner, bytes(relation)))
        except Exception as e:
            return answer_error(e)

    def connectCommand(self, planner: Any, command: bytes) -> str:
        from delta_pyspark.connect import delta_connect

        try:
            delta_connect.command(planner, bytes(command))
            return "O"
        except Exception as e:
            return answer_error(e)

    def timeTravel(self, session: Any, nameParts: str, version: str, timestamp: str) -> str:
        try:
            spark = python_session(session)
            parts = _parts(nameParts)
            ref = TableRef(parts, ".".join(parts))
            kind, location = resolve(spark, ref)
            if ref.delta_path is not None:  # the delta source says what is wrong with it
                location = ref.delta_path
            elif kind != "delta":
                return "N"
            assert location is not None
            text = _timestamp_text(spark, timestamp) if timestamp else ""
            return f"O{location}\0{version}\0{text}"
        except Exception as e:
            return answer_error(e)

    def define(self, session: Any, definition: Any, data: Any) -> str:
        try:
            spark = python_session(session)
            table = TableDefinition.of(table_definition(definition))
            frame = python_frame(data, spark) if data is not None else None
            if table.create:
                create_table(spark, table, frame)
                return "O"
            operation = "CREATE OR REPLACE TABLE" if table.or_create else "REPLACE TABLE"
            replace_table(
                spark, table, frame, operation + (" AS SELECT" if frame is not None else "")
            )
            return "O"
        except Exception as e:
            return answer_error(e)

    class Java:
        implements: ClassVar[list[str]] = ["deltapyspark.DeltaCommands"]


def _execute(spark: SparkSession, statement: Statement) -> Any:
    """Run an accepted statement: its result rows as a JVM Dataset (none: no columns)."""
    path = _checked_target(spark, statement)
    assert path is not None
    result = statement.execute(spark, path)
    ref = statement.table
    if statement.changes_schema and ref is not None and ref.delta_path is None:
        refresh_delta_entry(spark, ref.text)
    if result is None:
        from pyspark.sql.types import StructType

        result = spark.createDataFrame([], StructType([]))
    return java_frame(result)


def _parts(name_parts: str) -> tuple[str, ...]:
    """A multipart name as the JVM sends it: each part followed by a NUL."""
    return tuple(name_parts.split("\0")[:-1])


def _clause(java_map: Any) -> dml.Clause:
    """A MERGE clause as ``DeltaDml`` describes it (a JVM Map) in Python values."""
    return dml.Clause(
        when=java_map["when"],
        action=java_map["action"],
        condition=_column(java_map.get("condition")),
        star=bool(java_map.get("star")),
        assignments=_assignments(java_map.get("assignments")),
    )


def _column(java_column: Any) -> Column | None:
    return None if java_column is None else python_column(java_column)


def _assignments(java_map: Any) -> dict[str, Column] | None:
    if java_map is None:
        return None
    return {key: python_column(value) for key, value in java_map.items()}


def _timestamp_text(spark: SparkSession, timestamp: str) -> str:
    """``TIMESTAMP AS OF``'s value (``s`` and a string literal's value, or ``e`` and an
    expression's SQL) as the text ``timestampAsOf`` reads: a string as written, anything
    else evaluated by Spark (in the session's time zone)."""
    if timestamp.startswith("s"):
        return timestamp[1:]
    expression = timestamp[1:]
    row = spark.sql(f"SELECT CAST(({expression}) AS STRING) AS ts").first()
    if row is None or row.ts is None:
        raise DeltaAnalysisException(f"TIMESTAMP AS OF {expression} is null")
    return str(row.ts)


COMMANDS = DeltaCommands()


def enable(spark: SparkSession) -> bool:
    """Register the statements' Python side with the session's JVM (once per gateway); False
    when the session lacks the JVM helper."""
    return serve_sql_commands(spark, COMMANDS, openings())
