"""Delta's SQL statements through Spark's own ``spark.sql``.

The session extension's parser (``DeltaSqlParser.java``) looks at the first words of each
statement; when they may start one of Delta's statements (MERGE, UPDATE, DELETE, DESCRIBE
HISTORY/DETAIL, OPTIMIZE, VACUUM, RESTORE, CONVERT TO DELTA, CREATE ... CLONE, GENERATE,
REORG, ALTER TABLE, SHOW TBLPROPERTIES) it asks ``DeltaCommands.describe`` here. A statement
on a Delta table becomes a command node whose ``run`` calls ``DeltaCommands.run``, which
executes it through the same Python API as ``DeltaTable`` (``tables.py``); anything else
(another table format, a statement Delta does not add) answers ``N`` and goes to Spark's
parser untouched. Time travel in queries (``VERSION AS OF``/``TIMESTAMP AS OF``) on a Delta
table is rewritten by the parser into the read options ``planner.time_travel`` reads, with
the table's path from ``DeltaCommands.timeTravel``.

Conditions, assignments and values are handed to the Python API as the user's SQL text, cut
out of the statement by ``sql_text``'s tokenizer (aware of quotes, backticks, parentheses),
so Spark parses each expression as written. Errors raised here reach the user as the same
typed exception (``planner._answer_error``'s tokens).

Table names resolve as delta-spark's: ``delta.`path``` is a path; a name is looked up in the
session catalog (its location), and a name the catalog does not know falls back to where
``DeltaTable.forName`` looks (``spark.catalog.table_location``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.core.log_store import to_local_path
from delta_pyspark.core.restore import METRIC_COLUMNS
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaParseException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
)
from delta_pyspark.spark.catalog import lookup, refresh, table_location
from delta_pyspark.spark.integration import (
    classic_session,
    helper_class,
    java_frame,
    jvm,
    python_frame,
    python_session,
    serve_callbacks,
    table_definition,
)
from delta_pyspark.spark.optimize import METRICS_DDL
from delta_pyspark.spark.planner import _answer_error
from delta_pyspark.spark.table_writes import TableDefinition, replace_table
from delta_pyspark.sql_text import (
    StatementParser,
    TableRef,
    parameter_marker,
    parse_assignments,
    parse_keys,
    parse_properties,
    split_top,
    tokenize,
    unqualified,
    unquote,
    without_qualifier,
)
from delta_pyspark.tables import DETAIL_DDL, HISTORY_DDL, DeltaTable

# ---------------------------------------------------------------------- statements


@dataclass
class Statement:
    """One parsed Delta statement: what it acts on and how to run it."""

    kind: str  # for messages: "MERGE", "DESCRIBE HISTORY", ...
    table: TableRef | None  # the Delta table it needs (None: CONVERT, which makes one)
    columns: str  # DDL of its result's columns ("" for none)
    execute: Callable[[SparkSession, str], DataFrame | None]  # (session, table path)
    # Spark has its own meaning for the statement on a table of another format.
    spark_knows: bool = False
    # Why it cannot run on a Delta table (a clause not supported yet), or None.
    refusal: str | None = None
    # It may change the table's schema or partitioning, which a catalog entry shows.
    changes_schema: bool = False


_AFFECTED = "num_affected_rows long"
_MERGE_COLUMNS = (
    "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long"
)
_CLONE_COLUMNS = (
    ("sourceTableSize", "source_table_size"),
    ("sourceNumOfFiles", "source_num_of_files"),
    ("numRemovedFiles", "num_removed_files"),
    ("numCopiedFiles", "num_copied_files"),
    ("removedFilesSize", "removed_files_size"),
    ("copiedFilesSize", "copied_files_size"),
)
_CLONE_DDL = ", ".join(f"{column} long" for _, column in _CLONE_COLUMNS)


def parse(sql: str) -> Statement | None:
    """The Delta statement ``sql`` is, or None when it is none of Delta's (Spark's then)."""
    statement = _statement(StatementParser(sql))
    marker = parameter_marker(sql)
    if statement is not None and marker is not None and statement.refusal is None:
        # Spark binds parameters in expressions it parses; these texts go to Python unbound.
        statement.refusal = (
            f"{statement.kind} does not take query parameters yet (found {marker!r}): write "
            "the values into the statement"
        )
    return statement


def _statement(p: StatementParser) -> Statement | None:
    if p.accept("MERGE"):
        return _merge(p)
    if p.accept("UPDATE"):
        return _update(p)
    if p.accept("DELETE", "FROM"):
        return _delete(p)
    if p.accept("DESCRIBE") or p.accept("DESC"):
        if p.peek(1) is None:  # DESCRIBE history: a table called history
            return None
        if p.accept("HISTORY"):
            return _history(p)
        if p.accept("DETAIL"):
            return _detail(p)
        return None
    if p.accept("OPTIMIZE"):
        return _optimize(p)
    if p.accept("VACUUM"):
        return _vacuum(p)
    if p.accept("RESTORE"):
        return _restore(p)
    if p.accept("CONVERT", "TO", "DELTA"):
        return _convert(p)
    if p.at("CREATE"):
        return _clone(p)
    if p.accept("GENERATE"):
        return _generate(p)
    if p.accept("REORG"):
        return _reorg(p)
    if p.accept("ALTER", "TABLE"):
        altered = _alter(p)
        return None if altered is None else replace(altered, changes_schema=True)
    if p.accept("SHOW", "TBLPROPERTIES"):
        return _show_properties(p)
    return None


def _merge(p: StatementParser) -> Statement:
    evolve = p.accept("WITH", "SCHEMA", "EVOLUTION")
    p.expect("INTO", what="INTO after MERGE")
    target = p.table()
    target_alias = p.alias("USING")
    p.expect("USING", what="USING <source> in MERGE")
    if p.at("("):
        source_query: str | None = p.group("the source query")
        source: TableRef | None = None
    else:
        source_query, source = None, p.table()
    source_alias = p.alias("ON")
    p.expect("ON", what="ON <merge condition>")
    condition = p.text_until("WHEN", what="a merge condition after ON")
    clauses: list[tuple[str, str, str | None, Any]] = []
    while p.accept("WHEN"):
        clauses.append(_merge_clause(p))
    if not clauses:
        p.fail("at least one WHEN [NOT] MATCHED clause")
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        if source_query is not None:
            src = spark.sql(source_query)
        else:
            assert source is not None
            src = _read(spark, source)
        alias = source_alias or (source.parts[-1] if source and not source.delta_path else None)
        if alias:
            src = src.alias(alias)
        t_alias = target_alias or _own_name(target)
        builder = DeltaTable(spark, path, t_alias).merge(src, condition)
        if evolve:
            builder = builder.withSchemaEvolution()
        for when, action, cond, payload in clauses:
            columns = unqualified(payload, t_alias) if payload else payload
            builder = _add_clause(builder, when, action, cond, columns)
        return builder.execute()

    return Statement("MERGE", target, _MERGE_COLUMNS, run, changes_schema=True)


def _merge_clause(p: StatementParser) -> tuple[str, str, str | None, Any]:
    if p.accept("MATCHED"):
        when = "matched"
    elif p.accept("NOT", "MATCHED"):
        when = "notMatchedBySource" if p.accept("BY", "SOURCE") else "notMatched"
        if when == "notMatched":
            p.accept("BY", "TARGET")
    else:
        p.fail("MATCHED or NOT MATCHED after WHEN")
    cond = p.text_until("THEN", what="a clause condition after AND") if p.accept("AND") else None
    p.expect("THEN", what="THEN in a WHEN clause")
    if when == "notMatched":
        p.expect("INSERT", what="INSERT in a WHEN NOT MATCHED clause")
        if p.accept("*"):
            return when, "insertAll", cond, None
        columns = [c.strip().strip("`") for c in split_top(p.group("the INSERT column list"))]
        p.expect("VALUES", what="VALUES after the INSERT column list")
        values = split_top(p.group("the INSERT values"))
        if len(columns) != len(values) or not columns:
            raise DeltaParseException(
                f"INSERT in MERGE names {len(columns)} columns but gives {len(values)} values"
            )
        return when, "insert", cond, dict(zip(columns, values, strict=True))
    if p.accept("DELETE"):
        return when, "delete", cond, None
    p.expect("UPDATE", "SET", what="UPDATE SET or DELETE")
    if p.accept("*"):
        if when != "matched":
            p.fail("column = expression (UPDATE SET * needs a source row)")
        return when, "updateAll", cond, None
    return (
        when,
        "update",
        cond,
        parse_assignments(p.text_until("WHEN", what="assignments"), "MERGE"),
    )


def _add_clause(builder: Any, when: str, action: str, cond: str | None, payload: Any) -> Any:
    if when == "matched":
        if action == "delete":
            return builder.whenMatchedDelete(cond)
        if action == "updateAll":
            return builder.whenMatchedUpdateAll(cond)
        return builder.whenMatchedUpdate(cond, payload)
    if when == "notMatched":
        if action == "insertAll":
            return builder.whenNotMatchedInsertAll(cond)
        return builder.whenNotMatchedInsert(cond, payload)
    if action == "delete":
        return builder.whenNotMatchedBySourceDelete(cond)
    return builder.whenNotMatchedBySourceUpdate(cond, payload)


def _where(p: StatementParser, *stops: str) -> str | None:
    if p.accept("WHERE"):
        return p.text_until(*stops, what="a condition after WHERE")
    return None


def _update(p: StatementParser) -> Statement:
    table = p.table()
    qualifier = p.alias("SET") or _own_name(table)
    p.expect("SET", what="SET in UPDATE")
    assignments = parse_assignments(p.text_until("WHERE", what="assignments after SET"), "UPDATE")
    condition = without_qualifier(_where(p), qualifier)
    p.end()
    values = {
        key: without_qualifier(value, qualifier) or value
        for key, value in unqualified(assignments, qualifier).items()
    }

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).update(condition, values)

    return Statement("UPDATE", table, _AFFECTED, run, spark_knows=True)


def _own_name(table: TableRef) -> str | None:
    """The name a statement's columns may be qualified with when it gives no alias."""
    return None if table.delta_path else table.parts[-1]


