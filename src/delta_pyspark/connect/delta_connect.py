"""delta-spark's Delta Connect messages, served: its client (``delta.connect.tables.
DeltaTable`` of the ``delta-spark`` package) sends each ``DeltaTable`` operation as a
``DeltaRelation`` (reads, DML, history, ...: a result to plan) or a ``DeltaCommand``
(vacuum, clone, create, ...), which ``DeltaConnectMessages.java`` hands here. Each runs as
``delta_pyspark.tables.DeltaTable`` on the classic session behind the client's, with Spark's
messages inside (relations, expressions, types) planned by the server's own planner.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from delta_pyspark.connect.messages import DeltaCommand, DeltaRelation
from delta_pyspark.exceptions import DeltaIllegalArgumentException
from delta_pyspark.spark.jvm.connect import data_type, expression, planned, planner_session
from delta_pyspark.tables import DeltaTable, DeltaTableBuilder, IdentityGenerator

_CREATE_MODES = {1: "create", 2: "createIfNotExists", 3: "replace", 4: "createOrReplace"}


def relation(planner: Any, data: bytes) -> DataFrame:
    """The result of a ``DeltaRelation`` (serialized), in the planner's session."""
    spark, kind, body = _decoded(planner, DeltaRelation, "relation_type", data)
    if kind == "scan":
        return _table(spark, body.table).toDF()
    if kind == "describe_history":
        return _table(spark, body.table).history()
    if kind == "describe_detail":
        return _table(spark, body.table).detail()
    if kind == "convert_to_delta":
        return _convert(planner, spark, body)
    if kind == "restore_table":
        table = _table(spark, body.table)
        if body.WhichOneof("version_or_timestamp") == "timestamp":
            return table.restoreToTimestamp(body.timestamp)
        return table.restoreToVersion(body.version)
    if kind == "is_delta_table":
        found = DeltaTable.isDeltaTable(spark, body.path)
        return spark.createDataFrame([(found,)], "value boolean")
    if kind == "delete_from_table":
        return _target(planner, spark, body.target).delete(_condition(planner, body.condition))
    if kind == "update_table":
        return _target(planner, spark, body.target).update(
            _condition(planner, body.condition), _assignments(planner, body.assignments)
        )
    if kind == "merge_into_table":
        return _merge(planner, spark, body)
    if kind == "optimize_table":
        optimize = _table(spark, body.table).optimize()
        for where in body.partition_filters:
            optimize = optimize.where(where)
        if body.zorder_columns:
            return optimize.executeZOrderBy(list(body.zorder_columns))
        return optimize.executeCompaction()
    raise DeltaIllegalArgumentException(f"unknown Delta Connect relation {kind!r}")


def command(planner: Any, data: bytes) -> None:
    """Runs a ``DeltaCommand`` (serialized) in the planner's session."""
    spark, kind, body = _decoded(planner, DeltaCommand, "command_type", data)
    if kind == "create_delta_table":
        _create(spark, body)
        return
    table = _table(spark, body.table)
    if kind == "clone_table":
        options = {"replace": body.replace, "properties": {p.key: p.value for p in body.properties}}
        when = body.WhichOneof("version_or_timestamp")
        if when == "version":
            table.cloneAtVersion(body.version, body.target, body.is_shallow, **options)
        elif when == "timestamp":
            table.cloneAtTimestamp(body.timestamp, body.target, body.is_shallow, **options)
        else:
            table.clone(body.target, body.is_shallow, **options)
    elif kind == "vacuum_table":
        table.vacuum(body.retention_hours if body.HasField("retention_hours") else None)
    elif kind == "upgrade_table_protocol":
        table.upgradeTableProtocol(body.reader_version, body.writer_version)
    elif kind == "generate":
        table.generate(body.mode)
    elif kind == "add_feature_support":
        table.addFeatureSupport(body.feature_name)
    elif kind == "drop_feature_support":
        truncate = body.truncate_history if body.HasField("truncate_history") else None
        table.dropFeatureSupport(body.feature_name, truncate)
    else:
        raise DeltaIllegalArgumentException(f"unknown Delta Connect command {kind!r}")


def _decoded(planner: Any, kind: Any, choice: str, data: bytes) -> tuple[SparkSession, str, Any]:
    """The planner's session, and the name and body of the message's one operation."""
    message = kind.FromString(data)
    chosen = message.WhichOneof(choice)
    if chosen is None:
        raise DeltaIllegalArgumentException(f"a Delta Connect message without its {choice}")
    return planner_session(planner), chosen, getattr(message, chosen)


