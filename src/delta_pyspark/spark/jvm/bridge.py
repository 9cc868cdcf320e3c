"""The handles delta-pyspark holds on PySpark's JVM side: the classic session and its SQL
conf, a DataFrame's Dataset and back, the JVM's classes and arrays, the helper jar's classes,
the callback server the JVM calls the Python core through, and PySpark's call-site capture
turned off while our own plans are built (``internal_plans``).

py4j is reached through ``spark._jvm``/``_jsparkSession``/``df._jdf`` only here; the rest of
the package asks this package's modules with DataFrames, Columns and plain values. A Spark Connect
session has no JVM session in Python: ``classic_session`` refuses it by name (``connect``
reaches the classic session behind one whose server is in this process).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from delta_pyspark.exceptions import DeltaJvmExtensionError, DeltaUnsupportedOperationException

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation, SparkSession


def check_connect_is_local(options: dict[str, Any]) -> None:
    """Refuse a builder for a Spark Connect server elsewhere (``remote("sc://...")``,
    ``SPARK_REMOTE``): the Python core must be in the server's process. A local one
    (``remote("local[*]")``, ``spark.api.mode=connect``) runs the server in this process."""
    remote = str(options.get("spark.remote") or os.environ.get("SPARK_REMOTE") or "")
    if remote and not remote.startswith("local"):
        raise _connect_error()


def _connect_error() -> DeltaUnsupportedOperationException:
    return DeltaUnsupportedOperationException(
        "delta-pyspark needs the Spark Connect server in this process (the Python core "
        'answers the JVM\'s planner over py4j): use remote("local[*]") or '
        "spark.api.mode=connect, or connect to a server started with "
        "`delta-pyspark connect-server`"
    )


def classic_session(spark: SparkSession) -> Any:
    """The JVM's ``SparkSession`` behind ``spark``; a typed error for a Spark Connect one."""
    java = getattr(spark, "_jsparkSession", None)
    if java is None:
        raise DeltaUnsupportedOperationException(
            "this call needs a classic SparkSession (a JVM in this process); on a Spark "
            'Connect session use format("delta"), SQL, or delta_pyspark.tables.DeltaTable'
        )
    return java


def java_frame(df: DataFrame) -> Any:
    """The JVM's ``Dataset`` behind ``df``."""
    classic_session(df.sparkSession)
    return df._jdf


def python_frame(java_dataset: Any, spark: SparkSession) -> DataFrame:
    """A PySpark ``DataFrame`` over a JVM ``Dataset``."""
    from pyspark.sql import DataFrame as SparkFrame

    return SparkFrame(java_dataset, spark)


def python_column(java_column: Any) -> Column:
    """A PySpark ``Column`` over a JVM ``Column``."""
    from pyspark.sql.classic.column import Column as ClassicColumn

    return ClassicColumn(java_column)


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


def thread_properties(*names: str) -> list[str | None]:
    """Local properties of the JVM thread the calling Python thread is paired with (py4j's
    pinned threads; for a callback, the JVM thread that called back): what Spark scopes to
    one thread's work. All None without a running SparkContext."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return [None for _ in names]
    jsc = context._jsc
    assert jsc is not None
    spark_context = jsc.sc()
    return [spark_context.getLocalProperty(n) for n in names]


def sql_conf(spark: SparkSession) -> Any:
    """The JVM's ``SQLConf`` of ``spark``, for typed settings PySpark does not expose
    (broadcast threshold, split sizes)."""
    return classic_session(spark).sessionState().conf()


def hadoop_settings(spark: SparkSession, prefix: str) -> dict[str, str]:
    """The Hadoop settings under ``prefix`` (stripped) that the session's file scans and
    writes use: the context's, overlaid with the session's ``spark.hadoop.*`` confs."""
    props = classic_session(spark).sessionState().newHadoopConf().getPropsWithPrefix(prefix)
    return {str(k): str(v) for k, v in dict(props).items()}


def parsed_expression_text(spark: SparkSession, sql: str) -> str:
    """``sql`` as Spark's parser prints its unresolved expression (``key = 'a'`` is
    ``('key = a)``): how delta-spark records some commands' predicates in history."""
    return str(classic_session(spark).sessionState().sqlParser().parseExpression(sql).toString())


def jvm(spark: SparkSession) -> Any:
    """py4j's view of the session's JVM (``jvm(spark).java.util...``)."""
    classic_session(spark)
    return spark._jvm


def _gateway(spark: SparkSession) -> Any:
    """py4j's gateway to the session's JVM (PySpark's ``SparkContext._gateway``, set once a
    context exists, as the session's does)."""
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    return gateway


def new_array(spark: SparkSession, java_type: Any, length: int) -> Any:
    """A new Java array of ``length`` ``java_type``s (``jvm(spark).long``, ...)."""
    return _gateway(spark).new_array(java_type, length)


def serve_callbacks(spark: SparkSession, name: str, register: Callable[[], None]) -> None:
    """Start py4j's callback server (the JVM calling Python objects) and run ``register``
    (which hands the JVM the Python objects it calls) once per ``name`` and gateway: the
    sessions of one process share their gateway."""
    gateway = _gateway(spark)
    registered = gateway.__dict__.setdefault("_delta_pyspark_callbacks", set())
    if name in registered:
        return
    from pyspark.java_gateway import ensure_callback_server_started

    # PySpark leaves this function unannotated
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    register()
    registered.add(name)


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
            # PySpark's module declares the flag as a bare None (its inferred type)
            origins._enable_debugging_cache = False  # type: ignore[assignment]
        _internal_depth += 1
    try:
        yield
    finally:
        with _internal:
            _internal_depth -= 1
            if _internal_depth == 0:
                origins._enable_debugging_cache = _call_sites_flag  # type: ignore[assignment]


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
    observer = observation._jo
    assert observer is not None  # set when the DataFrame was observed
    recorded = observer.getAsJava()
    return {name: recorded.get(name) for name in names}


def read_through_jvm(
    spark: SparkSession, source: str, path: str, options: dict[str, str]
) -> DataFrame:
    """``spark.read.format(source).options(options).load(path)`` planned by the JVM's reader
    directly, past PySpark's (and our hooks on it)."""
    reader = classic_session(spark).read().format(source)
    for key, value in options.items():
        reader = reader.option(key, value)
    return python_frame(reader.load(path), spark)