def _delete(p: StatementParser) -> Statement:
    table = p.table()
    qualifier = p.alias("WHERE") or _own_name(table)
    condition = without_qualifier(_where(p), qualifier)
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).delete(condition)

    return Statement("DELETE", table, _AFFECTED, run, spark_knows=True)


def _history(p: StatementParser) -> Statement:
    table = p.table()
    limit = p.integer("a row count after LIMIT") if p.accept("LIMIT") else None
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).history(limit)

    return Statement("DESCRIBE HISTORY", table, HISTORY_DDL, run)


def _detail(p: StatementParser) -> Statement:
    table = p.table()
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).detail()

    return Statement("DESCRIBE DETAIL", table, DETAIL_DDL, run)


def _optimize(p: StatementParser) -> Statement:
    table = p.table()
    condition = _where(p, "ZORDER")
    zorder: list[str] = []
    if p.accept("ZORDER", "BY"):
        text = p.group("the ZORDER BY columns") if p.at("(") else p.text_until(what="columns")
        zorder = [c.strip() for c in split_top(text)]
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        builder = DeltaTable(spark, path).optimize()
        if condition is not None:
            builder = builder.where(condition)
        return builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()

    return Statement("OPTIMIZE", table, METRICS_DDL, run)


def _vacuum(p: StatementParser) -> Statement:
    table = p.table()
    hours: float | None = None
    dry_run = False
    while not p.done() and not p.at(";"):
        if p.accept("RETAIN"):
            hours = float(p.literal("a number of hours after RETAIN"))
            p.expect("HOURS", what="HOURS after the retention")
        elif p.accept("DRY", "RUN"):
            dry_run = True
        else:
            p.fail("RETAIN <n> HOURS or DRY RUN")
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        result = DeltaTable(spark, path).vacuum(hours, dryRun=dry_run)
        if dry_run:
            return result
        # delta-spark's SQL VACUUM answers the table's path once the files are deleted.
        return spark.createDataFrame([(DeltaLog.for_table(path).table_root,)], "path string")

    return Statement("VACUUM", table, "path string", run)


