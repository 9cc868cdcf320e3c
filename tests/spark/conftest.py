"""The Spark tests' markers and their S3 bucket fixture (``s3a_bucket``). The session
fixtures (``spark``, ``conf``) are in ``tests/conftest.py``, shared with the delta-spark
reference tests (``tests/reference/``).

Every Spark test is marked ``spark``. Of a parametrized Spark test, the first case runs in
``./dev test`` and the others are marked ``long`` (CI's second step): each behaviour is
checked by the quick run, its whole matrix by CI, and the README's command stays within 20
minutes on 2 cores (a Spark operation costs 0.1-0.7 s there, so the matrices are most of
the time)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from s3_server import S3Server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: set[tuple[str, str]] = set()
    for item in items:
        if "tests/spark/" not in str(item.fspath):
            continue
        item.add_marker(pytest.mark.spark)
        if getattr(item, "callspec", None) is not None:
            test = (str(item.fspath), getattr(item, "originalname", item.name))
            if test in seen:
                item.add_marker(pytest.mark.long)
            seen.add(test)


@pytest.fixture
def s3a_bucket(spark: Any, s3_server: S3Server) -> Iterator[str]:
    """A fresh bucket of the local S3 server that the session reaches by per-bucket S3A
    settings only (the log's store derives its options from them: nothing is given to
    ``configure_storage``). They go into the context's Hadoop configuration, where Spark's
    file systems read them (a ``spark.hadoop.*`` conf set on a running session does not
    reach them)."""
    name = s3_server.create_bucket(f"spark-{uuid.uuid4().hex[:12]}")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    settings = s3_server.s3a_settings(name)
    for key, value in settings.items():
        hadoop.set(key, value)
    yield name
    for key in settings:
        hadoop.unset(key)
