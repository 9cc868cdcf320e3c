"""The operations of a reference script, executed the same way by both implementations.

A script is a list of JSON-able dicts (``{"op": "delete", "path": ..., "condition": ...}``).
``execute`` runs one of them on a SparkSession through a ``tables`` module: delta-spark's
``delta.tables`` in the reference worker (``worker.py``), ``delta_pyspark.tables`` in the test
process. Why one executor for both sides: a difference the tests find is then a difference
of the implementations, never of two hand-written translations of the same step.

Every result is made of plain JSON values (``plain``) so that it crosses the worker's pipe
unchanged and compares with ``==``: rows are lists sorted by their JSON text, errors are
``{"type", "condition", "message"}`` (PySpark's exception class, ``getCondition()``, text).
This module imports neither implementation: the worker must not load ours.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

Op = dict[str, Any]
Result = dict[str, Any]


def plain(value: Any) -> Any:
    """A JSON value for a Spark value: Rows become lists (or dicts when nested), decimals and
    times their text, bytes their hex, map keys text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "asDict") and isinstance(value, tuple):  # a nested Row
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return str(value)


def sorted_rows(rows: list[Any]) -> list[list[Any]]:
    """Rows as sorted lists of plain values (an order-free comparison of two reads)."""
    lists = [[plain(v) for v in row] for row in rows]
    return sorted(lists, key=lambda r: json.dumps(r, sort_keys=True))


def describe_error(error: BaseException) -> dict[str, Any]:
    """What the tests compare of an error: the exception class, delta-spark's error
    condition (PySpark's ``getCondition()``, or our ``error_class``) and the message."""
    condition = None
    get_condition = getattr(error, "getCondition", None)
    if callable(get_condition):
        try:
            condition = get_condition()
        except Exception:  # a PySpark exception made without a condition
            condition = None
    if condition is None:
        condition = getattr(error, "error_class", None)
    # our exceptions are subclasses of PySpark's (e.g. SchemaMismatchError of
    # AnalysisException): the PySpark class is what a user catches on both sides
    pyspark_type = next(
        (c.__name__ for c in type(error).__mro__ if c.__module__.startswith("pyspark.")),
        type(error).__name__,
    )
    return {
        "type": type(error).__name__,
        "pysparkType": pyspark_type,
        "condition": condition,
        "message": str(error)[:3000],
    }


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def _frame(spark: Any, data: dict[str, Any]) -> Any:
    """A DataFrame of a query (``{"sql": ...}``, e.g. over a ``view``), or of the given rows
    and DDL schema, made by a SQL ``VALUES`` list: a local relation planned in the JVM, so no
    Python worker is started (``createDataFrame`` on a list ships the rows through one, which
    costs seconds per script)."""
    from pyspark.sql.types import _parse_datatype_string

    if "sql" in data:
        return spark.sql(data["sql"])
    schema = _parse_datatype_string(data["schema"])
    columns = ", ".join(
        f"CAST(col{i + 1} AS {f.dataType.simpleString()}) AS `{f.name}`"
        for i, f in enumerate(schema.fields)
    )
    if not data["rows"]:
        return spark.sql(
            f"SELECT {columns} FROM VALUES ({', '.join(['NULL'] * len(schema))}) WHERE false"
        )
    values = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in data["rows"])
    return spark.sql(f"SELECT {columns} FROM VALUES {values}")


def _table(spark: Any, tables: ModuleType, op: Op) -> Any:
    return tables.DeltaTable.forPath(spark, op["path"])


def _sql(spark: Any, tables: ModuleType, op: Op) -> Any:
    return sorted_rows(spark.sql(op["sql"]).collect())


def _conf(spark: Any, tables: ModuleType, op: Op) -> Any:
    if op.get("value") is None:
        spark.conf.unset(op["key"])
    else:
        spark.conf.set(op["key"], op["value"])
    return None


def _create(spark: Any, tables: ModuleType, op: Op) -> Any:
    builder = tables.DeltaTable.create(spark).location(op["path"])
    for column in op["columns"]:
        identity = column.get("identity")
        builder = builder.addColumn(
            column["name"],
            column["type"],
            nullable=column.get("nullable", True),
            generatedAlwaysAs=(
                tables.IdentityGenerator(**identity) if identity else column.get("generated")
            ),
        )
    if op.get("partitionedBy"):
        builder = builder.partitionedBy(*op["partitionedBy"])
    if op.get("clusterBy"):
        builder = builder.clusterBy(*op["clusterBy"])
    for key, value in op.get("properties", {}).items():
        builder = builder.property(key, value)
    builder.execute()
    return None


def _view(spark: Any, tables: ModuleType, op: Op) -> Any:
    """A temporary view of a table by path (``format``: delta, parquet, ...)."""
    reader = spark.read.format(op.get("format", "delta"))
    reader.load(op["path"]).createOrReplaceTempView(op["name"])
    return None