def _restore(p: StatementParser) -> Statement:
    p.accept("TABLE")
    table = p.table()
    p.accept("TO")
    version, timestamp = _as_of(p, required=True)
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        dt = DeltaTable(spark, path)
        if version is not None:
            return dt.restoreToVersion(version)
        assert timestamp is not None
        return dt.restoreToTimestamp(timestamp)

    columns = ", ".join(f"{column} long" for _, column in METRIC_COLUMNS)
    return Statement("RESTORE", table, columns, run, changes_schema=True)


def _as_of(p: StatementParser, required: bool) -> tuple[int | None, str | None]:
    if p.accept("VERSION", "AS", "OF"):
        return p.integer("a version number after VERSION AS OF"), None
    if p.accept("TIMESTAMP", "AS", "OF"):
        return None, p.literal("a timestamp string after TIMESTAMP AS OF")
    if required:
        p.fail("VERSION AS OF <version> or TIMESTAMP AS OF '<timestamp>'")
    return None, None


def _convert(p: StatementParser) -> Statement:
    source = p.table()
    if p.accept("NO", "STATISTICS"):
        raise DeltaUnsupportedOperationException(
            "CONVERT TO DELTA ... NO STATISTICS is not supported: statistics are always collected"
        )
    partitions = p.group("the PARTITIONED BY columns") if p.accept("PARTITIONED", "BY") else None
    p.end()
    if len(source.parts) == 2:
        identifier = f"{source.parts[0]}.`{source.parts[1].replace('`', '``')}`"
    else:
        identifier = source.text

    def run(spark: SparkSession, path: str) -> None:
        DeltaTable.convertToDelta(spark, identifier, partitions)

    return Statement("CONVERT TO DELTA", None, "", run)


