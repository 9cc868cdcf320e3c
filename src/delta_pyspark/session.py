"""Making delta-spark's idioms work in a plain PySpark process.

``configure_spark_with_delta(builder)`` adds the session settings Delta tables
want (the JVM helper jar with the ``delta`` source Spark resolves itself, and its session
extension) and installs hooks on PySpark's ``DataFrameWriter``/``DataFrameReader``
(and ``SparkSession.table``) so that ``format("delta")`` and delta table names
route here, while every other format goes to Spark untouched. The hooks are
process-wide, so sessions created later see them too. Reads go through Spark's planner
(``spark.planner``) unless the table uses a feature it does not support yet.
"""

from __future__ import annotations

import functools
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaIllegalArgumentException
from delta_pyspark.spark import planner
from delta_pyspark.spark.catalog import table_location
from delta_pyspark.spark.filter_skipping import refine, scan_table
from delta_pyspark.spark.jvm_extension import with_extension_jar
from delta_pyspark.spark.scan import session_time_zone
from delta_pyspark.spark.write_command import WriteRequest, write_delta

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
    _refuse_delta_spark_confs(getattr(builder, "_options", {}))
    for key, value in SESSION_DEFAULTS.items():
        builder = builder.config(key, value)
    options = getattr(builder, "_options", {})
    builder = builder.config("spark.jars", with_extension_jar(options.get("spark.jars")))
    extensions = [e for e in (options.get("spark.sql.extensions") or "").split(",") if e]
    if planner.EXTENSIONS not in extensions:
        extensions.append(planner.EXTENSIONS)
    builder = builder.config("spark.sql.extensions", ",".join(extensions))
    _enable_planner_on_create(builder)
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


def _enable_planner_on_create(builder: SparkSession.Builder) -> None:
    """The builder's sessions get the planner's callback as soon as they exist: a first
    ``spark.sql`` reading a Delta table runs no Python of ours before Spark asks for files."""
    original = builder.getOrCreate

    @functools.wraps(original)
    def get_or_create() -> SparkSession:
        session = original()
        planner.enable(session)
        return session

    builder.getOrCreate = get_or_create  # type: ignore[method-assign]


def _state(obj: Any) -> dict[str, Any]:
    st = obj.__dict__.get("_delta")
    if st is None:
        st = {"format": None, "mode": None, "options": {}, "partition_by": None}
        obj.__dict__["_delta"] = st
    return st


def _is_delta(fmt: str | None) -> bool:
    return fmt is not None and fmt.lower() == "delta"


def load_table(spark: SparkSession, path: str, options: dict[str, str]) -> DataFrame:
    """Read a Delta table at ``path`` honouring time travel options and path suffixes:
    through Spark's planner, or (features it does not support yet, a session without the
    JVM helper) as a scan of the snapshot resolved now."""
    snapshot, pinned = planner.TABLES.resolve(path, options, session_time_zone(spark))
    if planner.unsupported_reason(snapshot) is None and planner.enable(spark):
        if pinned:
            planner.check_files_exist(snapshot)
        return planner.load(spark, path, options)
    return scan_table(spark, snapshot)


def install() -> None:
    """Install the format("delta") hooks once per process."""
    if getattr(DataFrameWriter, "_delta_installed", False):
        return
    _hook_writer()
    _hook_reader()
    _hook_filters()
    DataFrameWriter._delta_installed = True  # type: ignore[attr-defined]


