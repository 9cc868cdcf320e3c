"""The layers import downwards only (see ARCHITECTURE.md): the core and the core tests run
without pyspark, the core imports nothing of the package above it, and the Spark data plane
imports nothing of the user API."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import delta_pyspark

PACKAGE = Path(delta_pyspark.__file__).parent
CORE_TESTS = Path(__file__).parent

# Run in a fresh interpreter where pyspark and py4j cannot be imported: import every module of
# delta_pyspark.core, delta_pyspark.exceptions and every module under tests/core, then print
# the names imported.
_IMPORT_WITHOUT_SPARK = """
import importlib, pkgutil, sys
from pathlib import Path

class NoSpark:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"{name} imported where Spark must not be needed")
        return None

sys.meta_path.insert(0, NoSpark())
try:
    import pyspark
except ImportError:
    pass
else:
    sys.exit("pyspark is still importable")

import delta_pyspark.core

core_tests = Path(sys.argv[1])
sys.path[:0] = [str(core_tests), str(core_tests.parent)]  # as pytest's rootdir-less imports
names = [m.name for m in pkgutil.walk_packages(delta_pyspark.core.__path__, "delta_pyspark.core.")]
names += ["delta_pyspark.exceptions", "conftest"]
names += sorted(p.stem for p in core_tests.glob("*.py"))
for name in names:
    importlib.import_module(name)
print("\\n".join(names))
"""


def test_core_and_core_tests_import_without_pyspark() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _IMPORT_WITHOUT_SPARK, str(CORE_TESTS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    imported = set(run.stdout.split())
    core = (PACKAGE / "core").glob("*.py")
    assert {f"delta_pyspark.core.{p.stem}" for p in core if p.stem != "__init__"} <= imported
    assert {p.stem for p in CORE_TESTS.glob("test_*.py")} <= imported
    assert {"delta_pyspark.exceptions", "test_golden_log", "conftest"} <= imported


def _imported_names(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) for every import in a module of ``package``, at any depth (lazy
    imports too). ``from a.b import c`` gives ``a.b.c``: ``c`` may be a submodule, and for an
    attribute the name still starts with the module it comes from."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _forbidden(name: str, allowed: tuple[str, ...], banned: tuple[str, ...]) -> bool:
    """A name from a ``banned`` top-level package, or a delta_pyspark name that is none of
    ``allowed`` (packages or modules) nor inside one."""
    top = name.partition(".")[0]
    if top != "delta_pyspark":
        return top in banned
    return not any(name == a or name.startswith(a + ".") for a in allowed)


BOTTOM = ("delta_pyspark.core", "delta_pyspark.exceptions", "delta_pyspark._version")


@pytest.mark.parametrize(
    ("layer", "allowed", "banned"),
    [
        # not pyspark (not even lazily), the package root, the data plane, nor the API
        # (tables, session, sql, cli, demo)
        ("core", BOTTOM, ("pyspark", "py4j")),
        # not the package root nor the API above it
        ("spark", (*BOTTOM, "delta_pyspark.spark"), ()),
    ],
)
def test_layers_import_only_downwards(
    layer: str, allowed: tuple[str, ...], banned: tuple[str, ...]
) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files
    upward = []
    for path in files:
        where = path.relative_to(PACKAGE.parent)
        upward += [
            f"{where}:{line} imports {name}"
            for line, name in _imported_names(path, ".".join(where.parent.parts))
            if _forbidden(name, allowed, banned)
        ]
    assert upward == []