def _clone(p: StatementParser) -> Statement | None:
    p.expect("CREATE")
    replace = p.accept("OR", "REPLACE")
    if not p.accept("TABLE"):
        return None  # CREATE VIEW, CREATE FUNCTION, ...
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    target = p.table()
    shallow = True
    if p.accept("SHALLOW"):
        shallow = True
    elif p.accept("DEEP"):
        shallow = False
    if not p.accept("CLONE"):
        return None  # CREATE TABLE ... USING / AS SELECT: not a clone
    source = p.table()
    version, timestamp = _as_of(p, required=False)
    properties: dict[str, str] = {}
    location: str | None = None
    while not p.done() and not p.at(";"):
        if p.accept("TBLPROPERTIES"):
            properties.update(parse_properties(p.group("the TBLPROPERTIES list")))
        elif p.accept("LOCATION"):
            location = p.literal("a path after LOCATION")
        else:
            p.fail("TBLPROPERTIES (...) or LOCATION '<path>'")
    p.end()
    if location is not None and target.delta_path is None:
        raise DeltaUnsupportedOperationException(
            f"CREATE TABLE {target.text} ... CLONE with LOCATION is not supported: tables "
            "are not registered in the catalog here; clone to delta.`<path>` instead"
        )
    destination = location or target.delta_path or target.text

    def run(spark: SparkSession, path: str) -> DataFrame:
        from delta_pyspark.spark.clone import execute_clone, target_location

        if if_not_exists and DeltaLog(target_location(spark, destination)).is_delta_table():
            result_row: tuple[int, ...] = (0,) * len(_CLONE_COLUMNS)
        else:
            result = execute_clone(
                spark,
                DeltaLog.for_table(path),
                destination,
                shallow=shallow,
                replace=replace,
                properties=properties,
                version=version,
                timestamp=timestamp,
            )
            result_row = tuple(int(result.metrics.get(k, 0)) for k, _ in _CLONE_COLUMNS)
        return spark.createDataFrame([result_row], _CLONE_DDL)

    return Statement("CLONE", source, _CLONE_DDL, run)


def _generate(p: StatementParser) -> Statement:
    mode = p.identifier("a manifest mode (symlink_format_manifest)")
    p.expect("FOR", "TABLE", what="FOR TABLE")
    table = p.table()
    p.end()

    def run(spark: SparkSession, path: str) -> None:
        DeltaTable(spark, path).generate(mode)

    return Statement("GENERATE", table, "", run)


def _reorg(p: StatementParser) -> Statement:
    p.expect("TABLE", what="TABLE after REORG")
    table = p.table()
    condition = _where(p, "APPLY")
    p.expect("APPLY", what="APPLY (PURGE)")
    action = p.group("APPLY's (PURGE)").upper()
    if action != "PURGE":
        raise DeltaUnsupportedOperationException(
            f"REORG TABLE ... APPLY ({action}) is not supported: only APPLY (PURGE) is"
        )
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).reorgPurge(condition)

    return Statement("REORG", table, METRICS_DDL, run)


