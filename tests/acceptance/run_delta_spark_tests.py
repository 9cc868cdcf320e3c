"""Run delta-spark's own Python API tests (``python/delta/tests/test_deltatable.py`` and
``test_sql.py``) against delta-pyspark, changing only their imports and session set-up.

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

#: delta-spark's test files run here, with their test classes
TEST_FILES = {
    "python/delta/tests/test_deltatable.py": "DeltaTableTests",
    "python/delta/tests/test_sql.py": "DeltaSqlTests",
}
UTILS_FILE = "python/delta/testing/utils.py"
SRC = Path(__file__).resolve().parents[2] / "src"

# (file, test) -> why it cannot pass here (delta-spark's test-only JVM classes and features)
DESELECTED = {
    ("test_deltatable.py", "test_dropFeatureSupport"): (
        "adds and drops delta-spark's test-only table features (testRemovableWriter, ...), "
        "which exist only in a JVM started with spark.testing; refused by name here "
        "(DELTA_UNSUPPORTED_FEATURES_IN_CONFIG)"
    ),
    ("test_deltatable.py", "test_verify_paritionedBy_compatibility"): (
        "calls partitionedBy on the builder's private py4j object (_jbuilder) with a Scala "
        "Seq; delta-pyspark's DeltaTableBuilder is Python and has no JVM builder"
    ),
    ("test_deltatable.py", "test_forPathWithOptions"): (
        "needs org.apache.spark.sql.delta.FakeFileSystem from delta-spark's test jar; "
        "forPath refuses hadoopConf by name (the log is not read through Hadoop)"
    ),
}

# The only rewrites: imports of delta-spark's modules (those a file has), and its session
# settings.
_IMPORTS = [
    (
        "from delta.tables import DeltaTable, DeltaTableBuilder, DeltaOptimizeBuilder, "
        "IdentityGenerator",
        "from delta_pyspark.tables import DeltaTable, DeltaTableBuilder, DeltaOptimizeBuilder, "
        "IdentityGenerator",
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


def prepare(delta: Path, rev: str, out: Path) -> list[Path]:
    """Write the rewritten test files and our stand-in for ``delta.testing.utils`` to ``out``."""
    targets = []
    for rel in TEST_FILES:
        tests = _read(delta, rel, rev)
        for old, new in _IMPORTS:
            if old.split(" import ")[0] in tests:
                tests = _replace(tests, old, new, rel)
        if "from delta." in tests or "import delta." in tests:
            sys.exit(f"cannot rewrite {rel}: it imports a delta-spark module not rewritten here")
        target = out / Path(rel).name
        target.write_text(tests)
        targets.append(target)
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
    return targets


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
        targets = prepare(options.delta, options.rev, out)
        classes = {Path(rel).name: cls for rel, cls in TEST_FILES.items()}
        deselect = [f"--deselect={file}::{classes[file]}::{name}" for file, name in DESELECTED]
        report = out / "report.xml"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(out)]))
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *(t.name for t in targets),
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
        f"\ndelta-spark {', '.join(TEST_FILES)}: {counts.get('passed', 0)} passed / "
        f"{counts.get('failed', 0) + counts.get('errors', 0)} failed / "
        f"{len(DESELECTED)} deselected ({counts.get('skipped', 0)} skipped)"
    )
    for (file, name), reason in DESELECTED.items():
        print(f"  deselected {file}::{name}: {reason}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
