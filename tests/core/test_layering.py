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
folders = sorted({p.parent for p in core_tests.rglob("*.py")})
# as pytest's rootdir-less imports: each test's folder, the conftest folders above it
sys.path[:0] = [str(f) for f in folders] + [str(core_tests.parent)]
names = [m.name for m in pkgutil.walk_packages(delta_pyspark.core.__path__, "delta_pyspark.core.")]
names += ["delta_pyspark.exceptions", "conftest"]
names += sorted(p.stem for p in core_tests.rglob("*.py") if p.stem != "conftest")
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
    core = [p.relative_to(PACKAGE.parent).with_suffix("") for p in (PACKAGE / "core").rglob("*.py")]
    assert {".".join(p.parts) for p in core if p.name != "__init__"} <= imported
    assert {p.stem for p in CORE_TESTS.rglob("test_*.py")} <= imported
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


# Each layer's packages, lowest first: a module may import its own package and those before
# it, never one after it (ARCHITECTURE.md explains the order). In the engine, the modules at
# its top level (session settings, types, argument checks) sit just above ``jvm``.
CORE_ORDER = (
    "storage",
    "expressions",
    "protocol",
    "stats",
    "log",
    "snapshot",
    "skipping",
    "uniform",
    "transaction",
    "commands",
    "changes",
    "catalog",
)
SPARK_ORDER = (
    "jvm",
    "conf",
    "types",
    "arguments",
    "files",
    "columns",
    "catalog",
    "commands",
    "sources",
)


def _rank(name: str, layer: str, order: tuple[str, ...]) -> int | None:
    parts = name.split(".")
    if parts[:2] != ["delta_pyspark", layer] or len(parts) < 3 or parts[2] not in order:
        return None
    return order.index(parts[2])


@pytest.mark.parametrize(("layer", "order"), [("core", CORE_ORDER), ("spark", SPARK_ORDER)])
def test_packages_of_a_layer_import_only_earlier_ones(layer: str, order: tuple[str, ...]) -> None:
    top = PACKAGE / layer
    found = {p.stem if p.is_file() else p.name for p in top.iterdir() if p.name != "__pycache__"}
    assert found - {"__init__"} == set(order), "every package of the layer has its place"
    upward = []
    for path in sorted(top.rglob("*.py")):
        where = path.relative_to(PACKAGE.parent)
        package = ".".join(where.parent.parts)
        mine = _rank(".".join(where.with_suffix("").parts), layer, order)
        for line, name in _imported_names(path, package):
            theirs = _rank(name, layer, order)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(f"{where}:{line} imports {name}")
    assert upward == []


def test_the_api_modules_import_downwards() -> None:
    """``tables`` (DeltaTable) is imported by the SQL statements and the session set-up, so it
    imports neither of them."""
    names = [name for _, name in _imported_names(PACKAGE / "tables.py", "delta_pyspark")]
    assert [n for n in names if n.startswith(("delta_pyspark.session", "delta_pyspark.sql"))] == []


# PySpark's private handles, py4j and the JVM objects behind them are reached in
# ``spark/jvm/`` only: the rest of the package asks it with DataFrames and plain values.
_JVM_ACCESSORS = {"jvm", "classic_session", "sql_conf", "new_array", "new_object"}
_JVM_ACCESSORS |= {"required_helper", "helper_class", "serve_callbacks", "internal_state"}
_PRIVATE_HANDLES = {"_jvm", "_jdf", "_jsparkSession", "_jsc", "_jconf", "_gateway", "_jo"}
_JVM_METHODS = {"queryExecution", "sessionState", "getClass", "getCause", "analyzed"}
_JVM_METHODS |= {"optimizedPlan", "logicalPlan", "toString"}
# The Python sides of two Java callback interfaces (``DeltaTables.java``, ``DeltaCommands.java``)
# receive JVM sessions, Datasets and Columns: they convert them at the boundary, and only they may.
_CALLBACK_MODULES = {"spark/sources/callback_service.py", "sql/commands.py"}
_BOUNDARY = {"java_frame", "python_column", "python_frame", "python_session"}


def test_only_the_jvm_package_touches_the_jvm() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith("spark/jvm/"):
            continue
        allowed = _BOUNDARY if where in _CALLBACK_MODULES else set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            name = None
            if isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.alias):
                name = node.name.rpartition(".")[2]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                modules.append(getattr(node, "module", None) or "")
                if any(m.partition(".")[0] == "py4j" for m in modules):
                    found.append(f"{where}:{node.lineno} imports py4j")
                continue
            forbidden = _JVM_ACCESSORS | _PRIVATE_HANDLES | _JVM_METHODS | _BOUNDARY
            if name in forbidden - allowed:
                found.append(f"{where}:{getattr(node, 'lineno', '?')} uses {name}")
    assert found == []