def _write(spark: Any, tables: ModuleType, op: Op) -> Any:
    frame = _frame(spark, op)
    if op.get("repartition"):
        frame = frame.repartition(op["repartition"])
    writer = frame.write.format(op.get("format", "delta"))
    writer = writer.mode(op.get("mode", "append"))
    if op.get("partitionBy"):
        writer = writer.partitionBy(*op["partitionBy"])
    writer.options(**op.get("options", {})).save(op["path"])
    return None


def _read(spark: Any, tables: ModuleType, op: Op) -> Any:
    frame = spark.read.format("delta").options(**op.get("options", {})).load(op["path"])
    if op.get("select"):
        frame = frame.selectExpr(*op["select"])
    return sorted_rows(frame.collect())


def _changes(spark: Any, tables: ModuleType, op: Op) -> Any:
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    reader = reader.option("startingVersion", op.get("start", 0))
    if op.get("end") is not None:
        reader = reader.option("endingVersion", op["end"])
    return sorted_rows(reader.load(op["path"]).drop("_commit_timestamp").collect())


def _history(spark: Any, tables: ModuleType, op: Op) -> Any:
    rows = _table(spark, tables, op).history().collect()
    keep = ("version", "operation", "operationParameters", "operationMetrics")
    return sorted((plain({k: row[k] for k in keep}) for row in rows), key=lambda h: h["version"])


def _detail(spark: Any, tables: ModuleType, op: Op) -> Any:
    return plain(_table(spark, tables, op).detail().collect()[0].asDict())


def _delete(spark: Any, tables: ModuleType, op: Op) -> Any:
    _table(spark, tables, op).delete(op.get("condition"))
    return None


def _update(spark: Any, tables: ModuleType, op: Op) -> Any:
    table = _table(spark, tables, op)
    if op.get("condition") is None:
        table.update(set=op["set"])
    else:
        table.update(op["condition"], op["set"])
    return None


def _merge(spark: Any, tables: ModuleType, op: Op) -> Any:
    table = _table(spark, tables, op).alias("t")
    builder = table.merge(_frame(spark, op["source"]).alias("s"), op["condition"])
    for clause in op["clauses"]:
        # e.g. whenMatchedUpdateAll(condition), whenNotMatchedInsert(condition, values)
        when, action = clause["when"], clause["action"]
        method = getattr(
            builder, "when" + when[0].upper() + when[1:] + action[0].upper() + action[1:]
        )
        if action in ("update", "insert"):
            builder = method(clause.get("condition"), clause["set"])
        else:
            builder = method(clause.get("condition"))
    builder.execute()
    return None


def _optimize(spark: Any, tables: ModuleType, op: Op) -> Any:
    builder = _table(spark, tables, op).optimize()
    if op.get("where"):
        builder = builder.where(op["where"])
    if op.get("zorder"):
        builder.executeZOrderBy(*op["zorder"])
    else:
        builder.executeCompaction()
    return None


def _vacuum(spark: Any, tables: ModuleType, op: Op) -> Any:
    _table(spark, tables, op).vacuum(op.get("hours"))
    return None


def _restore(spark: Any, tables: ModuleType, op: Op) -> Any:
    _table(spark, tables, op).restoreToVersion(op["version"])
    return None


def _clone(spark: Any, tables: ModuleType, op: Op) -> Any:
    table = _table(spark, tables, op)
    if op.get("version") is None:
        table.clone(op["target"], op.get("shallow", False))
    else:
        table.cloneAtVersion(op["version"], op["target"], op.get("shallow", False))
    return None


def _stream(spark: Any, tables: ModuleType, op: Op) -> Any:
    """One ``Trigger.AvailableNow`` run from a Delta source into a Delta sink."""
    source = spark.readStream.format("delta").options(**op.get("options", {})).load(op["source"])
    query = (
        source.writeStream.format("delta")
        .option("checkpointLocation", op["checkpoint"])
        .trigger(availableNow=True)
        .start(op["target"])
    )
    query.awaitTermination(300)
    if query.exception() is not None:
        raise query.exception()  # type: ignore[misc]
    return None


def _drop_feature(spark: Any, tables: ModuleType, op: Op) -> Any:
    _table(spark, tables, op).dropFeatureSupport(op["feature"], op.get("truncateHistory"))
    return None


OPERATIONS: dict[str, Callable[[Any, ModuleType, Op], Any]] = {
    "sql": _sql,
    "view": _view,
    "conf": _conf,
    "create": _create,
    "write": _write,
    "read": _read,
    "changes": _changes,
    "history": _history,
    "detail": _detail,
    "delete": _delete,
    "update": _update,
    "merge": _merge,
    "optimize": _optimize,
    "vacuum": _vacuum,
    "restore": _restore,
    "clone": _clone,
    "stream": _stream,
    "dropFeature": _drop_feature,
}


def execute(spark: Any, tables: ModuleType, op: Op) -> Result:
    """Run one operation: ``{"ok": value}``, or ``{"error": describe_error(...)}`` for any
    exception (a script goes on after an error: an expected mistake is a step like others)."""
    try:
        value = OPERATIONS[op["op"]](spark, tables, op)
    except Exception as error:
        return {"error": describe_error(error)}
    return {"ok": value}
