"""Our exceptions as PySpark's, both ways.

Our exception classes get PySpark's exception classes as extra bases when the engine is
imported (``give_errors_pyspark_bases``): ``delta_pyspark.exceptions`` stays Spark-free for
the core, and a delta-spark user's ``except AnalysisException`` still catches our errors;
``str(e)`` stays our message and ``getCondition()`` gives delta-spark's error class where we
know it. ``convert_errors`` patches PySpark's ``convert_exception`` so that an error the
Python core raised inside a JVM call reaches the user as itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.errors import (
    AnalysisException,
    IllegalArgumentException,
    ParseException,
    PySparkException,
    PySparkTypeError,
    UnsupportedOperationException,
)

from delta_pyspark import exceptions as ex


def convert_errors(original_of: Callable[[str], BaseException | None]) -> None:
    """Make PySpark raise ``original_of(message)`` for a JVM error when it is not None for
    the message of the error or of one of its causes (and the error is not a streaming
    query's failure), instead of its conversion (PySpark 4.0's ``captured.convert_exception``,
    which its py4j hook looks up at each error). Installed once per process."""
    from pyspark.errors.exceptions import captured

    converted = captured.convert_exception
    if getattr(converted, "_delta_pyspark", False):
        return

    def convert(java_error: Any) -> BaseException:
        if _is_streaming_failure(java_error):
            return converted(java_error)  # the query's failure names ours in its message
        failure = _first_original(java_error, original_of)
        return failure if failure is not None else converted(java_error)

    convert._delta_pyspark = True  # type: ignore[attr-defined]
    # PySpark's hook raises whatever the conversion returns; its annotation names only its own
    # CapturedException
    captured.convert_exception = convert  # type: ignore[assignment]


def pass_on_jvm_error(token: str, message: str, error: BaseException) -> None:
    """Hand the helper, under ``token`` (the answer's), the JVM error to throw for ``error``
    (``DeltaSource.passOn``), when it is not the AnalysisException carrying ``message`` the
    helper throws by default: PySpark's conversion of a JVM error is that error again (a
    ``ParseException`` stays one), and an error whose PySpark base is
    ``UnsupportedOperationException`` or ``IllegalArgumentException`` is Java's of that name
    with ``message``. Spark Connect clients get their error's class from the JVM's."""
    from py4j.java_gateway import JavaClass, JavaObject
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or context._jvm is None:
        return
    jvm = context._jvm
    origin = getattr(error, "_origin", None)
    failure: Any = origin if isinstance(origin, JavaObject) else None
    if failure is None and isinstance(error, UnsupportedOperationException):
        failure = jvm.java.lang.UnsupportedOperationException(message)
    elif failure is None and isinstance(error, IllegalArgumentException):
        failure = jvm.java.lang.IllegalArgumentException(message)
    source = jvm.deltapyspark.DeltaSource
    if failure is not None and isinstance(source, JavaClass):
        source.passOn(token, failure)


def _first_original(
    java_error: Any, original_of: Callable[[str], BaseException | None]
) -> BaseException | None:
    cause = java_error
    while cause is not None:
        found = original_of(str(cause.toString()))
        if found is not None:
            return found
        cause = cause.getCause()
    return None


def _is_streaming_failure(java_error: Any) -> bool:
    """A streaming query's failure: PySpark users catch it as ``StreamingQueryException``,
    whatever failed inside the query."""
    try:
        name = str(java_error.getClass().getName())
    except Exception:  # not a JVM object
        return False
    return name == "org.apache.spark.sql.streaming.StreamingQueryException"


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
    ex.StorageAccessError: PySparkException,
    ex.VacuumLiteUnavailableError: PySparkException,
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
    condition = self.condition
    message = str(args[0]) if args else ""
    opening = f"[{condition}] "
    self._message = message.removeprefix(opening) if condition else message
    self._errorClass = condition
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
