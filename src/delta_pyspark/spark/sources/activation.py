"""Turning delta-pyspark on in a process and in each of its sessions.

``install`` (once per process) makes every new session register the Python side of the JVM's
``delta`` source as soon as it exists (a first ``spark.sql`` on a Delta table runs no Python of
ours before Spark asks it for files), routes ``saveAsTable`` of ``format("delta")`` writers to
``table_writes.save_as_table`` and ``df.writeTo(name)`` of a Delta table to
``table_writes.write_to`` (every other write takes Spark's own path). The API layer adds what
it serves to each session (Delta's SQL statements) with ``when_enabled``, so this layer never
imports it.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.exceptions import DeltaJvmExtensionError
from delta_pyspark.spark.catalog.managed_tables import attach_from_conf
from delta_pyspark.spark.commands.table_writes import TableDefinition, save_as_table, write_to
from delta_pyspark.spark.files.object_stores import share_s3_settings
from delta_pyspark.spark.jvm.hooks import on_every_session, route_save_as_table, route_writer_v2
from delta_pyspark.spark.sources import callback_service

# a hook's result is not used (``sql.enable`` says whether it could register)
_SESSION_HOOKS: list[Callable[[SparkSession], object]] = []


def when_enabled(hook: Callable[[SparkSession], object]) -> None:
    """Run ``hook`` on every session ``enable`` registers (once per hook)."""
    if hook not in _SESSION_HOOKS:
        _SESSION_HOOKS.append(hook)


def enable(spark: SparkSession) -> bool:
    """Register the callback service and the hooks with the session's JVM (idempotent);
    False when the session cannot read through the planner."""
    if not callback_service.enable(spark):
        return False
    for hook in _SESSION_HOOKS:
        hook(spark)
    share_s3_settings(spark)
    attach_from_conf(spark)
    return True


def load_table(spark: SparkSession, path: str, options: dict[str, str]) -> DataFrame:
    """``spark.read.format("delta").options(options).load(path)``, for callers holding a
    path (``DeltaTable.toDF``, table names)."""
    if not enable(spark):
        raise DeltaJvmExtensionError(
            "this SparkSession lacks delta-pyspark's JVM helper or session extension, which "
            "reading Delta tables needs: build it with "
            "delta_pyspark.configure_spark_with_delta(builder).getOrCreate()"
        )
    return callback_service.load(spark, path, options)


def install() -> None:
    """Once per process: the session and write hooks described in the module docstring."""
    on_every_session(enable)
    route_save_as_table(save_as_table)
    route_writer_v2(
        lambda spark, df, action, definition, condition: write_to(
            spark, df, action, TableDefinition.of(definition), condition
        )
    )
