"""Where the test tables live: ``tests/data`` in this repository (see ``tests/data/README.md``).

Test modules that need the paths at import time (to parametrise) import ``TESTDATA`` from here;
tests that need them at run time take the ``testdata`` fixture from ``tests/conftest.py``.
"""

from pathlib import Path

TESTDATA = Path(__file__).resolve().parent / "data"
GOLDEN = TESTDATA / "golden"
