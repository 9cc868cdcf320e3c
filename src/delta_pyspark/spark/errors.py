"""Our typed errors are also the PySpark exceptions delta-spark users catch.

``delta_pyspark.exceptions`` must stay Spark-free (the core raises its classes), so the PySpark
bases are added here, once, when the Spark layer is imported: ``except AnalysisException``
then catches ``SchemaMismatchError`` as it catches delta-spark's analysis errors, and
``getCondition()`` gives delta-spark's error class where we know it. ``str(e)`` stays our
message, and errors pickle as before.
"""

from __future__ import annotations

from typing import Any

from pyspark.errors import (
    AnalysisException,
    IllegalArgumentException,
    PySparkException,
    PySparkTypeError,
    UnsupportedOperationException,
)

from delta_pyspark import exceptions as ex

# Each class's PySpark base, chosen as delta-spark's error reaches a PySpark user: its
# AnalysisException / IllegalArgumentException / UnsupportedOperationException subclasses
# as PySpark's classes of those names, its Python API's TypeErrors as PySparkTypeError, its
# concurrency conflicts as PySparkException (the base of delta-spark's Python
# ``delta.exceptions``), the rest (JVM errors PySpark has no class for) as PySparkException.
# Subclasses inherit their parent's base.
PYSPARK_BASES: dict[type[ex.DeltaError], type[PySparkException]] = {
    ex.DeltaAnalysisException: AnalysisException,
    ex.DeltaIllegalArgumentException: IllegalArgumentException,
    ex.DeltaTypeError: PySparkTypeError,
    ex.DeltaUnsupportedOperationException: UnsupportedOperationException,
    ex.DeltaConcurrentModificationException: PySparkException,
    ex.CorruptLogError: PySparkException,
    ex.UnsupportedTableFeatureError: PySparkException,
    ex.DeltaJvmExtensionError: PySparkException,
    ex.FileAlreadyExistsError: PySparkException,
    ex.InvariantViolationError: PySparkException,
}


def _init(self: ex.DeltaError, *args: Any) -> None:
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


def _str(self: ex.DeltaError) -> str:
    """The message alone, as before (PySpark's would prefix the error class; ``getMessage()``
    still does)."""
    if isinstance(self, PySparkException):
        return super(PySparkException, self).__str__()
    return super(ex.DeltaError, self).__str__()


def _message(self: PySparkException) -> str:
    condition = self.getCondition()
    return f"[{condition}] {self._message}" if condition else self._message


def install() -> None:
    """Give every mapped class its PySpark base (idempotent)."""
    if getattr(ex.DeltaError, "_pyspark_bases", False):
        return
    ex.DeltaError.__init__ = _init  # type: ignore[method-assign,assignment]
    ex.DeltaError.__str__ = _str  # type: ignore[method-assign,assignment]
    ex.DeltaError.getMessage = _message  # type: ignore[attr-defined]
    for cls, base in PYSPARK_BASES.items():
        if not issubclass(cls, base):
            # after our bases, before builtin ones (PySparkTypeError precedes TypeError)
            ours = tuple(b for b in cls.__bases__ if issubclass(b, ex.DeltaError))
            builtin = tuple(b for b in cls.__bases__ if b not in ours)
            cls.__bases__ = (*ours, base, *builtin)
    ex.DeltaError._pyspark_bases = True  # type: ignore[attr-defined]
