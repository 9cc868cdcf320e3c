"""Shared fixtures. Core fixtures first (Spark-free); Spark fixtures go below."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from data_paths import TESTDATA
from maven_jars import S3A, maven_jars
from postgres_server import PostgresServer, pg_binaries, start_postgres
from s3_server import S3Server, running_s3_server


@pytest.fixture(scope="session")
def testdata() -> Path:
    """Read-only Delta tables written by other implementations (copy before writing)."""
    return TESTDATA


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The local S3 server (moto), started on first use for the rest of the run."""
    with running_s3_server() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server; ``new_database()`` gives each test its own catalog."""
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


# ---------------------------------------------------------------- Spark fixtures
# One SparkSession for the whole test run (local[2], UI off, few shuffle partitions, Hadoop's
# S3A connector from the jar cache; otherwise Spark's defaults, ANSI mode on), and a fixture
# setting session confs for one test.


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    warehouse = tmp_path_factory.mktemp("warehouse")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("delta-pyspark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "2g")
        .config("spark.jars", ",".join(str(jar) for jar in maven_jars(S3A)))
    )
    session = configure_spark_with_delta(builder, s3=True).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def conf(spark: Any) -> Iterator[Callable[[str, str], None]]:
    """Set session confs for one test; unset afterwards."""
    keys: list[str] = []

    def setter(key: str, value: str) -> None:
        keys.append(key)
        spark.conf.set(key, value)

    yield setter
    for k in keys:
        spark.conf.unset(k)
