"""``DeltaTable`` on a Spark Connect session whose server runs in this process
(``remote("local[*]")``, ``spark.api.mode=connect``).

The table's operations run unchanged on the classic session the server keeps behind the
Connect one (same temp views, settings and catalog): ``OverConnect`` wraps a ``DeltaTable``
or one of its builders, turns the Connect DataFrames, Columns and sessions it is given into
the server's classic ones, and the DataFrames it returns into Connect ones. A result
(history, metrics) is small and comes back as rows; ``toDF`` is a Connect read of the table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pyspark.sql import DataFrame

from delta_pyspark.spark.jvm.connect import (
    activate,
    client_frame,
    is_connect,
    server_column,
    server_frame,
    server_session,
)
from delta_pyspark.spark.jvm.hooks import classic_thread

_Made = TypeVar("_Made", bound=Callable[..., Any])


class OverConnect:
    """One of delta-pyspark's API objects, used from Spark Connect session ``client``."""

    def __init__(self, target: Any, client: Any) -> None:
        self._target = target
        self._client = client

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._target, name)
        if not callable(member):
            return member

        if name == "toDF":  # a Connect read of the table, not the server's classic one
            return lambda: self._read(self._target)

        @functools.wraps(member)
        def call(*args: Any, **kwargs: Any) -> Any:
            return _on_server(self._client, member, args, kwargs)

        return call

    def _read(self, table: Any) -> Any:
        df = self._client.read.format("delta").load(table._path)
        return df.alias(table._alias) if table._alias else df

    def __repr__(self) -> str:
        return f"{self._target!r} (over Spark Connect)"


def over_connect(made: _Made) -> _Made:
    """Decorator for the constructors of the API (``DeltaTable.forPath``, ``create``, ...):
    given a Connect session as first argument, they run on its server's classic session
    and what they make is used through ``OverConnect``."""

    @functools.wraps(made)
    def make(cls: Any, *args: Any, **kwargs: Any) -> Any:
        client = args[0] if args else kwargs.get("sparkSession")
        if client is None and not kwargs:  # ``create()``: the active session's
            from pyspark.sql import SparkSession

            client = SparkSession.getActiveSession()
            args = (client,)
        if client is None or not is_connect(client):
            return made(cls, *args, **kwargs)
        return _on_server(client, functools.partial(made, cls), args, kwargs)

    return make  # type: ignore[return-value]


def _on_server(client: Any, call: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """``call`` with ``args`` run on the classic session behind Connect session ``client``,
    its result as the Connect user takes it."""
    with classic_thread():
        activate(client)
        served_args = [_served(a, client) for a in args]
        served_kwargs = {k: _served(v, client) for k, v in kwargs.items()}
        return _returned(call(*served_args, **served_kwargs), client)


def _served(value: Any, client: Any) -> Any:
    """``value`` as the server's engine takes it."""
    if isinstance(value, OverConnect):
        return value._target
    if isinstance(value, dict):
        return {k: _served(v, client) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_served(v, client) for v in value)
    if not is_connect(value):
        return value
    kind = type(value).__name__
    if kind == "SparkSession":
        return server_session(value)
    if kind == "DataFrame":
        return server_frame(value)
    if kind == "Column":
        return server_column(value, client)
    return value


def _returned(value: Any, client: Any) -> Any:
    """``value``, an engine's result, as the Connect user takes it."""
    if isinstance(value, DataFrame):
        return client_frame(client, value)
    if type(value).__module__.startswith("delta_pyspark."):
        return OverConnect(value, client)
    return value