def _table(spark: SparkSession, message: Any) -> DeltaTable:
    if message.WhichOneof("access_type") == "table_or_view_name":
        return DeltaTable.forName(spark, message.table_or_view_name)
    conf = {entry.key: entry.value for entry in message.path.hadoop_conf}
    return DeltaTable.forPath(spark, message.path.path, conf or None)


def _target(planner: Any, spark: SparkSession, data: bytes) -> DeltaTable:
    """The table a DML message's target relation (a scan, maybe aliased) names."""
    from pyspark.sql.connect import proto

    target = proto.Relation.FromString(data)
    alias = None
    if target.WhichOneof("rel_type") == "subquery_alias":
        alias = target.subquery_alias.alias
        target = target.subquery_alias.input
    if target.WhichOneof("rel_type") != "extension":
        raise DeltaIllegalArgumentException("a Delta Connect DML target must be a Delta table")
    scanned = DeltaRelation.FromString(target.extension.value)
    table = _table(spark, scanned.scan.table)
    return table.alias(alias) if alias else table


def _condition(planner: Any, data: bytes) -> Column | None:
    return expression(planner, data) if data else None


def _field(data: bytes) -> str:
    from pyspark.sql.connect import proto

    return str(proto.Expression.FromString(data).unresolved_attribute.unparsed_identifier)


def _assignments(planner: Any, assignments: Any) -> dict[str, Column]:
    return {_field(a.field): expression(planner, a.value) for a in assignments}


def _merge(planner: Any, spark: SparkSession, body: Any) -> DataFrame:
    builder = _target(planner, spark, body.target).merge(
        planned(planner, body.source), expression(planner, body.condition)
    )
    for group, prefix in (
        (body.matched_actions, "whenMatched"),
        (body.not_matched_actions, "whenNotMatched"),
        (body.not_matched_by_source_actions, "whenNotMatchedBySource"),
    ):
        for action in group:
            condition = _condition(planner, action.condition)
            kind = action.WhichOneof("action_type")
            if kind == "delete_action":
                builder = getattr(builder, f"{prefix}Delete")(condition)
            elif kind == "update_star_action":
                builder = builder.whenMatchedUpdateAll(condition)
            elif kind == "insert_star_action":
                builder = builder.whenNotMatchedInsertAll(condition)
            elif kind == "update_action":
                assignments = _assignments(planner, action.update_action.assignments)
                builder = getattr(builder, f"{prefix}Update")(condition, assignments)
            else:
                values = _assignments(planner, action.insert_action.assignments)
                builder = builder.whenNotMatchedInsert(condition, values)
    if body.HasField("with_schema_evolution") and body.with_schema_evolution:
        builder = builder.withSchemaEvolution()
    return builder.execute()


def _convert(planner: Any, spark: SparkSession, body: Any) -> DataFrame:
    schema = body.WhichOneof("partition_schema")
    partitions: Any = None
    if schema == "partition_schema_string":
        partitions = body.partition_schema_string
    elif schema == "partition_schema_struct":
        partitions = data_type(body.partition_schema_struct)
    DeltaTable.convertToDelta(spark, body.identifier, partitions)
    # the client opens the result with forName: a path's identifier names it as a Delta path
    identifier = body.identifier
    if "`" in identifier and not identifier.lower().startswith("delta."):
        identifier = "delta." + identifier[identifier.index("`") :]
    return spark.createDataFrame([(identifier,)], "identifier string")


def _create(spark: SparkSession, body: Any) -> None:
    builder: DeltaTableBuilder = getattr(DeltaTable, _CREATE_MODES[body.mode])(spark)
    if body.HasField("table_name"):
        builder = builder.tableName(body.table_name)
    if body.HasField("location"):
        builder = builder.location(body.location)
    if body.HasField("comment"):
        builder = builder.comment(body.comment)
    for column in body.columns:
        always: Any = column.generated_always_as if column.HasField("generated_always_as") else None
        by_default = None
        if column.HasField("identity_info"):
            identity = IdentityGenerator(column.identity_info.start, column.identity_info.step)
            if column.identity_info.allow_explicit_insert:
                by_default = identity
            else:
                always = identity
        builder = builder.addColumn(
            column.name,
            data_type(column.data_type),
            column.nullable,
            always,
            by_default,
            column.comment if column.HasField("comment") else None,
        )
    if body.partitioning_columns:
        builder = builder.partitionedBy(*body.partitioning_columns)
    if body.clustering_columns:
        builder = builder.clusterBy(*body.clustering_columns)
    for entry in body.properties:
        builder = builder.property(entry.key, entry.value)
    builder.execute()
