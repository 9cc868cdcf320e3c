"""DuckDB's iceberg extension as an independent reader of UniForm tables, loaded from the
extension wheels on PyPI (``duckdb-extension-iceberg`` and the ``avro`` one it needs), so no
test downloads from DuckDB's own extension site."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg


def _extension(module: Any) -> str:
    found = sorted(
        Path(module.__file__).parent.glob(f"extensions/v{duckdb.__version__}/*.duckdb_extension")
    )
    if not found:
        raise RuntimeError(
            f"{module.__name__} has no extension for DuckDB {duckdb.__version__}: "
            "the test extra pins the two to one version"
        )
    return str(found[0])


def duckdb_rows(root: Path | str, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    """The table's rows as DuckDB's ``iceberg_scan`` reads them (at ``snapshot_id``), by id."""
    con = duckdb.connect()
    try:
        for module in (duckdb_extension_avro, duckdb_extension_iceberg):
            con.execute(f"LOAD '{_extension(module)}'")
        at = f", snapshot_from_id={int(snapshot_id)}" if snapshot_id is not None else ""
        table = con.execute(f"SELECT * FROM iceberg_scan('{root}'{at})").to_arrow_table()
    finally:
        con.close()
    return sorted(table.to_pylist(), key=lambda r: r["id"])
