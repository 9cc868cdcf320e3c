"""The Spark tests' marker. Their fixtures (``spark``, ``conf``) are in ``tests/conftest.py``,
shared with the delta-spark reference tests (``tests/reference/``)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath):
            item.add_marker(pytest.mark.spark)
