"""The embedded catalog: one SQLite file (stdlib ``sqlite3``), zero set-up.

WAL mode lets readers run while a writer ratifies; every write transaction starts with
``BEGIN IMMEDIATE`` so it holds the database's write lock from its first statement and
two ratifications of the same version are serialised, never interleaved.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from urllib.parse import unquote, urlparse

from delta_pyspark.core.catalog.database import CatalogBackend, _Cursor

BUSY_TIMEOUT_MS = 60_000


def is_sqlite_url(url: str) -> bool:
    """Whether ``url`` names a SQLite catalog (``open_backend``'s rule)."""
    scheme = urlparse(url).scheme
    return scheme in ("sqlite", "", "file") or len(scheme) == 1


def sqlite_path(url: str) -> str:
    """A file path from ``sqlite:///relative/path``, ``sqlite:////absolute/path`` (as
    SQLAlchemy spells them), a ``file:`` URI or a plain path."""
    if url.startswith("sqlite:///"):
        return unquote(url[len("sqlite:///") :])
    if url.startswith("sqlite:"):
        return unquote(url[len("sqlite:") :])
    if url.startswith("file:"):
        return unquote(urlparse(url).path)
    return url


class SqliteCatalogBackend(CatalogBackend):
    """A catalog in a SQLite file; one connection per backend object, used under a lock."""

    def __init__(self, url: str) -> None:
        self.path = os.path.abspath(sqlite_path(url))
        self.url = f"sqlite:///{self.path}"
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")  # a ratified commit survives power loss
        self._lock = threading.RLock()
        self._init_schema()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[_Cursor]:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute(begin)
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def _write(self) -> AbstractContextManager[_Cursor]:
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> AbstractContextManager[_Cursor]:
        return self._transaction("BEGIN DEFERRED")

    def _is_unique_violation(self, error: Exception) -> bool:
        return isinstance(error, sqlite3.IntegrityError)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
