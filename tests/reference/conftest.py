"""Fixtures of the delta-spark reference tests: the shared worker (``reference``) next to the
shared in-process session (``spark``, from ``tests/conftest.py``).

The jars are fetched on first use (``tests/maven_jars.py``); when they cannot be had the
``reference`` fixture raises ``JarsUnavailable``, so every reference test errors saying why:
these tests never skip for a missing jar.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from runner import ReferenceRunner

from maven_jars import DELTA_SPARK, maven_jars

# The worker is started as soon as the run is known to need it, in a thread, and the reference
# tests run last: its JVM (about a minute and a half to start on 2 cores) starts while the rest
# of the run goes on, instead of holding the first reference test up.
_STARTING: list[Future[ReferenceRunner]] = []


def _start_worker(workdir: Path) -> Future[ReferenceRunner]:
    if not _STARTING:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reference-worker")
        _STARTING.append(pool.submit(ReferenceRunner, maven_jars(DELTA_SPARK), workdir))
        pool.shutdown(wait=False)
    return _STARTING[0]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceRunner]:
    """One delta-spark worker for the whole test session (its JVM starts once)."""
    runner = _start_worker(tmp_path_factory.mktemp("reference-worker")).result()
    yield runner
    runner.close()


# What ``./dev test`` compares (about a minute and a half on 2 cores): every common mistake.
# The operation sequences and the feature tables (marked ``long``, about 22 minutes) are CI's
# second step (``.ci/run``), so the README's test command stays within its 20 minutes.
def _in_quick_group(item: pytest.Item) -> bool:
    return item.name.startswith("test_same_error")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    compared = [item for item in items if "tests/reference/" in str(item.fspath)]
    for item in compared:
        item.add_marker(pytest.mark.reference)
        item.add_marker(pytest.mark.spark)
        if not _in_quick_group(item):
            item.add_marker(pytest.mark.long)
    items[:] = [item for item in items if item not in compared] + compared


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the worker now when a selected test will need it (``-m`` has deselected the
    rest by the time collection finishes)."""
    if any("reference" in getattr(item, "fixturenames", ()) for item in session.items):
        factory: pytest.TempPathFactory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        _start_worker(factory.mktemp("reference-worker"))
