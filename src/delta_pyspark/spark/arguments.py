"""The argument checks delta-spark's Python API makes, with the same exception kinds.

delta-spark checks types in Python before calling the JVM and raises ``TypeError`` or
``ValueError`` whose messages name the argument; user code (and delta-spark's own tests)
matches on those, so ours raise ``DeltaTypeError`` (a ``TypeError``) and
``DeltaIllegalArgumentException`` (a ``ValueError``) with the same wording. Shared by the
API layer (``DeltaTable``, its table builder) and the data plane's merge/optimize builders.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from delta_pyspark.exceptions import DeltaIllegalArgumentException, DeltaTypeError


def _is_column(value: Any) -> bool:
    from pyspark.sql import Column

    return isinstance(value, Column)


def check_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise DeltaIllegalArgumentException(f"{name} needs to be a string but got '{type(value)}'.")
    return value


def check_int(value: Any, name: str) -> int:
    if not isinstance(value, int):
        raise DeltaIllegalArgumentException(f"{name} needs to be an int but got '{type(value)}'.")
    return value


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise DeltaIllegalArgumentException(
            f"{name} needs to be a boolean but got '{type(value)}'."
        )
    return value


def check_dict(value: Any, name: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise DeltaIllegalArgumentException(f"{name} needs to be a dict but got '{type(value)}'.")
    return value


def check_version(value: Any, name: str) -> int:
    """A protocol version: delta-spark's "needs to be an integer" wording."""
    if not isinstance(value, int):
        raise DeltaIllegalArgumentException(
            f"The {name} needs to be an integer but got '{type(value)}'."
        )
    return value


def check_condition(condition: Any, name: str = "'condition'") -> Any:
    """None, a SQL expression string or a ``Column``."""
    if condition is None or isinstance(condition, str) or _is_column(condition):
        return condition
    raise DeltaTypeError(
        f"{name} must be a Spark SQL Column or a string (expression in SQL syntax), "
        f"found to be of type {type(condition)}"
    )


def check_assignments(assignments: Any, name: str) -> dict[str, Any]:
    """A dict of column name -> SQL expression string or ``Column`` (UPDATE SET, INSERT
    VALUES)."""
    if assignments is None:
        raise DeltaIllegalArgumentException(f"{name} cannot be None")
    if not isinstance(assignments, dict):
        raise DeltaTypeError(f"{name} must be a dict, found to be {type(assignments)}")
    for column, value in assignments.items():
        if not isinstance(column, str):
            raise DeltaTypeError(
                f"Keys of dict in {name} must contain only strings with column names, "
                f"found '{column}' of type '{type(column)}'"
            )
        if not (isinstance(value, str) or _is_column(value)):
            raise DeltaTypeError(
                f"Values of dict in {name} must contain only Spark SQL Columns or strings "
                f"(expressions in SQL syntax) as values, found '{value}' of type '{type(value)}'"
            )
    return assignments


def check_merge_source(source: Any, condition: Any) -> None:
    from pyspark.sql import DataFrame

    if source is None:
        raise DeltaIllegalArgumentException("'source' in merge cannot be None")
    if not isinstance(source, DataFrame):
        raise DeltaTypeError("Type of 'source' in merge must be DataFrame.")
    if condition is None:
        raise DeltaIllegalArgumentException("'condition' in merge cannot be None")
    check_condition(condition)


def check_type(ok: bool, message: str, values: Iterable[Any]) -> None:
    """The table builder's checks: ``message`` followed by what was given."""
    if not ok:
        found = "".join(f" Found {v} with type {type(v)}" for v in values)
        raise DeltaTypeError(message + found)


def column_names(cols: tuple[Any, ...], what: str) -> list[str]:
    """``*cols`` given as names or as one list/tuple of names (partitionedBy, zorder)."""
    names = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], list | tuple) else list(cols)
    for c in names:
        check_type(isinstance(c, str), f"{what} must be str.", [c])
    return names
