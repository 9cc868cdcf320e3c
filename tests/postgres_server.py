"""A throwaway PostgreSQL server for catalog tests (core and Spark).

The server is started from the ``initdb``/``pg_ctl`` binaries on PATH (or in
``DELTA_PYSPARK_PG_BIN``). ``initdb`` refuses to run as root, so as root the data
directory is given to the ``nobody`` user and the binaries run as it via ``runuser``.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

PG_USER = "postgres"


def pg_binaries() -> tuple[str, str] | None:
    """``initdb`` and ``pg_ctl`` from ``DELTA_PYSPARK_PG_BIN``, else PATH, else where Debian's
    ``postgresql`` package puts them (``/usr/lib/postgresql/<version>/bin``, newest first)."""
    configured = os.environ.get("DELTA_PYSPARK_PG_BIN")
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for bin_dir in [configured] if configured else [None, *debian]:
        initdb = shutil.which("initdb", path=bin_dir)
        pg_ctl = shutil.which("pg_ctl", path=bin_dir)
        if initdb and pg_ctl:
            return initdb, pg_ctl
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """initdb + pg_ctl on ``root``; ``url(db)`` for a database created by ``new_database``."""

    def __init__(self, root: Path) -> None:
        binaries = pg_binaries()
        assert binaries is not None
        self.initdb, self.pg_ctl = binaries
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self._as_other_user = os.geteuid() == 0

    def _run(self, *argv: str) -> None:
        cmd = list(argv)
        if self._as_other_user:
            cmd = ["runuser", "-u", "nobody", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr or done.stdout}")

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self._as_other_user:
            shutil.chown(self.root, "nobody")
            os.chmod(self.root, 0o755)
        self._run(self.initdb, "-D", str(self.data), "-U", PG_USER, "-A", "trust", "--no-sync")
        opts = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=100"
        )
        self._run(
            self.pg_ctl,
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.root / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = f"cat_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def start_postgres(root: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()
