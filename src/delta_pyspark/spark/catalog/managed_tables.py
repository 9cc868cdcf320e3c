"""Catalog-managed tables from Spark: the catalog of record behind the session's names.

A session attached to a catalog (``use_catalog(spark, url)``, or the conf
``spark.delta_pyspark.catalog.url`` when the session is built) makes two things true:

- every shared log handle of a table the catalog manages commits and reads through it
  (``core.delta_log.set_coordinator_resolver``), so each Spark entry point — reads, writes,
  SQL DML, streaming — works on such a table unchanged, and path access goes through the
  catalog too instead of being refused;
- the catalog's tables are entries of Spark's session catalog (external, at their
  locations), so SQL and ``spark.table`` resolve their names. Tables another process creates
  later appear after ``sync_catalog(spark)``.

``with delta_pyspark.transaction(spark):``, or ``BEGIN TRANSACTION`` ... ``COMMIT`` /
``ROLLBACK`` in SQL, makes the thread's statements on the catalog's tables one transaction
(``core.multi_table``).

``CREATE TABLE name (...) USING delta TBLPROPERTIES ('delta.feature.catalogManaged' =
'supported')`` creates one (``sql/create_table.py``); ``DROP TABLE`` of one removes it from
both catalogs and leaves its files, as the core's ``Catalog.drop_table`` does. VACUUM,
OPTIMIZE and REORG run only when the catalog permits them
(``spark.delta_pyspark.catalog.allowMaintenance``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from delta_pyspark.core.catalog.catalog_state import CatalogState
from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.catalog.multi_table import MultiTableTransaction
from delta_pyspark.core.protocol.schema import StructType, schema_to_string
from delta_pyspark.core.protocol.table_properties import validate_properties
from delta_pyspark.core.snapshot import transaction_scope
from delta_pyspark.core.snapshot.delta_log import DeltaLog, set_coordinator_resolver
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.catalog.session_catalog import lookup, register
from delta_pyspark.spark.conf import (
    CATALOG_MAINTENANCE_CONF,
    CATALOG_URL_CONF,
    CATALOG_WAREHOUSE_CONF,
)
from delta_pyspark.spark.jvm import catalog_access
from delta_pyspark.spark.jvm.bridge import thread_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG_MANAGED_PROPERTY = "delta.feature.catalogManaged"
# The JVM thread-local property naming a thread's open transaction, and Spark's own naming
# a streaming query's thread.
TRANSACTION_PROPERTY = "delta_pyspark.transaction"
STREAM_QUERY_PROPERTY = "sql.streaming.queryId"
EXECUTION_PROPERTY = "spark.sql.execution.id"  # Spark's, on the threads of a query's execution

_lock = threading.Lock()
_attached: dict[str, Catalog] = {}  # the process's catalog, by URL (at most one)
# The catalog state each recent query execution reads the catalog's tables at.
_executions: OrderedDict[str, CatalogState] = OrderedDict()
_EXECUTIONS_KEPT = 4


def use_catalog(
    spark: SparkSession,
    url: str | None,
    warehouse: str | None = None,
    allow_maintenance: bool = False,
) -> Catalog | None:
    """Attach the process to the catalog at ``url`` (None: detach) and register its tables
    in ``spark``'s session catalog; returns the catalog."""
    with _lock:
        for old in _attached.values():
            old.close()
        _attached.clear()
        _executions.clear()
        if url is None:
            set_coordinator_resolver(None)
            transaction_scope.set_probe(None)
            spark.conf.unset(CATALOG_URL_CONF)
            return None
        catalog = Catalog.open(url, warehouse, allow_maintenance=allow_maintenance)
        _attached[url] = catalog
        set_coordinator_resolver(catalog.coordinator_for)
        transaction_scope.set_probe(_transaction_of_thread)
    spark.conf.set(CATALOG_URL_CONF, url)
    sync_catalog(spark)
    return catalog


def attach_from_conf(spark: SparkSession) -> None:
    """``use_catalog`` with the session's confs, once (a session built with the URL)."""
    url = spark.conf.get(CATALOG_URL_CONF, None)
    if not url or url in _attached:
        return
    warehouse = spark.conf.get(CATALOG_WAREHOUSE_CONF, None)
    maintenance = str(spark.conf.get(CATALOG_MAINTENANCE_CONF, "false")).lower() == "true"
    use_catalog(spark, url, warehouse, maintenance)


def attached() -> Catalog | None:
    """The catalog the process is attached to, if any."""
    with _lock:
        return next(iter(_attached.values()), None)


def sync_catalog(spark: SparkSession) -> list[str]:
    """Register the attached catalog's tables Spark's session catalog lacks; their names."""
    catalog = attached()
    if catalog is None:
        return []
    added = []
    for entry in catalog.tables():
        if lookup(spark, entry.name) is None:
            _register(spark, entry.name, entry.location)
            added.append(entry.name)
    return added


@contextmanager
def transaction(spark: SparkSession, others_alone: bool = False) -> Iterator[MultiTableTransaction]:
    """``with delta_pyspark.transaction(spark) as tx:`` — the block's statements on the
    attached catalog's tables form one transaction (``core.multi_table``): read at one
    catalog state, each seeing the earlier ones' writes, committed together atomically
    when the block ends; an exception rolls them all back. A write to another table in the
    block is refused unless ``others_alone`` (then it commits alone, at once)."""
    tx = begin(spark, python_thread=True, others_alone=others_alone)
    try:
        yield tx
    except BaseException:
        finish(spark, commit=False)
        raise
    finish(spark, commit=True)


