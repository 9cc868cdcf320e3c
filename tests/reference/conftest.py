"""Fixtures of the delta-spark reference tests: the shared worker (``reference``) next to the
shared in-process session (``spark``, from ``tests/conftest.py``).

The jars are fetched on first use (``jars.py``); when they cannot be had the ``reference``
fixture raises ``ReferenceJarsUnavailable``, so every reference test errors saying why:
these tests never skip for a missing jar.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jars import delta_spark_jars
from runner import ReferenceRunner


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceRunner]:
    """One delta-spark worker for the whole test session (its JVM starts once)."""
    runner = ReferenceRunner(delta_spark_jars(), tmp_path_factory.mktemp("reference-worker"))
    yield runner
    runner.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/reference/" in str(item.fspath):
            item.add_marker(pytest.mark.reference)
            item.add_marker(pytest.mark.spark)
