"""Table names to locations: managed tables live where Spark puts managed tables
(``<warehouse>/<table>`` in the default database, ``<warehouse>/<db>.db/<table>``
otherwise), so a name resolves through Spark's current database and warehouse."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyspark.core.log_store import to_local_path
from delta_pyspark.exceptions import DeltaIllegalArgumentException

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def split_name(name: str) -> tuple[str | None, str]:
    parts = [p.strip("`") for p in name.split(".")]
    if len(parts) == 1:
        return None, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3:  # catalog.db.table: only the session catalog exists here
        return parts[1], parts[2]
    raise DeltaIllegalArgumentException(f"invalid table name {name!r}")


def table_location(spark: SparkSession, name: str) -> str:
    """Where the managed table ``name`` lives (whether or not it exists yet)."""
    db, table = split_name(name)
    db = db or spark.catalog.currentDatabase()
    warehouse = to_local_path(spark.conf.get("spark.sql.warehouse.dir", "spark-warehouse"))
    warehouse = warehouse.rstrip("/")
    if db.lower() == "default":
        return f"{warehouse}/{table.lower()}"
    return f"{warehouse}/{db.lower()}.db/{table.lower()}"