def begin(
    spark: SparkSession, python_thread: bool = False, others_alone: bool = False
) -> MultiTableTransaction:
    """Open a transaction for this thread's statements (``BEGIN TRANSACTION``); its JVM
    thread carries the id, so the statements' callbacks find it. ``python_thread``: the
    calling Python thread is the opener (not a callback's)."""
    catalog = attached()
    if catalog is None:
        raise DeltaAnalysisException(
            "a transaction needs the session attached to a catalog "
            f"(set {CATALOG_URL_CONF} or call delta_pyspark.use_catalog(spark, url))"
        )
    tx = catalog.transaction(others_alone=others_alone)
    tx.join(this_thread=python_thread)
    spark.sparkContext.setLocalProperty(TRANSACTION_PROPERTY, tx.id)
    return tx


def finish(spark: SparkSession, commit: bool) -> None:
    """Commit (``COMMIT``) or roll back (``ROLLBACK``) this thread's open transaction."""
    tx = transaction_scope.current()
    if not isinstance(tx, MultiTableTransaction):
        word = "COMMIT" if commit else "ROLLBACK"
        raise DeltaAnalysisException(f"{word}: no transaction is open (BEGIN TRANSACTION first)")
    spark.sparkContext.setLocalProperty(TRANSACTION_PROPERTY, None)  # type: ignore[arg-type]
    tx.finish(commit)


def execution_snapshot(log: DeltaLog) -> Snapshot | None:
    """``log``'s table as the running query execution reads the attached catalog's tables:
    all at one catalog state, taken at the first of its scans to list files, so a query over
    several tables sees a multi-table commit wholly or not at all. None when ``log`` is not
    a catalog-managed table, no execution is running, or a transaction decides the reads."""
    catalog = attached()
    if catalog is None or log.coordinator is None or transaction_scope.current() is not None:
        return None
    (execution,) = thread_properties(EXECUTION_PROPERTY)
    if execution is None:
        return None
    with _lock:
        state = _executions.pop(execution, None) or CatalogState(catalog)
        _executions[execution] = state
        while len(_executions) > _EXECUTIONS_KEPT:
            _executions.popitem(last=False)
    return state.view(log)


def _transaction_of_thread() -> str | None:
    """The transaction the JVM thread behind the running work belongs to; a streaming
    query's thread (which inherits its starter's properties) belongs to none."""
    txn_id, stream = thread_properties(TRANSACTION_PROPERTY, STREAM_QUERY_PROPERTY)
    return None if stream is not None else txn_id


def create_catalog_table(
    spark: SparkSession,
    name: str,
    schema: StructType,
    partitioning: list[str],
    properties: dict[str, str],
    location: str | None,
    comment: str | None,
    if_not_exists: bool,
) -> None:
    """Create ``name`` as a catalog-managed table of the attached catalog and register it."""
    catalog = attached()
    if catalog is None:
        raise DeltaAnalysisException(
            f"CREATE TABLE {name} with {CATALOG_MANAGED_PROPERTY}: the session is attached to "
            f"no catalog (set {CATALOG_URL_CONF} or call delta_pyspark.use_catalog(spark, url))"
        )
    if if_not_exists and (lookup(spark, name) is not None or name in _names(catalog)):
        return
    requested = validate_properties(properties, creating=True)
    requested.pop(CATALOG_MANAGED_PROPERTY, None)  # the catalog adds the feature itself
    catalog.create_table(
        name,
        schema_to_string(schema),
        partitioning,
        requested,
        location,
        catalog_managed=True,
        description=comment,
    )
    _register(spark, name, catalog.table(name).location)


def drop_catalog_table(spark: SparkSession, name: str) -> None:
    """DROP TABLE of an attached catalog's table: out of both catalogs, its files kept (as
    the core's ``Catalog.drop_table``)."""
    catalog = attached()
    if catalog is not None:
        catalog.drop_table(name)
    spark.sql(f"DROP TABLE IF EXISTS {_quoted(name)}")  # now Spark's: the catalog lacks it


def catalog_table_name(parts: tuple[str, ...]) -> str | None:
    """The attached catalog's name for a statement's table reference, if it has it."""
    catalog = attached()
    if catalog is None:
        return None
    names = _names(catalog)
    if parts and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    for candidate in (".".join(parts), ".".join(parts[1:]) if len(parts) > 1 else ""):
        if candidate in names:
            return candidate
    return None


def _names(catalog: Catalog) -> set[str]:
    return {entry.name for entry in catalog.tables()}


def _register(spark: SparkSession, name: str, location: str) -> None:
    if "." in name:
        database = name.rsplit(".", 1)[0]
        if not catalog_access.database_exists(spark, database):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quoted(database)}")
    register(spark, name, location, managed=False)


def _quoted(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))


__all__ = [
    "CATALOG_MANAGED_PROPERTY",
    "attach_from_conf",
    "attached",
    "begin",
    "create_catalog_table",
    "drop_catalog_table",
    "execution_snapshot",
    "finish",
    "sync_catalog",
    "transaction",
    "use_catalog",
]
