"""What delta-pyspark patches in PySpark, process-wide, and why.

- ``SparkSession.__init__`` (``on_every_session``): the JVM can call the Python core only once
  a session has registered it, and a first ``spark.sql`` on a Delta table runs no Python.
- ``DataFrameWriter.saveAsTable`` for the ``delta`` format (``route_save_as_table``): Spark's
  own drops a table it overwrites, and a Delta table's history with it.
- The terminal methods of ``DataFrameWriterV2`` (``route_writer_v2``): Spark plans its writes
  for V2 catalogs only; ``TableDefinitions.java`` reads the JVM writer's private fields.
- ``pyspark.sql.utils.is_remote`` (``classic_in_callbacks``): a process that is a Spark
  Connect client of a server it runs itself (``remote("local")``) has PySpark's functions
  build Connect columns everywhere, also in the threads where the JVM calls the Python core,
  which works on the server's classic sessions.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from delta_pyspark.spark.jvm.bridge import helper_class, java_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_Served = TypeVar("_Served", bound=type)
_Work = TypeVar("_Work", bound=Callable[..., Any])

# set in a thread while it serves a call from the JVM (``classic_in_callbacks``)
_serving = threading.local()


def classic_in_callbacks(served: _Served) -> _Served:
    """Class decorator for the Python objects the JVM calls: while one of their methods runs,
    PySpark takes its thread for a classic one (PySpark's ``is_remote`` is False there), so
    the core's Columns and DataFrames are the JVM's even in a Spark Connect client process."""
    _classic_while_serving()
    for name, member in list(vars(served).items()):
        if callable(member) and not isinstance(member, type) and not name.startswith("_"):
            setattr(served, name, _serving_call(member))
    return served


def _serving_call(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def serve(*args: Any, **kwargs: Any) -> Any:
        with classic_thread():
            return method(*args, **kwargs)

    return serve


@contextmanager
def classic_thread() -> Iterator[None]:
    """PySpark's classic API in this thread while the block runs, in any process: the engine
    working on the classic session behind a Spark Connect one (``jvm.connect``)."""
    _classic_while_serving()
    outer = getattr(_serving, "active", False)
    _serving.active = True
    try:
        yield
    finally:
        _serving.active = outer


def in_this_threads_mode(work: _Work) -> _Work:
    """``work``, to be run by another thread (a pool's), in this thread's PySpark mode: a
    new thread is not serving, so without this it would build Connect columns in a Spark
    Connect client process while this one works on the classic session."""
    if not getattr(_serving, "active", False):
        return work

    @functools.wraps(work)
    def run(*args: Any, **kwargs: Any) -> Any:
        with classic_thread():
            return work(*args, **kwargs)

    return run  # type: ignore[return-value]


def _classic_while_serving() -> None:
    import pyspark.sql
    import pyspark.sql.internal
    import pyspark.sql.observation
    import pyspark.sql.utils as utils

    original = utils.is_remote
    if getattr(original, "_delta_pyspark", False):
        return

    @functools.wraps(original)
    def is_remote() -> bool:
        return not getattr(_serving, "active", False) and original()

    is_remote._delta_pyspark = True  # type: ignore[attr-defined]
    # the modules the engine's calls reach that bound the name when imported
    for module in (utils, pyspark.sql, pyspark.sql.internal, pyspark.sql.observation):
        module.is_remote = is_remote  # type: ignore[attr-defined]


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


def _option_text(value: Any) -> str:
    """An option value as PySpark passes it to the JVM (booleans lower-case)."""
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)