def _alter(p: StatementParser) -> Statement | None:
    table = p.table()
    if p.accept("SET", "TBLPROPERTIES"):
        props = parse_properties(p.group("the TBLPROPERTIES list"))
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
        keys = parse_keys(p.group("the TBLPROPERTIES keys"))
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
        expression = p.group("the CHECK expression")
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
        ddl = p.group("the column list") if p.at("(") else p.text_until(what="a column")
        p.end()
        return Statement(
            "ADD COLUMNS", table, "", lambda spark, path: _add_columns(spark, path, ddl), True
        )
    clause = " ".join(t.text.upper() for t in p.tokens[p.pos : p.pos + 2])
    refusal = (
        f"ALTER TABLE ... {clause} is not supported on Delta tables yet (supported: SET/UNSET "
        "TBLPROPERTIES, ADD/DROP CONSTRAINT, ADD COLUMNS)"
    )
    return Statement("ALTER TABLE", table, "", _nothing, spark_knows=True, refusal=refusal)


def _nothing(spark: SparkSession, path: str) -> None:
    """The run of a statement refused before it runs."""


def _add_columns(spark: SparkSession, path: str, ddl: str) -> None:
    from pyspark.sql.types import StructType as SparkStruct

    from delta_pyspark.core.alter_table import add_columns
    from delta_pyspark.spark.types import from_spark_schema

    for column in split_top(ddl):
        words = tokenize(column)
        if len(words) > 2 and (words[-1].is_word("FIRST") or words[-2].is_word("AFTER")):
            raise DeltaUnsupportedOperationException(
                f"ADD COLUMNS ... FIRST/AFTER is not supported ({column}): new columns go last"
            )
    parsed = jvm(spark).org.apache.spark.sql.types.StructType.fromDDL(ddl).json()
    schema = from_spark_schema(SparkStruct.fromJson(json.loads(parsed)))
    add_columns(DeltaLog.for_table(path), schema.fields)


def _show_properties(p: StatementParser) -> Statement:
    table = p.table()
    key = parse_keys(p.group("a property key"))[0] if p.at("(") else None
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        snapshot = DeltaLog.for_table(path).snapshot()
        protocol = snapshot.protocol
        shown = dict(snapshot.configuration)
        shown["delta.minReaderVersion"] = str(protocol.min_reader_version)
        shown["delta.minWriterVersion"] = str(protocol.min_writer_version)
        features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
        shown.update({f"delta.feature.{f}": "supported" for f in sorted(features)})
        if key is not None:
            value = shown.get(key, f"Table {table.text} does not have property: {key}")
            return spark.createDataFrame([(key, value)], "key string, value string")
        return spark.createDataFrame(sorted(shown.items()), "key string, value string")

    return Statement("SHOW TBLPROPERTIES", table, "key string, value string", run, True)


# ---------------------------------------------------------------------- tables


def _read(spark: SparkSession, ref: TableRef) -> DataFrame:
    """A MERGE source named as a table: a Delta table (path or name) or anything Spark reads."""
    path = ref.delta_path
    if path is not None:
        return DeltaTable(spark, _existing(path, ref)).toDF()
    kind, location = resolve(spark, ref)
    if kind == "delta":
        assert location is not None
        return DeltaTable(spark, location).toDF()
    if kind == "missing":
        raise DeltaTableNotFoundError(f"MERGE source: table {ref.text} not found")
    return spark.table(ref.text)


def _existing(path: str, ref: TableRef) -> str:
    if not DeltaLog(path).is_delta_table():
        raise DeltaTableNotFoundError(f"{ref.text}: {path} is not a Delta table")
    return path


def resolve(spark: SparkSession, ref: TableRef) -> tuple[str, str | None]:
    """``("delta", path)`` for a Delta table, ``("other", None)`` for a table or view of
    another kind in the session catalog, ``("foreign", None)`` for a table of another catalog
    (Spark's to resolve), ``("missing", looked-in)`` for a name nothing answers to."""
    path = ref.delta_path
    if path is not None:
        return ("delta", path) if DeltaLog(path).is_delta_table() else ("missing", path)
    parts = list(ref.parts)
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) > 2:
        return "foreign", None
    java = jvm(spark)
    catalog = classic_session(spark).sessionState().catalog()
    database = java.scala.Option.apply(parts[0] if len(parts) == 2 else None)
    ident = java.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], database)
    if catalog.isTempView(ident):
        return "other", None
    if catalog.tableExists(ident):
        meta = catalog.getTableMetadata(ident)
        if meta.tableType().name() != "VIEW" and meta.storage().locationUri().isDefined():
            location = to_local_path(str(meta.storage().locationUri().get().toString()))
            if DeltaLog(location).is_delta_table():
                return "delta", location
        return "other", None
    location = table_location(spark, ".".join(parts))
    if DeltaLog(location).is_delta_table():
        return "delta", location
    return "missing", location


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
    raise DeltaAnalysisException(
        f"{statement.kind} needs a Delta table, and {ref.text} is not a Delta table"
    )


