"""The catalog's database: table registry and commit ratification, behind one interface.

A catalog registers tables (name -> location, managed or external, catalog-managed or
not) and, for catalog-managed tables, is the source of truth for which commit won each
version (PROTOCOL.md "Catalog-managed tables"): it ratifies version ``v`` only after
``v - 1`` and at most once, and stores the staged commit's file name until the commit
is published to ``<v>.json``. Several ratifications (of different tables) commit in
one database transaction or not at all, which is what multi-table transactions need.

The SQL is shared; ``sqlite`` and ``postgres`` supply connections.
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlparse

from delta_pyspark.exceptions import (
    ConcurrentWriteException,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
)


class TableAlreadyExistsError(DeltaAnalysisException):
    """The catalog already has a table of that name (or at that location)."""


class CommitConflictError(ConcurrentWriteException):
    """Ratification lost: another commit already holds the version (nothing was ratified).

    ``latest`` maps each losing table id to the latest version the catalog has ratified.
    """

    def __init__(self, message: str, latest: dict[str, int]) -> None:
        super().__init__(message)
        self.latest = latest


@dataclass(frozen=True)
class TableEntry:
    """One registered table. ``latest_version`` is None for tables the catalog does not
    manage the commits of (filesystem tables registered by name)."""

    name: str
    table_id: str
    location: str
    managed: bool
    catalog_managed: bool
    latest_version: int | None
    created_ms: int

    @classmethod
    def new(cls, name: str, location: str, managed: bool, catalog_managed: bool) -> TableEntry:
        return cls(
            name,
            str(uuid.uuid4()),
            location,
            managed,
            catalog_managed,
            None,
            int(time.time() * 1000),
        )


@dataclass(frozen=True)
class Ratification:
    """A proposal: ``staged_name`` (under ``_delta_log/_staged_commits``) as ``version``."""

    table_id: str
    version: int
    staged_name: str


@dataclass(frozen=True)
class StoredCommit:
    """A ratified commit the catalog still stores (not yet published)."""

    version: int
    staged_name: str
    ratified_ms: int


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchone(self) -> Any: ...


SCHEMA = (
    """CREATE TABLE IF NOT EXISTS delta_tables (
        name TEXT PRIMARY KEY,
        table_id TEXT NOT NULL UNIQUE,
        location TEXT NOT NULL UNIQUE,
        managed INTEGER NOT NULL,
        catalog_managed INTEGER NOT NULL,
        latest_version BIGINT,
        created_ms BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS delta_commits (
        table_id TEXT NOT NULL,
        version BIGINT NOT NULL,
        staged_name TEXT NOT NULL,
        ratified_ms BIGINT NOT NULL,
        published INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (table_id, version)
    )""",
)
_COLUMNS = "name, table_id, location, managed, catalog_managed, latest_version, created_ms"


def _entry(row: Sequence[Any]) -> TableEntry:
    name, table_id, location, managed, cm, latest, created = row
    return TableEntry(
        name,
        table_id,
        location,
        bool(managed),
        bool(cm),
        None if latest is None else int(latest),
        int(created),
    )


class CatalogBackend(ABC):
    """One catalog database. Subclasses open connections and transactions; the SQL
    (written with ``?`` placeholders) is shared."""

    url: str

    @abstractmethod
    def _write(self) -> AbstractContextManager[_Cursor]:
        """A read-write database transaction: committed on exit, rolled back on error;
        concurrent writers are serialised (or blocked on the rows they update)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[_Cursor]:
        """A read-only transaction whose statements see one consistent database state."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _is_unique_violation(self, error: Exception) -> bool: ...

    def _init_schema(self) -> None:
        with self._write() as cur:
            for statement in SCHEMA:
                cur.execute(statement)

    # ------------------------------------------------------------ the registry

    def register(self, entry: TableEntry, first: Ratification | None = None) -> None:
        """Add ``entry``; with ``first`` (version 0 of a catalog-managed table) ratify it in
        the same database transaction, so a table is never visible without a version."""
        try:
            with self._write() as cur:
                cur.execute(
                    f"INSERT INTO delta_tables ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        entry.name,
                        entry.table_id,
                        entry.location,
                        int(entry.managed),
                        int(entry.catalog_managed),
                        0 if first is not None else None,
                        entry.created_ms,
                    ),
                )
                if first is not None:
                    self._insert_commit(cur, first)
        except Exception as e:
            if self._is_unique_violation(e):
                raise TableAlreadyExistsError(
                    f"the catalog already has a table named {entry.name!r} or a table at "
                    f"{entry.location}"
                ) from None
            raise

    def get(self, name: str) -> TableEntry:
        with self._read() as cur:
            cur.execute(f"SELECT {_COLUMNS} FROM delta_tables WHERE name = ?", (name,))
            row = cur.fetchone()
        if row is None:
            raise DeltaTableNotFoundError(f"table {name!r} is not in catalog {self.url}")
        return _entry(row)

    def list_tables(self) -> list[TableEntry]:
        with self._read() as cur:
            cur.execute(f"SELECT {_COLUMNS} FROM delta_tables ORDER BY name")
            return [_entry(r) for r in cur.fetchall()]

    def unregister(self, name: str) -> TableEntry:
        """Remove ``name`` and its stored commits (the files stay: a soft delete)."""
        with self._write() as cur:
            cur.execute(f"SELECT {_COLUMNS} FROM delta_tables WHERE name = ?", (name,))
            row = cur.fetchone()
            if row is None:
                raise DeltaTableNotFoundError(f"table {name!r} is not in catalog {self.url}")
            entry = _entry(row)
            cur.execute("DELETE FROM delta_commits WHERE table_id = ?", (entry.table_id,))
            cur.execute("DELETE FROM delta_tables WHERE name = ?", (name,))
        return entry

    # ------------------------------------------------------------ commits

    @staticmethod
    def _insert_commit(cur: _Cursor, r: Ratification) -> None:
        cur.execute(
            "INSERT INTO delta_commits (table_id, version, staged_name, ratified_ms) "
            "VALUES (?, ?, ?, ?)",
            (r.table_id, r.version, r.staged_name, int(time.time() * 1000)),
        )

    def ratify(self, proposals: Sequence[Ratification]) -> None:
        """Ratify every proposal in one database transaction, or none of them.

        Version ``v`` of a table is ratified only when ``v - 1`` is its latest version;
        otherwise ``CommitConflictError`` (with the winners' latest versions) and nothing
        changes. Tables are updated in id order so concurrent writers cannot deadlock.
        """
        ordered = sorted(proposals, key=lambda r: r.table_id)
        if len({r.table_id for r in ordered}) != len(ordered):
            raise DeltaIllegalArgumentException("one ratification per table at a time")
        lost: dict[str, int] = {}
        with self._write() as cur:
            for r in ordered:
                cur.execute(
                    "UPDATE delta_tables SET latest_version = ? "
                    "WHERE table_id = ? AND latest_version = ? AND catalog_managed = 1",
                    (r.version, r.table_id, r.version - 1),
                )
                if cur.rowcount != 1:
                    cur.execute(
                        "SELECT latest_version FROM delta_tables WHERE table_id = ?",
                        (r.table_id,),
                    )
                    row = cur.fetchone()
                    if row is None or row[0] is None:
                        raise DeltaTableNotFoundError(
                            f"table id {r.table_id} is not a catalog-managed table of {self.url}"
                        )
                    lost[r.table_id] = int(row[0])
            if lost:
                raise CommitConflictError(
                    "; ".join(
                        f"table {r.table_id}: version {r.version} is taken "
                        f"(latest is {lost[r.table_id]})"
                        for r in ordered
                        if r.table_id in lost
                    ),
                    lost,
                )
            for r in ordered:
                self._insert_commit(cur, r)

    def ratified_commits(
        self, table_id: str, start: int = 0, end: int | None = None
    ) -> tuple[int, list[StoredCommit]]:
        """The latest ratified version and the unpublished ratified commits in
        ``[start, end]`` (ascending), read in one consistent transaction."""
        with self._read() as cur:
            cur.execute("SELECT latest_version FROM delta_tables WHERE table_id = ?", (table_id,))
            row = cur.fetchone()
            if row is None or row[0] is None:
                raise DeltaTableNotFoundError(
                    f"table id {table_id} is not a catalog-managed table of {self.url}"
                )
            latest = int(row[0])
            cur.execute(
                "SELECT version, staged_name, ratified_ms FROM delta_commits "
                "WHERE table_id = ? AND published = 0 AND version >= ? AND version <= ? "
                "ORDER BY version",
                (table_id, start, latest if end is None else min(end, latest)),
            )
            commits = [StoredCommit(int(v), n, int(ms)) for v, n, ms in cur.fetchall()]
        return latest, commits

    def latest_versions(self, table_ids: Sequence[str]) -> dict[str, int]:
        """The latest ratified versions of several tables from ONE statement, so a
        multi-table commit is seen either entirely or not at all."""
        if not table_ids:
            return {}
        marks = ", ".join("?" for _ in table_ids)
        with self._read() as cur:
            cur.execute(
                f"SELECT table_id, latest_version FROM delta_tables WHERE table_id IN ({marks})",
                list(table_ids),
            )
            return {t: int(v) for t, v in cur.fetchall() if v is not None}

    def mark_published(self, table_id: str, version: int) -> None:
        """Record that ``version`` now exists as ``<v>.json`` (it is no longer served)."""
        with self._write() as cur:
            cur.execute(
                "UPDATE delta_commits SET published = 1 WHERE table_id = ? AND version = ?",
                (table_id, version),
            )


def open_backend(url: str) -> CatalogBackend:
    """The backend for ``url``: ``sqlite:///path`` (or a plain file path) or
    ``postgresql://user@host:port/db``."""
    from delta_pyspark.core.catalog.sqlite import SqliteCatalogBackend, is_sqlite_url

    if urlparse(url).scheme in ("postgresql", "postgres"):
        from delta_pyspark.core.catalog.postgres import PostgresCatalogBackend

        return PostgresCatalogBackend(url)
    if is_sqlite_url(url):
        return SqliteCatalogBackend(url)
    raise DeltaIllegalArgumentException(
        f"unsupported catalog URL {url!r}: use sqlite:///path/to/catalog.db or "
        "postgresql://user@host:port/dbname"
    )
