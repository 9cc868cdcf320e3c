"""Every table-file access goes through the storage interface (``core.storage``): no module
outside it opens, lists, stats, moves or deletes files itself, or hands a path to pyarrow's
Parquet readers. Otherwise that access works on local disks only and an object-store table
breaks there. The rule is checked on the syntax tree, so a new call anywhere fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import delta_pyspark

PACKAGE = Path(delta_pyspark.__file__).parent

#: modules that touch files which are not a table's (reason given)
NOT_TABLE_FILES = {
    "core/storage/log_store.py": "the local implementation itself",
    "spark/jvm/helper_jar.py": "builds the JVM helper's jar in the user's cache",
    "core/catalog/sqlite.py": "the SQLite catalog's database file",
    "cli.py": "checks a SQLite catalog file exists before opening it",
    "demo.py": "removes the demo's own directory before it starts",
    "spark/jvm/local_files.py": "reads and deletes a result file the driver's JVM wrote",
}

_OS_IO = {
    "stat", "lstat", "scandir", "listdir", "remove", "unlink", "rename", "replace", "makedirs",
    "mkdir", "rmdir", "walk", "link", "symlink", "open", "fsync", "truncate",
}  # fmt: skip
_OS_PATH_IO = {
    "exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "realpath",
}  # fmt: skip
_PARQUET_BY_PATH = {"read_metadata", "read_schema", "read_table", "ParquetFile", "ParquetDataset"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _through_store(arg: ast.expr) -> bool:
    """A reader given ``store.open_input(...)`` (or a buffer read from the store)."""
    return isinstance(arg, ast.Call) and _dotted(arg.func).endswith(("open_input", "BufferReader"))


def file_access(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, call) of each direct file-system access in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        parts = name.split(".")
        direct = (
            name in ("open", "io.open", "Path", "pathlib.Path", "glob.glob")
            or parts[0] == "shutil"
            or (len(parts) == 2 and parts[0] == "os" and parts[1] in _OS_IO)
            or (name.startswith("os.path.") and parts[-1] in _OS_PATH_IO)
            or (
                parts[0] in ("pq", "pyarrow.parquet")
                and parts[-1] in _PARQUET_BY_PATH
                and not (node.args and _through_store(node.args[0]))
            )
            or name in ("pa.OSFile", "pa.memory_map", "pa.input_stream")
        )
        if direct:
            found.append((node.lineno, name))
    return found


def test_no_table_file_access_outside_storage() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in NOT_TABLE_FILES:
            continue
        for line, call in file_access(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{rel}:{line}: {call}(...)")
    assert offenders == []


def test_the_check_finds_each_kind_of_access() -> None:
    source = """
import os, shutil
import pyarrow.parquet as pq
open(p)
os.listdir(d)
os.path.exists(p)
shutil.rmtree(d)
pq.read_metadata(p)
pq.ParquetFile(store.open_input(p))
store.read(p)
"""
    calls = [call for _, call in file_access(ast.parse(source))]
    assert calls == ["open", "os.listdir", "os.path.exists", "shutil.rmtree", "pq.read_metadata"]
