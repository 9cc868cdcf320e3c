"""Making delta-spark's idioms work in a plain PySpark process.

``configure_spark_with_delta(builder)`` adds the session settings Delta tables
want: the JVM helper jar with the ``delta`` source Spark resolves itself (reads, ``save``,
SQL inserts and CTAS go through Spark's planner into the Python core, see
``spark.sources.callback_service``) and its session extension, and installs the process's
hooks (``spark.sources.activation``): ``saveAsTable`` and ``writeTo`` are routed from Python,
since Spark's own ``saveAsTable`` drops a table it overwrites, and with it a Delta table's
history, and its ``writeTo`` plans writes for V2 catalogs only. Sessions it enables also serve
Delta's SQL statements (``sql``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from delta_pyspark import sql
from delta_pyspark.exceptions import DeltaIllegalArgumentException
from delta_pyspark.spark.conf import SESSION_DEFAULTS
from delta_pyspark.spark.jvm.bridge import check_connect_is_local
from delta_pyspark.spark.jvm.helper_jar import (
    check_spark_version,
    hadoop_version,
    with_extension_jar,
)
from delta_pyspark.spark.sources.activation import install, when_enabled
from delta_pyspark.spark.sources.callback_service import EXTENSIONS

#: Hadoop's S3A connector (its version must be PySpark's Hadoop release)
HADOOP_AWS = "org.apache.hadoop:hadoop-aws"
S3A_FILE_SYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"
CONNECT_INTERCEPTORS = "spark.connect.grpc.interceptor.classes"
CONNECT_COMMANDS = "spark.connect.extensions.command.classes"
CONNECT_RELATIONS = "spark.connect.extensions.relation.classes"
CONNECT_WRITES = "deltapyspark.ConnectWrites"
DELTA_CONNECT = "deltapyspark.DeltaConnectMessages"

# delta-spark's session settings name JVM classes of its jar. Code ported from delta-spark
# keeps them: they are read as names for ours, and removed from the builder (Spark would fail
# with "Cannot find catalog plugin class" or skip the extension). With delta-spark's jar asked
# for as well they are refused: both would register the ``delta`` source.
DELTA_SPARK_CONFS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def configure_spark_with_delta(
    builder: SparkSession.Builder,
    extra_packages: Sequence[str] | None = None,
    s3: bool = False,
) -> SparkSession.Builder:
    """Counterpart of delta-spark's ``configure_spark_with_delta_pip``: ``extra_packages``
    are Maven coordinates added to ``spark.jars.packages``. ``s3=True`` puts Hadoop's S3A
    connector on the classpath (``hadoop-aws`` of PySpark's Hadoop release, with its AWS SDK,
    from Maven Central; unless ``spark.jars`` already holds a ``hadoop-aws`` jar) and lets
    ``s3://`` paths use it as ``s3a://`` ones do."""
    options = getattr(builder, "_options", {})
    check_spark_version()
    check_connect_is_local(options)
    _take_delta_spark_confs(options)
    for key, value in SESSION_DEFAULTS.items():
        builder = builder.config(key, value)
    packages = [p for p in str(options.get("spark.jars.packages") or "").split(",") if p]
    packages += [p for p in extra_packages or () if p not in packages]
    if s3:
        jars = str(options.get("spark.jars") or "")
        if "hadoop-aws-" not in jars:
            packages.append(f"{HADOOP_AWS}:{hadoop_version()}")
        builder = builder.config("spark.hadoop.fs.s3.impl", S3A_FILE_SYSTEM)
    if packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    builder = builder.config("spark.jars", with_extension_jar(options.get("spark.jars")))
    for key, value in (
        ("spark.sql.extensions", EXTENSIONS),
        # a Spark Connect server's saveAsTable/writeTo of Delta tables (ConnectWrites.java)
        (CONNECT_INTERCEPTORS, CONNECT_WRITES),
        (CONNECT_COMMANDS, CONNECT_WRITES),
        # delta-spark's Delta Connect client (DeltaConnectMessages.java)
        (CONNECT_COMMANDS, DELTA_CONNECT),
        (CONNECT_RELATIONS, DELTA_CONNECT),
    ):
        listed = _listed(options.get(key))
        builder = builder.config(key, ",".join(listed if value in listed else [*listed, value]))
    install()
    return builder


def _take_delta_spark_confs(options: dict[str, Any]) -> None:
    """Drop delta-spark's settings from a builder's options (ours replace them), or refuse
    them by name when delta-spark's jar is on the session's classpath too."""
    found = {
        key: value for key, value in DELTA_SPARK_CONFS.items() if value in _listed(options.get(key))
    }
    if not found:
        return
    jars = f"{options.get('spark.jars.packages') or ''},{options.get('spark.jars') or ''}"
    if "io.delta:delta-spark" in jars or "delta-spark_" in jars:
        settings = ", ".join(f"{key}={value}" for key, value in found.items())
        raise DeltaIllegalArgumentException(
            f"this builder asks for delta-spark's jar and its settings ({settings}) as well as "
            "delta-pyspark: both register Spark's delta source, so one session cannot have "
            "both; remove delta-spark's jar and settings, or do not configure delta-pyspark"
        )
    for key, value in found.items():
        rest = [v for v in _listed(options.get(key)) if v != value]
        if rest:
            options[key] = ",".join(rest)
        else:
            del options[key]


def _listed(value: Any) -> list[str]:
    return [v.strip() for v in str(value or "").split(",") if v.strip()]


# Every session the process enables also serves Delta's SQL statements.
when_enabled(sql.enable)
