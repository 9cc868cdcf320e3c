"""Core-test fixtures: catalog URLs on both backends (SQLite file, throwaway PostgreSQL)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from catalog_helpers import PostgresServer, pg_binaries, start_postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    if pg_binaries() is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in DELTA_PYSPARK_PG_BIN "
            "(see README: set-up)"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'delta-pyspark[postgres]')")
    # not under pytest's tmp dir: that is private to root, and as root the server runs
    # as ``nobody`` (initdb refuses root), which must reach its directory
    root = Path(tempfile.mkdtemp(prefix="delta-pyspark-pg-"))
    try:
        yield from start_postgres(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty catalog on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_database()
