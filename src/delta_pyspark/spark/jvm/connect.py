"""Spark Connect: the classic sessions a Connect server in this process keeps behind its
clients' sessions, which the engine works on.

A Connect DataFrame or Column is a protobuf plan the server's planner turns into Spark's plan.
For a client in this process too (``remote("local[*]")``, ``spark.api.mode=connect``) the
same planner is asked directly (``server_frame``, ``server_column``) and a classic result goes
back as a Connect DataFrame (``client_frame``); the callers run inside
``hooks.classic_thread``, where PySpark's API is the classic one. For any client, local or
remote, ``replay_write`` runs the writes the server would get wrong (``ConnectWrites.java``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_pyspark.exceptions import DeltaUnsupportedOperationException
from delta_pyspark.spark.jvm.bridge import python_column, python_frame, python_session

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def is_connect(value: Any) -> bool:
    """Whether ``value`` (a session, DataFrame or Column) is Spark Connect's."""
    return type(value).__module__.startswith("pyspark.sql.connect.")


def server_session(spark: Any) -> SparkSession:
    """The classic session the in-process server keeps for Connect session ``spark``."""
    return python_session(_holder(spark).session())


def activate(spark: Any) -> None:
    """Make the classic session behind Connect session ``spark`` this thread's active one:
    PySpark's classic API looks for its session there, and a thread of the user's own may
    have none (it would then build one, a Connect one in this process)."""
    _jvm().org.apache.spark.sql.SparkSession.setActiveSession(_holder(spark).session())


def server_frame(df: Any) -> DataFrame:
    """Connect DataFrame ``df`` as the server plans it, in its classic session."""
    spark = df.sparkSession
    relation = df._plan.to_proto(spark.client).root.SerializeToString()
    return planned(_planner(_holder(spark)), relation)


def server_column(column: Any, spark: Any) -> Column:
    """Connect Column ``column`` of session ``spark`` as a classic Column."""
    serialized = column._expr.to_plan(spark.client).SerializeToString()
    return expression(_planner(_holder(spark)), serialized)


_SAVE_MODES = {1: "append", 2: "overwrite", 3: "error", 4: "ignore"}  # proto SaveMode
_V2_ACTIONS = {  # proto WriteOperationV2.Mode: the DataFrameWriterV2 method
    1: "create",
    2: "overwrite",
    3: "overwritePartitions",
    4: "append",
    5: "replace",
    6: "createOrReplace",
}


def replay_write(planner: Any, command: bytes) -> None:
    """A Connect client's ``saveAsTable`` of a delta writer or ``writeTo`` action
    (``command``, the ``spark.connect.Command`` ``ConnectWrites.java`` took from the server),
    made again with the classic writer of its server session (``planner``'s), whose calls
    delta-pyspark's hooks route (``hooks.route_save_as_table``, ``route_writer_v2``)."""
    from pyspark.sql.connect import proto

    parsed = proto.Command.FromString(command)
    if parsed.HasField("write_operation"):
        write = parsed.write_operation
        writer = planned(planner, write.input.SerializeToString()).write.format(write.source)
        if write.mode in _SAVE_MODES:
            writer = writer.mode(_SAVE_MODES[write.mode])
        writer = writer.options(**dict(write.options))
        if write.partitioning_columns:
            writer = writer.partitionBy(*write.partitioning_columns)
        if write.clustering_columns:
            writer = writer.clusterBy(*write.clustering_columns)
        if write.HasField("bucket_by"):
            bucketing = write.bucket_by
            writer = writer.bucketBy(bucketing.num_buckets, *bucketing.bucket_column_names)
        if write.sort_column_names:
            writer = writer.sortBy(*write.sort_column_names)
        writer.saveAsTable(write.table.table_name)
        return
    write_to = parsed.write_operation_v2
    v2 = planned(planner, write_to.input.SerializeToString()).writeTo(write_to.table_name)
    if write_to.HasField("provider"):
        v2 = v2.using(write_to.provider)
    v2 = v2.options(**dict(write_to.options))
    for key, value in write_to.table_properties.items():
        v2 = v2.tableProperty(key, value)
    if write_to.partitioning_columns:
        v2 = v2.partitionedBy(
            *(expression(planner, e.SerializeToString()) for e in write_to.partitioning_columns)
        )
    if write_to.clustering_columns:
        v2 = v2.clusterBy(*write_to.clustering_columns)
    action = _V2_ACTIONS[write_to.mode]
    if action == "overwrite":
        v2.overwrite(expression(planner, write_to.overwrite_condition.SerializeToString()))
    else:
        getattr(v2, action)()


def planned(planner: Any, relation: bytes) -> DataFrame:
    """A serialized ``spark.connect.Relation`` as ``planner`` (a server's
    ``SparkConnectPlanner``) plans it, in its classic session."""
    jvm = _jvm()
    java = jvm.org.apache.spark.connect.proto.Relation.parseFrom(bytearray(relation))
    session = planner.session()
    return python_frame(
        jvm.org.apache.spark.sql.classic.Dataset.ofRows(session, planner.transformRelation(java)),
        python_session(session),
    )


def expression(planner: Any, expression: bytes) -> Column:
    """A serialized ``spark.connect.Expression`` as ``planner`` resolves it."""
    jvm = _jvm()
    java = jvm.org.apache.spark.connect.proto.Expression.parseFrom(bytearray(expression))
    return python_column(
        jvm.org.apache.spark.sql.classic.ExpressionUtils.column(planner.transformExpression(java))
    )


def data_type(data: bytes) -> Any:
    """A serialized ``spark.connect.DataType`` as PySpark's type, or as the DDL text a client
    sent unparsed (``"INT"``), which the API takes as well."""
    from pyspark.sql.connect import proto
    from pyspark.sql.types import _parse_datatype_json_string

    given = proto.DataType.FromString(data)
    if given.WhichOneof("kind") == "unparsed":
        return given.unparsed.data_type_string
    jvm = _jvm()
    java = jvm.org.apache.spark.connect.proto.DataType.parseFrom(bytearray(data))
    converter = jvm.org.apache.spark.sql.connect.common.DataTypeProtoConverter
    return _parse_datatype_json_string(converter.toCatalystType(java).json())


def planner_session(planner: Any) -> SparkSession:
    """The classic session ``planner`` plans in."""
    return python_session(planner.session())


def client_frame(spark: Any, result: DataFrame) -> Any:
    """A classic command's (small) result as a DataFrame of Connect session ``spark``."""
    return spark.createDataFrame(result.collect(), result.schema)


def _holder(spark: Any) -> Any:
    client = spark.client
    try:
        service = _jvm().org.apache.spark.sql.connect.service.SparkConnectService
        return service.getOrCreateIsolatedSession(
            client._user_id or "", client._session_id, _jvm().scala.Option.empty()
        )
    except Exception as e:  # py4j's errors: no server in this process
        raise DeltaUnsupportedOperationException(
            "this Spark Connect session's server is not in this process: delta-pyspark's "
            'DeltaTable works on sessions of remote("local[*]") or spark.api.mode=connect'
        ) from e


def _planner(holder: Any) -> Any:
    jvm = _jvm()
    return jvm.org.apache.spark.sql.connect.planner.SparkConnectPlanner(
        holder, jvm.scala.Option.empty()
    )


def _jvm() -> Any:
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or context._jvm is None:
        raise DeltaUnsupportedOperationException(
            "no Spark Connect server runs in this process: delta-pyspark's DeltaTable works "
            'on sessions of remote("local[*]") or spark.api.mode=connect'
        )
    return context._jvm
