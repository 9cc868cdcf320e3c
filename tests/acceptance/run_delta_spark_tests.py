"""Run delta-spark's own Python API tests (``python/delta/tests/test_deltatable.py`` and
``test_sql.py``) against delta-pyspark, changing only their imports and session set-up; with
``--connect``, its Delta Connect tests (``python/delta/connect/tests/test_deltatable.py``:
the same ``DeltaTable`` tests through delta-spark's own Connect client, the ``delta-spark``
package's) against a local Spark Connect server set up by ``configure_spark_with_delta``;
with ``--connect --ours``, those tests with ``delta_pyspark.tables.DeltaTable`` on the Connect
session instead of delta-spark's client.

Usage::

    python tests/acceptance/run_delta_spark_tests.py PATH_TO_DELTA [--rev REV]
        [--connect [--ours]] [-- PYTEST_ARGS]

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
CONNECT_TEST_FILE = "python/delta/connect/tests/test_deltatable.py"
CONNECT_UTILS_FILE = "python/delta/connect/testing/utils.py"
# delta-spark's Connect settings: its session extension, catalog and Connect plugins
_DELTA_CONNECT_CONFS = re.compile(
    r'_conf\.set\("spark\.sql\.extensions",.*?DeltaCommandPlugin"\)', re.DOTALL
)
_OUR_CONNECT_CONFS = (
    "for _key, _value in configure_spark_with_delta(\n"
    '            SparkSession.builder.remote("local[4]")\n'
    "        )._options.items():\n"
    '            if _key != "spark.remote":\n'
    "                _conf.set(_key, _value)"
)
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


def _importing_ours(utils: str, what: str) -> str:
    """A test base module that imports what its rewritten settings call."""
    return _replace(
        utils,
        "from pyspark import SparkConf\n",
        "from pyspark import SparkConf\n"
        "from pyspark.sql import SparkSession\n\n"
        "from delta_pyspark import configure_spark_with_delta\n",
        what,
    )


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
    (out / "delta_pyspark_testing.py").write_text(_importing_ours(utils, UTILS_FILE))
    return targets


def prepare_connect(delta: Path, rev: str, out: Path, ours: bool) -> list[Path]:
    """Write delta-spark's Delta Connect tests to ``out``: the test file (at
    ``connect/tests/``, from where it imports its mixin as ``tests.test_deltatable``), the
    mixin unchanged but for its base class, and our stand-ins for both ``testing.utils``."""
    prepare(delta, rev, out)  # the classic stand-in, ``delta_pyspark_testing``
    mixin = _replace(
        _read(delta, "python/delta/tests/test_deltatable.py", rev),
        "from delta.testing.utils import DeltaTestCase",
        "from delta_pyspark_testing import DeltaTestCase",
        "the mixin",
    )
    if ours:
        mixin = _replace(mixin, *_IMPORTS[0], "the mixin")
    (out / "tests").mkdir()
    (out / "tests" / "__init__.py").write_text("")
    (out / "tests" / "test_deltatable.py").write_text(mixin)
    tests = _replace(
        _read(delta, CONNECT_TEST_FILE, rev),
        "from delta.connect.testing.utils import DeltaTestCase",
        "from delta_connect_testing import DeltaTestCase",
        CONNECT_TEST_FILE,
    )
    target = out / "connect" / "tests" / "test_deltatable.py"
    target.parent.mkdir(parents=True)
    target.write_text(tests)
    utils = _read(delta, CONNECT_UTILS_FILE, rev)
    utils, count = _DELTA_CONNECT_CONFS.subn(_OUR_CONNECT_CONFS, utils)
    if count != 1:
        sys.exit(f"cannot rewrite {CONNECT_UTILS_FILE}: delta-spark's session settings not found")
    (out / "delta_connect_testing.py").write_text(_importing_ours(utils, CONNECT_UTILS_FILE))
    return [target]


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
    parser.add_argument("--connect", action="store_true", help="the Delta Connect tests")
    parser.add_argument("--ours", action="store_true", help="with --connect: our DeltaTable")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    # argparse leaves "-- -k expr" unparsed after its positional: those go to pytest as well
    options, rest = parser.parse_known_args(argv)
    options.pytest_args += [arg for arg in rest if arg != "--"]
    with tempfile.TemporaryDirectory(prefix="delta-spark-tests-") as tmp:
        out = Path(tmp)
        if options.connect:
            targets = prepare_connect(options.delta, options.rev, out, options.ours)
            deselect = [
                f"--deselect=connect/tests/{file}::DeltaTableTests::{name}"
                for file, name in DESELECTED
                if file == "test_deltatable.py"
            ]
        else:
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
                *(str(t.relative_to(out)) for t in targets),
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
    ran = [CONNECT_TEST_FILE] if options.connect else list(TEST_FILES)
    left_out = {
        (file, name): reason
        for (file, name), reason in DESELECTED.items()
        if not options.connect or file == "test_deltatable.py"
    }
    print(
        f"\ndelta-spark {', '.join(ran)}: {counts.get('passed', 0)} passed / "
        f"{counts.get('failed', 0) + counts.get('errors', 0)} failed / "
        f"{len(left_out)} deselected ({counts.get('skipped', 0)} skipped)"
    )
    for (file, name), reason in left_out.items():
        print(f"  deselected {file}::{name}: {reason}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
