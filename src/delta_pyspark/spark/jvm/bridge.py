"""Every touch point of delta-pyspark with PySpark's internals and the JVM, in one module,
so that a PySpark upgrade is one file to review (and the Java sources beside it).

What it uses beyond PySpark's public API, and why:

- The JVM helper (Java sources under ``java/``), compiled when a session is configured
  (``configure_spark_with_delta``) with Janino, the compiler Spark itself ships, so a Java
  runtime suffices (no JDK). The jar is cached per source and Spark version and goes on the
  driver's and executors' class path through ``spark.jars``. ``DeltaSource`` is the ``delta``
  data source Spark resolves itself (registered through the jar's ``META-INF/services``),
  whose ``DeltaFileIndex`` asks the Python core for the files of each scan (``planner``);
  ``DeltaSparkExtensions`` is its session extension. ``DeletionVectorParquetFormat`` is
  Spark's Parquet format whose reader drops the rows deletion vectors mark batch by batch (a
  join against the deleted positions made scans 2-2.5x slower, a per-row filter 1.5-2x);
  ``FileScans`` gives a scan its own split size without changing the user's session. They
  subclass Spark's internal ``ParquetFileFormat``: they are written for ``SPARK_VERSION``.
- py4j: ``spark._jvm``/``_jsparkSession``/``df._jdf`` to reach those classes and Spark's
  session conf, plan statistics and analysed plans (``java_session``, ``java_frame``, ...);
  the callback server, which lets the JVM call the Python core (``serve_callbacks``).
- Patched PySpark: ``pyspark.errors.exceptions.captured.convert_exception``, so an error the
  Python core raised inside a JVM call reaches the user as itself (``convert_errors``); the
  ``SparkSession.__init__`` (``on_every_session``: the JVM can call the Python core only
  once a session has registered it);
  ``DataFrameWriter.saveAsTable`` for the ``delta`` format (``route_save_as_table``: Spark's
  own drops a table it overwrites, and a Delta table's history with it); the terminal
  methods of ``DataFrameWriterV2`` (``route_writer_v2``: Spark plans its writes for V2
  catalogs only), whose settings ``TableDefinitions.java`` reads from the JVM writer's
  private fields.
- PySpark 4.0's process-wide flag ``pyspark.errors.utils._enable_debugging_cache``, turned
  off while delta-pyspark builds its own plans (``internal_plans``).
- ``Observation._jo``, the JVM side of an observation, read by key (``observed_values``).
- Our exception classes get PySpark's exception classes as extra bases when this module is
  imported (``give_errors_pyspark_bases``): ``delta_pyspark.exceptions`` stays Spark-free for
  the core, and a delta-spark user's ``except AnalysisException`` still catches our errors.
  ``str(e)`` stays our message; ``getCondition()`` gives delta-spark's error class where we
  know it.

A Spark Connect session has no JVM in this process: ``classic_session`` refuses it by name.

The module is over 500 lines on purpose: keeping every use of PySpark's internals here is
what makes a PySpark upgrade one file to review.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap64
from pyspark.errors import (
    AnalysisException,
    IllegalArgumentException,
    ParseException,
    PySparkException,
    PySparkTypeError,
    UnsupportedOperationException,
)

from delta_pyspark import exceptions as ex
from delta_pyspark.exceptions import DeltaJvmExtensionError, DeltaUnsupportedOperationException

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

SPARK_VERSION = "4.0"  # the Spark minor version the Java sources and the private API match
SOURCES = Path(__file__).parent / "java"
_JANINO_MAIN = "org.codehaus.commons.compiler.samples.CompilerDemo"


def check_spark_version(version: str | None = None) -> None:
    """Refuse a PySpark other than ``SPARK_VERSION``.x: the helper compiles against Spark's
    internal classes, whose signatures change between minor versions."""
    import pyspark

    version = version or pyspark.__version__
    if version.split(".")[:2] != SPARK_VERSION.split("."):
        raise DeltaJvmExtensionError(
            f"delta-pyspark works with PySpark {SPARK_VERSION}.x (its JVM helper is compiled "
            f"against Spark's internals), this process has PySpark {version}: install "
            f"pyspark=={SPARK_VERSION}.*"
        )


def check_not_connect(options: dict[str, Any]) -> None:
    """Refuse a builder set up for Spark Connect (``remote(...)``, ``SPARK_REMOTE``)."""
    if options.get("spark.remote") or os.environ.get("SPARK_REMOTE"):
        raise _connect_error()


def _connect_error() -> DeltaUnsupportedOperationException:
    return DeltaUnsupportedOperationException(
        "delta-pyspark needs a classic SparkSession (a JVM in this process: the Python core "
        "answers the JVM's planner over py4j); Spark Connect sessions are not supported: "
        "build the session without remote(...)/SPARK_REMOTE"
    )


def classic_session(spark: SparkSession) -> Any:
    """The JVM's ``SparkSession`` behind ``spark``; a typed error for a Spark Connect one."""
    java = getattr(spark, "_jsparkSession", None)
    if java is None:
        raise _connect_error()
    return java


