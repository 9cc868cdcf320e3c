"""Making delta-spark's idioms work in a plain PySpark process.

``configure_spark_with_delta(builder)`` adds the session settings Delta tables
want: the JVM helper jar with the ``delta`` source Spark resolves itself (reads, ``save``,
SQL inserts and CTAS go through Spark's planner into the Python core, see
``spark.planner``) and its session extension. ``saveAsTable`` and ``writeTo`` are routed
from Python (``integration.route_save_as_table``/``route_writer_v2``): Spark's own
``saveAsTable`` drops a table it overwrites, and with it a Delta table's history; its
``writeTo`` plans writes for V2 catalogs only.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.exceptions import DeltaIllegalArgumentException, DeltaJvmExtensionError
from delta_pyspark.spark import planner
from delta_pyspark.spark.integration import (
    check_not_connect,
    check_spark_version,
    on_every_session,
    route_save_as_table,
    route_writer_v2,
    with_extension_jar,
)
from delta_pyspark.spark.table_writes import TableDefinition, save_as_table, write_to

SESSION_DEFAULTS = {
    # Spark writes INT96 timestamps by default: no Parquet statistics, poor interop.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Scans name the snapshot's files explicitly; above this many paths Spark "lists" them
    # with a distributed job (one task per file): 1,000 files took 9-13 s vs 1.7-2.6 s.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}


# delta-spark's session settings name JVM classes of its jar, which is not on the classpath
# here: Spark would fail later with "Cannot find catalog plugin class" or skip the extension.
DELTA_SPARK_CONFS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def configure_spark_with_delta(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Counterpart of delta-spark's ``configure_spark_with_delta_pip``."""
    options = getattr(builder, "_options", {})
    check_spark_version()
    check_not_connect(options)
    _refuse_delta_spark_confs(options)
    for key, value in SESSION_DEFAULTS.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.jars", with_extension_jar(options.get("spark.jars")))
    extensions = [e for e in (options.get("spark.sql.extensions") or "").split(",") if e]
    if planner.EXTENSIONS not in extensions:
        extensions.append(planner.EXTENSIONS)
    builder = builder.config("spark.sql.extensions", ",".join(extensions))
    install()
    return builder


def _refuse_delta_spark_confs(options: dict[str, Any]) -> None:
    """A builder set up for delta-spark fails here, naming the settings to drop."""
    found = [
        f"{key}={value}"
        for key, value in DELTA_SPARK_CONFS.items()
        if value in [v.strip() for v in str(options.get(key) or "").split(",")]
    ]
    if found:
        raise DeltaIllegalArgumentException(
            f"delta-spark's session settings {', '.join(found)} name JVM classes that are not "
            "on this classpath: remove them from the builder; configure_spark_with_delta(builder) "
            "sets everything delta-pyspark needs"
        )


def _enable(spark: SparkSession) -> bool:
    """Register the planner's callback and the SQL statements' with the session's JVM
    (idempotent); False when the session cannot read through the planner."""
    if not planner.enable(spark):
        return False
    from delta_pyspark import sql  # the API module over ``tables``, which imports this one
    from delta_pyspark.spark.managed_catalog import attach_from_conf

    sql.enable(spark)
    attach_from_conf(spark)
    return True


def load_table(spark: SparkSession, path: str, options: dict[str, str]) -> DataFrame:
    """``spark.read.format("delta").options(options).load(path)``, for callers holding a
    path (``DeltaTable.toDF``, table names)."""
    if not _enable(spark):
        raise DeltaJvmExtensionError(
            "this SparkSession lacks delta-pyspark's JVM helper or session extension, which "
            "reading Delta tables needs: build it with "
            "delta_pyspark.configure_spark_with_delta(builder).getOrCreate()"
        )
    return planner.load(spark, path, options)


def install() -> None:
    """Once per process: every session registers the Python core with its JVM as soon as it
    exists (a first ``spark.sql`` on a Delta table runs no Python of ours before Spark asks
    it for files), and ``saveAsTable`` of ``format("delta")`` writers goes to
    ``table_writes.save_as_table``, and ``df.writeTo(name)`` of a Delta table to
    ``table_writes.write_to`` (every other write takes Spark's own path)."""
    on_every_session(_enable)
    route_save_as_table(save_as_table)
    route_writer_v2(
        lambda spark, df, action, definition, condition: write_to(
            spark, df, action, TableDefinition.of(definition), condition
        )
    )