def _hook_filters() -> None:
    """``where``/``filter`` on a Delta scan re-plan it over the files that can match."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    for name in ("where", "filter"):
        original = getattr(ClassicDataFrame, name)

        def pruning(self: DataFrame, condition: Any, _original: Any = original) -> DataFrame:
            refined = refine(self, condition, _original)
            return refined if refined is not None else _original(self, condition)

        functools.update_wrapper(pruning, original)
        setattr(ClassicDataFrame, name, pruning)


def _recording(cls: type, name: str, record: Any) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        record(_state(self), *args, **kwargs)
        return original(self, *args, **kwargs)

    setattr(cls, name, wrapper)


def _set_options(st: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    if args:
        st["options"][args[0]] = (
            ""
            if args[1] is None
            else str(args[1]).lower()
            if isinstance(args[1], bool)
            else str(args[1])
        )
    for k, v in kwargs.items():
        st["options"][k] = str(v).lower() if isinstance(v, bool) else str(v)


def _hook_writer() -> None:
    def rec_format(st: dict, source: str) -> None:
        st["format"] = source

    def rec_mode(st: dict, mode: str | None) -> None:
        if mode is not None:
            st["mode"] = mode

    def rec_partition(st: dict, *cols: Any) -> None:
        if len(cols) == 1 and isinstance(cols[0], list | tuple):
            cols = tuple(cols[0])
        st["partition_by"] = list(cols)

    _recording(DataFrameWriter, "format", rec_format)
    _recording(DataFrameWriter, "mode", rec_mode)
    _recording(DataFrameWriter, "option", _set_options)
    _recording(DataFrameWriter, "options", lambda st, **kw: _set_options(st, **kw))
    _recording(DataFrameWriter, "partitionBy", rec_partition)

    original_save = DataFrameWriter.save
    original_save_as_table = DataFrameWriter.saveAsTable

    def _request(
        self: DataFrameWriter, mode: Any, partition_by: Any, options: dict
    ) -> WriteRequest:
        st = _state(self)
        if partition_by is not None:
            st["partition_by"] = (
                [partition_by] if isinstance(partition_by, str) else list(partition_by)
            )
        opts = dict(st["options"])
        _set_options({"options": opts}, **options)
        return WriteRequest(mode or st["mode"] or "errorifexists", st["partition_by"], opts)

    @functools.wraps(original_save)
    def save(
        self: DataFrameWriter,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        fmt = format or _state(self)["format"]
        if not _is_delta(fmt):
            return original_save(self, path, format, mode, partitionBy, **options)
        request = _request(self, mode, partitionBy, options)
        path = path or request.options.get("path")
        if not path:
            raise DeltaIllegalArgumentException("save() on a delta writer needs a path")
        write_delta(self._spark, self._df, path, request)
        return None

    @functools.wraps(original_save_as_table)
    def save_as_table(
        self: DataFrameWriter,
        name: str,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        fmt = format or _state(self)["format"]
        if not _is_delta(fmt):
            return original_save_as_table(self, name, format, mode, partitionBy, **options)
        request = _request(self, mode, partitionBy, options)
        write_delta(self._spark, self._df, table_location(self._spark, name), request)
        return None

    DataFrameWriter.save = save  # type: ignore[method-assign]
    DataFrameWriter.saveAsTable = save_as_table  # type: ignore[method-assign]


def _hook_reader() -> None:
    def rec_format(st: dict, source: str) -> None:
        st["format"] = source

    _recording(DataFrameReader, "format", rec_format)
    _recording(DataFrameReader, "option", _set_options)
    _recording(DataFrameReader, "options", lambda st, **kw: _set_options(st, **kw))

    original_load = DataFrameReader.load
    original_table = DataFrameReader.table
    original_session_table = SparkSession.table

    @functools.wraps(original_load)
    def load(
        self: DataFrameReader,
        path: Any = None,
        format: str | None = None,
        schema: Any = None,
        **options: Any,
    ) -> DataFrame:
        st = _state(self)
        if not _is_delta(format or st["format"]):
            return original_load(self, path, format, schema, **options)
        opts = dict(st["options"])
        _set_options({"options": opts}, **options)
        path = path or opts.get("path")
        if not isinstance(path, str):
            raise DeltaIllegalArgumentException("load() of a delta table needs exactly one path")
        return load_table(self._spark, path, opts)

    def _delta_location(spark: SparkSession, name: str) -> str | None:
        location = table_location(spark, name)
        return location if DeltaLog(location).is_delta_table() else None

    @functools.wraps(original_table)
    def table(self: DataFrameReader, tableName: str) -> DataFrame:
        location = _delta_location(self._spark, tableName)
        if location is None:
            return original_table(self, tableName)
        return load_table(self._spark, location, dict(_state(self)["options"]))

    @functools.wraps(original_session_table)
    def session_table(self: SparkSession, tableName: str) -> DataFrame:
        location = _delta_location(self, tableName)
        if location is None:
            return original_session_table(self, tableName)
        return load_table(self, location, {})

    DataFrameReader.load = load  # type: ignore[method-assign]
    DataFrameReader.table = table  # type: ignore[method-assign]
    SparkSession.table = session_table  # type: ignore[method-assign]
