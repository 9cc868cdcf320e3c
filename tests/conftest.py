"""Shared fixtures. Core fixtures first (Spark-free); Spark fixtures go below."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_paths import TESTDATA


@pytest.fixture(scope="session")
def testdata() -> Path:
    """Read-only Delta tables written by other implementations (copy before writing)."""
    return TESTDATA