def java_frame(df: DataFrame) -> Any:
    """The JVM's ``Dataset`` behind ``df``."""
    classic_session(df.sparkSession)
    return df._jdf


def python_frame(java_dataset: Any, spark: SparkSession) -> DataFrame:
    """A PySpark ``DataFrame`` over a JVM ``Dataset``."""
    from pyspark.sql import DataFrame as SparkFrame

    return SparkFrame(java_dataset, spark)


def python_session(java_session: Any) -> SparkSession:
    """The PySpark session over the JVM session a callback names (its temp views and confs:
    the active Python session when it is that one)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and active._jsparkSession.equals(java_session):
        return active
    context = SparkContext._active_spark_context
    if context is None:
        raise DeltaJvmExtensionError("no SparkContext is running in this process")
    return SparkSession(context, java_session)


def sql_conf(spark: SparkSession) -> Any:
    """The JVM's ``SQLConf`` of ``spark``, for typed settings PySpark does not expose
    (broadcast threshold, split sizes)."""
    return classic_session(spark).sessionState().conf()


def parsed_expression_text(spark: SparkSession, sql: str) -> str:
    """``sql`` as Spark's parser prints its unresolved expression (``key = 'a'`` is
    ``('key = a)``): how delta-spark records some commands' predicates in history."""
    return str(classic_session(spark).sessionState().sqlParser().parseExpression(sql).toString())


def jvm(spark: SparkSession) -> Any:
    """py4j's view of the session's JVM (``jvm(spark).java.util...``)."""
    classic_session(spark)
    return spark._jvm


def new_array(spark: SparkSession, java_type: Any, length: int) -> Any:
    """A new Java array of ``length`` ``java_type``s (``jvm(spark).long``, ...)."""
    return spark.sparkContext._gateway.new_array(java_type, length)


def serve_callbacks(spark: SparkSession, name: str, register: Callable[[], None]) -> None:
    """Start py4j's callback server (the JVM calling Python objects) and run ``register``
    (which hands the JVM the Python objects it calls) once per ``name`` and gateway: the
    sessions of one process share their gateway."""
    gateway = spark.sparkContext._gateway
    registered = gateway.__dict__.setdefault("_delta_pyspark_callbacks", set())
    if name in registered:
        return
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(gateway)
    register()
    registered.add(name)


def convert_errors(original_of: Callable[[Any], BaseException | None]) -> None:
    """Make PySpark raise ``original_of(java_error)`` for a JVM error when it is not None
    (and the error is not a streaming query's failure), instead of its conversion (PySpark
    4.0's ``captured.convert_exception``, which its py4j hook looks up at each error).
    Installed once per process."""
    from pyspark.errors.exceptions import captured

    converted = captured.convert_exception
    if getattr(converted, "_delta_pyspark", False):
        return

    def convert(java_error: Any) -> Any:
        if _is_streaming_failure(java_error):
            return converted(java_error)  # the query's failure names ours in its message
        failure = original_of(java_error)
        return failure if failure is not None else converted(java_error)

    convert._delta_pyspark = True  # type: ignore[attr-defined]
    captured.convert_exception = convert


# ``internal_plans``: the nesting depth of its uses and the flag to restore after the last
_internal = threading.Lock()
_internal_depth = 0
_call_sites_flag: bool | None = None


@contextmanager
def internal_plans() -> Iterator[None]:
    """Build delta-pyspark's own plans without recording Python call sites. PySpark 4.0
    records, for error messages, where each Column and DataFrame function was called
    (``spark.python.sql.dataFrameDebugging.enabled``); for the plans a command builds
    that is always a line of delta-pyspark, and each record costs about ten py4j calls
    and a failing ``import IPython``: 0.1-0.2 s of a 1.3 s MERGE. PySpark reads one
    process-wide flag, so recording stops in every thread until the last (nested or
    concurrent) use ends, and the flag is then restored."""
    import pyspark.errors.utils as origins

    global _internal_depth, _call_sites_flag
    with _internal:
        if _internal_depth == 0:
            _call_sites_flag = origins._enable_debugging_cache
            origins._enable_debugging_cache = False
        _internal_depth += 1
    try:
        yield
    finally:
        with _internal:
            _internal_depth -= 1
            if _internal_depth == 0:
                origins._enable_debugging_cache = _call_sites_flag


def _is_streaming_failure(java_error: Any) -> bool:
    """A streaming query's failure: PySpark users catch it as ``StreamingQueryException``,
    whatever failed inside the query."""
    try:
        name = str(java_error.getClass().getName())
    except Exception:  # not a JVM object
        return False
    return name == "org.apache.spark.sql.streaming.StreamingQueryException"


def on_every_session(then: Callable[[SparkSession], Any]) -> None:
    """Run ``then`` on every classic ``SparkSession`` made from now on in this process
    (``builder.getOrCreate()``, or ``SparkSession(sc)`` as PySpark's own test cases do), once
    it is set up. Installed once per process."""
    from pyspark.sql import SparkSession

    original = SparkSession.__init__
    if getattr(original, "_delta_pyspark", False):
        return

    @functools.wraps(original)
    def init(self: SparkSession, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        then(self)

    init._delta_pyspark = True  # type: ignore[attr-defined]
    SparkSession.__init__ = init  # type: ignore[method-assign]


def route_save_as_table(
    handler: Callable[[SparkSession, DataFrame, str, str, list[str] | None, dict[str, str]], None],
) -> None:
    """Make ``df.write.format("delta")...saveAsTable(name)`` call ``handler(spark, df, name,
    mode, partition_by, options)``; other formats keep PySpark's. Installed once per process:
    the writer's settings are recorded as they are made (the JVM writer keeps them private)."""
    from pyspark.sql.readwriter import DataFrameWriter

    if getattr(DataFrameWriter, "_delta_pyspark", False):
        return
    for method, record in (
        ("format", _record_format),
        ("mode", _record_mode),
        ("option", _record_option),
        ("options", _record_options),
        ("partitionBy", _record_partitioning),
        ("clusterBy", _record_clustering),
    ):
        _recording(DataFrameWriter, method, record)
    original = DataFrameWriter.saveAsTable

    @functools.wraps(original)
    def save_as_table(
        self: Any,
        name: str,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        state = _writer_state(self)
        source = format or state["format"]
        if source is None or source.lower() != "delta":
            return original(self, name, format, mode, partitionBy, **options)
        if partitionBy is not None:
            _record_partitioning(state, partitionBy)
        _record_options(state, **options)
        chosen = mode or state["mode"] or "errorifexists"
        handler(self._spark, self._df, name, chosen, state["partition_by"], dict(state["options"]))
        return None

    DataFrameWriter.saveAsTable = save_as_table  # type: ignore[method-assign]
    DataFrameWriter._delta_pyspark = True  # type: ignore[attr-defined]


def route_writer_v2(
    handler: Callable[[SparkSession, DataFrame, str, dict[str, Any], str | None], bool],
) -> None:
    """Make ``df.writeTo(name).<action>(...)`` ask ``handler(spark, df, action, definition,
    condition)`` first (``definition``: see ``table_definition``; ``condition``: the SQL of
    ``overwrite``'s condition); a False answer runs PySpark's own. Installed once per
    process."""
    from pyspark.sql.readwriter import DataFrameWriterV2

    if getattr(DataFrameWriterV2, "_delta_pyspark", False):
        return
    for action in ("replace", "createOrReplace", "append", "overwritePartitions"):
        _route_v2(DataFrameWriterV2, action, handler)
    original = DataFrameWriterV2.overwrite

    @functools.wraps(original)
    def overwrite(self: Any, condition: Any) -> None:
        definition = _v2_definition(self)
        if definition is None or not handler(
            self._spark, self._df, "overwrite", definition, column_sql(self._df, condition)
        ):
            original(self, condition)

    DataFrameWriterV2.overwrite = overwrite  # type: ignore[method-assign]
    DataFrameWriterV2._delta_pyspark = True  # type: ignore[attr-defined]


def _route_v2(
    cls: type,
    action: str,
    handler: Callable[[SparkSession, DataFrame, str, dict[str, Any], str | None], bool],
) -> None:
    original = getattr(cls, action)

    @functools.wraps(original)
    def routed(self: Any) -> None:
        definition = _v2_definition(self)
        if definition is None or not handler(self._spark, self._df, action, definition, None):
            original(self)

    setattr(cls, action, routed)


def _v2_definition(writer: Any) -> dict[str, Any] | None:
    """What the writer was given; None in a session without the JVM helper (no Delta)."""
    definitions = helper_class(writer._spark, "deltapyspark.TableDefinitions")
    if definitions is None:
        return None
    return table_definition(definitions.ofWriter(writer._jwriter))


def table_definition(java_map: Any) -> dict[str, Any]:
    """A ``TableDefinitions`` map of the JVM as Python values."""
    values: dict[str, Any] = {}
    for key in java_map.keySet():
        value = java_map.get(key)
        if key in ("name", "partitioning", "clustering"):
            value = [str(v) for v in value]
        elif key in ("properties", "options"):
            value = {str(k): None if v is None else str(v) for k, v in dict(value).items()}
        values[str(key)] = value
    return values


def column_sql(df: DataFrame, column: Any) -> str:
    """A Column (or a column name) over ``df`` as SQL text: its expression, resolved
    against ``df``, as Spark prints it."""
    analyzed = java_frame(df.select(column)).queryExecution().analyzed()
    return str(analyzed.expressions().head().child().sql())


def _writer_state(writer: Any) -> dict[str, Any]:
    state = writer.__dict__.get("_delta_pyspark_state")
    if state is None:
        state = {"format": None, "mode": None, "options": {}, "partition_by": None}
        writer.__dict__["_delta_pyspark_state"] = state
    return state


def _recording(cls: type, name: str, record: Callable[..., None]) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        record(_writer_state(self), *args, **kwargs)
        return original(self, *args, **kwargs)

    setattr(cls, name, wrapper)


def _option_text(value: Any) -> str:
    """An option value as PySpark passes it to the JVM (booleans lower-case)."""
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _record_format(state: dict[str, Any], source: str) -> None:
    state["format"] = source


def _record_mode(state: dict[str, Any], mode: str | None) -> None:
    if mode is not None:
        state["mode"] = mode


def _record_option(state: dict[str, Any], key: str, value: Any) -> None:
    state["options"][key] = _option_text(value)


def _record_options(state: dict[str, Any], **options: Any) -> None:
    for key, value in options.items():
        state["options"][key] = _option_text(value)


def _record_partitioning(state: dict[str, Any], *cols: Any) -> None:
    if len(cols) == 1 and isinstance(cols[0], list | tuple):
        cols = tuple(cols[0])
    state["partition_by"] = [str(c) for c in cols]


def _record_clustering(state: dict[str, Any], *cols: Any) -> None:
    """``clusterBy`` as Spark hands it to a V1 source: the option
    ``DataSourceUtils.CLUSTERING_COLUMNS_KEY``, a JSON list of the names."""
    if len(cols) == 1 and isinstance(cols[0], list | tuple):
        cols = tuple(cols[0])
    state["options"]["__clustering_columns"] = json.dumps([str(c) for c in cols])


def _spark_jars() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "delta-pyspark"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def extension_jar() -> str:
    """Path of the helper jar, compiled on first use for these sources and this Spark."""
    import pyspark

    sources = sorted(SOURCES.rglob("*.java"))
    resources = sorted(p for p in (SOURCES / "META-INF").rglob("*") if p.is_file())
    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in sources + resources:
        digest.update(src.relative_to(SOURCES).as_posix().encode() + src.read_bytes())
    jar = _cache_dir() / f"delta-pyspark-jvm-{digest.hexdigest()[:16]}.jar"
    if not jar.exists():
        _compile(sources, resources, jar)
    return str(jar)


def _compile(sources: list[Path], resources: list[Path], jar: Path) -> None:
    jars = sorted(_spark_jars().glob("*.jar"))
    compiler = [j for j in jars if j.name.startswith(("janino-", "commons-compiler-"))]
    if len(compiler) != 2:
        raise DeltaJvmExtensionError(f"Spark's Janino compiler was not found in {_spark_jars()}")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        command = [
            _java(),
            "-cp",
            os.pathsep.join(map(str, compiler)),
            _JANINO_MAIN,
            "-d",
            str(classes),
            "-classpath",
            os.pathsep.join(map(str, jars)),
            *map(str, sources),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        built = sorted(classes.rglob("*.class"))
        if done.returncode != 0 or not built:
            output = (done.stderr or done.stdout)[-2000:]
            raise DeltaJvmExtensionError(f"compiling delta-pyspark's JVM helper failed: {output}")
        staged = Path(tmp) / jar.name
        with zipfile.ZipFile(staged, "w") as out:
            for cls in built:
                out.write(cls, cls.relative_to(classes).as_posix())
            for resource in resources:  # e.g. the ServiceLoader entry naming ``DeltaSource``
                out.write(resource, resource.relative_to(SOURCES).as_posix())
        os.replace(staged, jar)  # concurrent builders write the same bytes: last one wins


def with_extension_jar(jars: str | None) -> str:
    """``spark.jars`` with the helper jar added (kept once)."""
    listed = [j for j in (jars or "").split(",") if j]
    jar = extension_jar()
    return ",".join([*listed, jar] if jar not in listed else listed)


def helper_class(spark: SparkSession, class_name: str) -> Any | None:
    """Helper class ``class_name`` in the session's JVM; None if the helper jar is not on
    its class path."""
    from py4j.java_gateway import JavaClass

    cls = jvm(spark)
    for part in class_name.split("."):
        cls = getattr(cls, part)
    return cls if isinstance(cls, JavaClass) else None


def new_object(spark: SparkSession, class_name: str) -> Any:
    """A new instance of helper class ``class_name`` in the session's JVM."""
    return required_helper(spark, class_name)()


def required_helper(spark: SparkSession, class_name: str) -> Any:
    """Helper class ``class_name`` in the session's JVM, which Delta scans and writes need."""
    cls = helper_class(spark, class_name)
    if cls is None:
        raise DeltaJvmExtensionError(
            f"this SparkSession lacks delta-pyspark's JVM helper ({class_name}), which reading "
            "and writing Delta tables needs: build the session with "
            "delta_pyspark.configure_spark_with_delta(builder).getOrCreate(): it adds the "
            "helper jar to spark.jars before the JVM starts (a later spark.jars setting on "
            "the builder must keep it)"
        )
    return cls


def observed_values(observation: Observation, names: Iterable[str]) -> dict[str, Any]:
    """The values ``observation`` (after its action) recorded under ``names``, as PySpark's
    ``Observation.get`` gives them. That method iterates the JVM's map to its end, where
    a ``NoSuchElementException`` goes through PySpark's (and our) error conversion: about 40
    py4j calls and 12 ms per MERGE."""
    recorded = observation._jo.getAsJava()
    return {name: recorded.get(name) for name in names}


def deleted_rows(spark: SparkSession, vectors: Iterable[tuple[str, BitMap64]]) -> Any:
    """A ``DeletedRows`` holding each file's (``_metadata.file_path``) deleted rows."""
    paths, bitmaps = bytearray(), bytearray()
    for path, rows in vectors:
        paths += path.encode() + b"\0"
        bitmaps += rows.serialize()
    deleted = new_object(spark, "deltapyspark.DeletedRows")
    deleted.addAll(paths, bitmaps)
    return deleted


# Each class's PySpark base, chosen as delta-spark's error reaches a PySpark user: its
# AnalysisException / IllegalArgumentException / UnsupportedOperationException subclasses
# as PySpark's classes of those names, its Python API's TypeErrors as PySparkTypeError, its
# concurrency conflicts as PySparkException (the base of delta-spark's Python
# ``delta.exceptions``), the rest (JVM errors PySpark has no class for) as PySparkException.
# Subclasses inherit their parent's base.
PYSPARK_BASES: dict[type[ex.DeltaError], type[PySparkException]] = {
    ex.DeltaAnalysisException: AnalysisException,
    ex.DeltaParseException: ParseException,
    ex.DeltaIllegalArgumentException: IllegalArgumentException,
    ex.DeltaTypeError: PySparkTypeError,
    ex.DeltaUnsupportedOperationException: UnsupportedOperationException,
    ex.DeltaConcurrentModificationException: PySparkException,
    ex.CorruptLogError: PySparkException,
    ex.UnsupportedTableFeatureError: PySparkException,
    ex.DeltaJvmExtensionError: PySparkException,
    ex.FileAlreadyExistsError: PySparkException,
    ex.InvariantViolationError: PySparkException,
    ex.DeltaTableFeatureException: PySparkException,
}


def _error_init(self: ex.DeltaError, *args: Any) -> None:
    """Our constructor (message first) filling the fields PySparkException's methods read;
    PySparkException's own ``__init__`` takes an error class where we pass more args."""
    if not isinstance(self, PySparkException):
        super(ex.DeltaError, self).__init__(*args)
        return
    super(PySparkException, self).__init__(*args)
    self._message = str(args[0]) if args else ""
    self._errorClass = type(self).error_class
    self._messageParameters = {}
    self._contexts = []


def _error_str(self: ex.DeltaError) -> str:
    """The message alone, as before (PySpark's would prefix the error class; ``getMessage()``
    still does)."""
    if isinstance(self, PySparkException):
        return super(PySparkException, self).__str__()
    return super(ex.DeltaError, self).__str__()


def _error_message(self: PySparkException) -> str:
    condition = self.getCondition()
    return f"[{condition}] {self._message}" if condition else self._message


def give_errors_pyspark_bases() -> None:
    """Give every mapped class of ``delta_pyspark.exceptions`` its PySpark base (idempotent):
    the core raises them without importing pyspark, and ``except AnalysisException`` must
    catch ``SchemaMismatchError`` as it catches delta-spark's analysis errors."""
    if getattr(ex.DeltaError, "_pyspark_bases", False):
        return
    ex.DeltaError.__init__ = _error_init  # type: ignore[method-assign,assignment]
    ex.DeltaError.__str__ = _error_str  # type: ignore[method-assign,assignment]
    ex.DeltaError.getMessage = _error_message  # type: ignore[attr-defined]
    for cls, base in PYSPARK_BASES.items():
        if not issubclass(cls, base):
            # after our bases, before builtin ones (PySparkTypeError precedes TypeError)
            ours = tuple(b for b in cls.__bases__ if issubclass(b, ex.DeltaError))
            builtin = tuple(b for b in cls.__bases__ if b not in ours)
            cls.__bases__ = (*ours, base, *builtin)
    ex.DeltaError._pyspark_bases = True  # type: ignore[attr-defined]