def _refresh_entry(spark: SparkSession, ref: TableRef) -> None:
    """After a change by name, the catalog entry shows the log's schema again."""
    if ref.delta_path is None:
        entry = lookup(spark, ref.text)
        if entry is not None and entry.provider == "delta":
            refresh(spark, entry)


def _checked_target(spark: SparkSession, statement: Statement) -> str | None:
    """``_target``, refusing what the statement asks that is not supported on Delta tables."""
    path = _target(spark, statement) if statement.table is not None else ""
    if path is not None and statement.refusal is not None:
        raise DeltaUnsupportedOperationException(statement.refusal)
    return path


# ---------------------------------------------------------------------- the JVM's side


class DeltaCommands:
    """The JVM's ``deltapyspark.DeltaCommands``: Delta statements parsed and run here."""

    def describe(self, session: Any, sql: str) -> str:
        try:
            statement = parse(sql)
            if statement is None:
                return "N"
            if _checked_target(python_session(session), statement) is None:
                return "N"
            return "O" + statement.columns
        except Exception as e:  # answered as text: the JVM raises it, the user gets ``e``
            return _answer_error(e)

    def run(self, session: Any, sql: str) -> Any:
        try:
            spark = python_session(session)
            statement = parse(sql)
            assert statement is not None  # ``describe`` accepted it
            path = _checked_target(spark, statement)
            assert path is not None
            result = statement.execute(spark, path)
            if statement.changes_schema and statement.table is not None:
                _refresh_entry(spark, statement.table)
            if result is None:
                from pyspark.sql.types import StructType

                result = spark.createDataFrame([], StructType([]))
            return java_frame(result)
        except Exception as e:
            return _answer_error(e)

    def timeTravel(self, session: Any, nameParts: str, version: str, timestampSql: str) -> str:
        try:
            spark = python_session(session)
            parts = tuple(nameParts.split("\0")[:-1])
            ref = TableRef(parts, ".".join(parts))
            kind, location = resolve(spark, ref)
            if ref.delta_path is not None:  # the delta source says what is wrong with it
                location = ref.delta_path
            elif kind != "delta":
                return "N"
            assert location is not None
            timestamp = _timestamp_text(spark, timestampSql) if timestampSql else ""
            return f"O{location}\0{version}\0{timestamp}"
        except Exception as e:
            return _answer_error(e)

    def replace(self, session: Any, definition: Any, data: Any) -> str:
        try:
            spark = python_session(session)
            table = TableDefinition.of(table_definition(definition))
            frame = python_frame(data, spark) if data is not None else None
            operation = "CREATE OR REPLACE TABLE" if table.or_create else "REPLACE TABLE"
            replace_table(
                spark, table, frame, operation + (" AS SELECT" if frame is not None else "")
            )
            return "O"
        except Exception as e:
            return _answer_error(e)

    class Java:
        implements: ClassVar[list[str]] = ["deltapyspark.DeltaCommands"]


def _timestamp_text(spark: SparkSession, expression: str) -> str:
    """``TIMESTAMP AS OF``'s expression as the text ``timestampAsOf`` reads: a string literal
    as written, anything else evaluated by Spark (in the session's time zone)."""
    tokens = tokenize(expression)
    if len(tokens) == 1 and tokens[0].kind == "string":
        return unquote(tokens[0])
    row = spark.sql(f"SELECT CAST(({expression}) AS STRING) AS ts").first()
    if row is None or row.ts is None:
        raise DeltaAnalysisException(f"TIMESTAMP AS OF {expression} is null")
    return str(row.ts)


COMMANDS = DeltaCommands()


def enable(spark: SparkSession) -> bool:
    """Register the statements' Python side with the session's JVM (once per gateway); False
    when the session lacks the JVM helper."""
    parser = helper_class(spark, "deltapyspark.DeltaSqlParser")
    if parser is None:
        return False
    serve_callbacks(spark, "commands", lambda: parser.register(COMMANDS))
    return True
