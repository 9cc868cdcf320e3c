"""Run delta-spark's own Python API tests (``python/delta/tests/test_deltatable.py``) against
delta-pyspark, changing only their imports and session set-up.

Usage::

    python tests/acceptance/run_delta_spark_tests.py PATH_TO_DELTA [--rev REV] [-- PYTEST_ARGS]

``PATH_TO_DELTA`` is a checkout of github.com/delta-io/delta, or its bare git directory (the
files are then read at ``--rev``, default ``HEAD``). Their files are copied to a temporary
directory (never into this repository), rewritten there, and run with pytest against this
checkout's ``src``; tests of features delta-pyspark does not have yet are deselected, each
with its reason (``DESELECTED``). Prints passed / failed / deselected counts; the exit status
is pytest's. Not collected by this repository's pytest run (not a ``test_*.py`` file).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

TEST_FILE = "python/delta/tests/test_deltatable.py"
UTILS_FILE = "python/delta/testing/utils.py"
TEST_CLASS = "DeltaTableTests"
SRC = Path(__file__).resolve().parents[2] / "src"

_GENERATED = "generated columns (filed separately): its table has a generatedAlwaysAs column"

# test name -> why it cannot pass here (features filed elsewhere, or JVM-only test fixtures)
DESELECTED = {
    "test_cdc": "change data feed (filed separately)",
    "test_dropFeatureSupport": "dropping table features (filed separately), shown with "
    "delta-spark's test-only features (testRemovableWriter)",
    # the tables of these are built with a generated column (``__build_delta_table``)
    "test_create_table_with_name_only": _GENERATED,
    "test_create_table_with_location_only": _GENERATED,
    "test_create_table_with_name_and_location": _GENERATED,
    "test_create_table_behavior": _GENERATED,
    "test_replace_table_with_name_only": _GENERATED,
    "test_replace_table_with_location_only": _GENERATED,
    "test_replace_table_with_name_and_location": _GENERATED,
    "test_replace_table_behavior": _GENERATED,
    "test_verify_paritionedBy_compatibility": _GENERATED,
    "test_forPathWithOptions": (
        "needs org.apache.spark.sql.delta.FakeFileSystem from delta-spark's test jar; "
        "forPath refuses hadoopConf by name (the log is not read through Hadoop)"
    ),
}

# The only rewrites: imports of delta-spark's modules, and its session settings.
_IMPORTS = [
    (
        "from delta.tables import DeltaTable, DeltaTableBuilder, DeltaOptimizeBuilder, "
        "IdentityGenerator",
        "from delta_pyspark.tables import DeltaTable, DeltaTableBuilder, IdentityGenerator\n"
        "from delta_pyspark.spark.commands.optimize import DeltaOptimizeBuilder",
    ),
    (
        "from delta.testing.utils import DeltaTestCase",
        "from delta_pyspark_testing import DeltaTestCase",
    ),
]
_DELTA_SPARK_CONFS = re.compile(
    r'_conf\.set\("spark\.sql\.extensions",\s*"io\.delta\.sql\.DeltaSparkSessionExtension"\)\s*'
    r'_conf\.set\("spark\.sql\.catalog\.spark_catalog",\s*'
    r'"org\.apache\.spark\.sql\.delta\.catalog\.DeltaCatalog"\)'
)
_OUR_CONFS = (
    "for _key, _value in configure_spark_with_delta(SparkSession.Builder())._options.items():\n"
    "            _conf.set(_key, _value)"
)


def _read(delta: Path, rel: str, rev: str) -> str:
    if (delta / rel).is_file():
        return (delta / rel).read_text()
    git_dir = delta if (delta / "objects").is_dir() else delta / ".git"
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{rev}:{rel}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _replace(text: str, old: str, new: str, what: str) -> str:
    if old not in text:
        sys.exit(f"cannot rewrite {what}: {old!r} not found (delta-spark's file changed?)")
    return text.replace(old, new)


def prepare(delta: Path, rev: str, out: Path) -> Path:
    """Write the rewritten test file and our stand-in for ``delta.testing.utils`` to ``out``."""
    tests = _read(delta, TEST_FILE, rev)
    for old, new in _IMPORTS:
        tests = _replace(tests, old, new, TEST_FILE)
    utils, count = _DELTA_SPARK_CONFS.subn(_OUR_CONFS, _read(delta, UTILS_FILE, rev))
    if count != 1:
        sys.exit(f"cannot rewrite {UTILS_FILE}: delta-spark's session settings not found")
    utils = _replace(
        utils,
        "from pyspark import SparkConf\n",
        "from pyspark import SparkConf\n"
        "from pyspark.sql import SparkSession\n\n"
        "from delta_pyspark import configure_spark_with_delta\n",
        UTILS_FILE,
    )
    (out / "delta_pyspark_testing.py").write_text(utils)
    target = out / "test_deltatable.py"
    target.write_text(tests)
    return target


def _counts(report: Path) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            counts["failed"] += 1
        elif "error" in kinds:
            counts["errors"] += 1
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("delta", type=Path, help="delta-io/delta checkout or bare git dir")
    parser.add_argument("--rev", default="HEAD", help="revision to read from a git dir")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="delta-spark-tests-") as tmp:
        out = Path(tmp)
        target = prepare(options.delta, options.rev, out)
        deselect = [f"--deselect={target.name}::{TEST_CLASS}::{name}" for name in DESELECTED]
        report = out / "report.xml"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(out)]))
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                target.name,
                "-p",
                "no:cacheprovider",
                "-o",
                "addopts=",
                "-q",
                "-rfE",
                f"--junitxml={report}",
                *deselect,
                *options.pytest_args,
            ],
            cwd=out,
            env=env,
        )
        counts = _counts(report) if report.exists() else {}
    print(
        f"\ndelta-spark {TEST_FILE}: {counts.get('passed', 0)} passed / "
        f"{counts.get('failed', 0) + counts.get('errors', 0)} failed / "
        f"{len(DESELECTED)} deselected ({counts.get('skipped', 0)} skipped)"
    )
    for name, reason in DESELECTED.items():
        print(f"  deselected {name}: {reason}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
