"""Fixtures of the delta-spark reference tests: the shared worker (``reference``) next to the
shared in-process session (``spark``, from ``tests/conftest.py``).

The jars are fetched on first use (``tests/maven_jars.py``); when they cannot be had the
``reference`` fixture raises ``JarsUnavailable``, so every reference test errors saying why:
these tests never skip for a missing jar.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from runner import ReferenceRunner

from maven_jars import DELTA_SPARK, maven_jars


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceRunner]:
    """One delta-spark worker for the whole test session (its JVM starts once)."""
    runner = ReferenceRunner(maven_jars(DELTA_SPARK), tmp_path_factory.mktemp("reference-worker"))
    yield runner
    runner.close()


# What ``./dev test`` compares (about three minutes on 2 cores): every common mistake, one
# operation sequence, and the tables of the feature that exercises the most of the protocol.
# The rest of the matrix (marked ``long``: the other features and the partitioned sequence,
# about 20 minutes more) is CI's second step (``.ci/run``), so the README's test command
# stays within its 20 minutes.
QUICK_FEATURES = frozenset({"partitioned-deletionVectors"})
QUICK_SETUPS = frozenset({"plain"})


def _in_quick_group(item: pytest.Item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "feature" in params:
        return params["feature"] in QUICK_FEATURES
    if "setup" in params:
        return params["setup"] in QUICK_SETUPS
    return item.name.startswith("test_same_error")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/reference/" in str(item.fspath):
            item.add_marker(pytest.mark.reference)
            item.add_marker(pytest.mark.spark)
            if not _in_quick_group(item):
                item.add_marker(pytest.mark.long)
