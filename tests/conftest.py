"""Shared fixtures. Core fixtures first (Spark-free); Spark fixtures go below."""

from __future__ import annotations

from pathlib import Path

import pytest

# /work/main/tests/conftest.py -> /work/shared/testdata
TESTDATA = Path(__file__).resolve().parents[1].parent / "shared" / "testdata"


@pytest.fixture(scope="session")
def testdata() -> Path:
    """Read-only Delta tables written by other implementations (copy before writing)."""
    if not TESTDATA.is_dir():
        pytest.skip(f"test tables not found at {TESTDATA}")
    return TESTDATA
