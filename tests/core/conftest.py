"""Core-test fixtures: catalog URLs on both backends (SQLite file, throwaway PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from postgres_server import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty catalog on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_database()
