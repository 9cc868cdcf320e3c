"""Shared fixtures. Core fixtures first (Spark-free); Spark fixtures go below."""

from __future__ import annotations

from pathlib import Path

import pytest

# /work/main/tests/conftest.py -> /work/shared/testdata
_BESIDE_CHECKOUT = Path(__file__).resolve().parents[1].parent / "shared" / "testdata"
# a checkout outside /work (e.g. a CI clone elsewhere) still finds the shared tables
TESTDATA = _BESIDE_CHECKOUT if _BESIDE_CHECKOUT.is_dir() else Path("/work/shared/testdata")


@pytest.fixture(scope="session")
def testdata() -> Path:
    """Read-only Delta tables written by other implementations (copy before writing)."""
    if not TESTDATA.is_dir():
        pytest.skip(f"test tables not found at {TESTDATA}")
    return TESTDATA
