"""The catalog on PostgreSQL (``psycopg`` 3), for many writers on many machines.

Ratification is an ``UPDATE ... WHERE latest_version = v - 1`` per table: a concurrent
ratification of the same table blocks on the row lock and, once the winner commits,
re-checks the condition under READ COMMITTED and updates nothing, so each version is
ratified at most once. Reads run REPEATABLE READ so their statements agree.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from delta_pyspark.core.catalog.database import CatalogBackend, _Cursor
from delta_pyspark.exceptions import DeltaError


def redact(url: str) -> str:
    """``url`` without its password, for messages."""
    parsed = urlsplit(url)
    if parsed.password is None:
        return url
    netloc = parsed.netloc.replace(f":{parsed.password}@", ":***@", 1)
    return urlunsplit(parsed._replace(netloc=netloc))


class _QmarkCursor:
    """A psycopg cursor taking the shared SQL's ``?`` placeholders."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        return self._cursor.execute(sql.replace("?", "%s"), list(params))

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall())

    def fetchone(self) -> Any:
        return self._cursor.fetchone()


class PostgresCatalogBackend(CatalogBackend):
    """A catalog in a PostgreSQL database; one connection per backend object."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise DeltaError(
                "a PostgreSQL catalog needs psycopg: pip install 'delta-pyspark[postgres]'"
            ) from None
        self.url = redact(url)
        self._psycopg = psycopg
        try:
            self._conn = psycopg.connect(url, autocommit=True)
        except psycopg.OperationalError as e:
            raise DeltaError(f"cannot connect to catalog {self.url}: {e}") from None
        self._lock = threading.RLock()
        self._init_schema()

    @contextmanager
    def _transaction(self, isolation: str) -> Iterator[_Cursor]:
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            cur.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
            yield _QmarkCursor(cur)

    def _write(self) -> AbstractContextManager[_Cursor]:
        return self._transaction("READ COMMITTED")

    def _read(self) -> AbstractContextManager[_Cursor]:
        return self._transaction("REPEATABLE READ, READ ONLY")

    def _is_unique_violation(self, error: Exception) -> bool:
        return isinstance(error, self._psycopg.errors.UniqueViolation)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
