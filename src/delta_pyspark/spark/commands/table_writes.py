"""Writes to Delta tables named in the session catalog that Spark cannot plan for them.

Spark's own ``saveAsTable`` drops a table it overwrites (and a Delta table's history with
it); ``DataFrameWriterV2`` (``writeTo``) and ``[CREATE OR] REPLACE TABLE`` build plans only
V2 catalogs take. Each becomes one write command and transaction on the table's log
(``write_command.write_delta``); the catalog entry is registered or refreshed after it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.locations import normalise
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaTableNotFoundError,
)
from delta_pyspark.spark.catalog.session_catalog import (
    CatalogEntry,
    default_location,
    lookup,
    refresh,
    register,
)
from delta_pyspark.spark.commands.write_command import (
    CLUSTERING_OPTION,
    DECLARED_SCHEMA_OPTION,
    DESCRIPTION_OPTION,
    OPERATION_OPTION,
    PROPERTIES_OPTION,
    REPLACE_OPTION,
    WriteRequest,
    write_delta,
)
from delta_pyspark.spark.jvm.helpers import ansi_store_assignable
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType


@dataclass(frozen=True)
class TableDefinition:
    """A table as ``CREATE [OR REPLACE] TABLE`` or ``df.writeTo(name)`` defines it (the JVM's
    ``TableDefinitions``)."""

    name: tuple[str, ...]
    provider: str | None
    location: str | None
    comment: str | None
    properties: Mapping[str, str]
    options: Mapping[str, str]
    partitioning: tuple[str, ...]
    clustering: tuple[str, ...]
    schema: SparkStructType | None
    or_create: bool
    create: bool = False  # CREATE TABLE (not a replacement)
    if_not_exists: bool = False

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> TableDefinition:
        from pyspark.sql.types import StructType as SparkStructType

        from delta_pyspark.spark.types import with_delta_keys

        schema = values.get("schema")
        return cls(
            name=tuple(values["name"]),
            provider=values.get("provider"),
            location=values.get("location"),
            comment=values.get("comment"),
            properties=dict(values.get("properties") or {}),
            options=dict(values.get("options") or {}),
            partitioning=tuple(values.get("partitioning") or ()),
            clustering=tuple(values.get("clustering") or ()),
            schema=(
                SparkStructType.fromJson(with_delta_keys(json.loads(schema)))
                if schema is not None
                else None
            ),
            or_create=bool(values.get("orCreate")),
            create=bool(values.get("create")),
            if_not_exists=bool(values.get("ifNotExists")),
        )

    @property
    def text(self) -> str:
        """The name as SQL text (each part quoted)."""
        return ".".join("`" + part.replace("`", "``") + "`" for part in self.name)

    @property
    def delta_path(self) -> str | None:
        """The path of a ``delta.`path``` name."""
        if len(self.name) == 2 and self.name[0].lower() == "delta":
            return self.name[1]
        return None

    @property
    def is_delta(self) -> bool:
        return (self.provider or "").lower() == "delta"


def save_as_table(
    spark: SparkSession,
    df: DataFrame,
    name: str,
    mode: str,
    partition_by: list[str] | None,
    options: dict[str, str],
) -> None:
    """``df.write.format("delta").saveAsTable(name)``: a table the catalog knows is written
    as a new version (an overwrite keeps its history, where Spark's own ``saveAsTable`` would
    drop and recreate it); a new one is written, then registered: at ``options["path"]`` as
    an external table, else as a managed table under the warehouse."""
    options = dict(options)
    path = next((options.pop(k) for k in list(options) if k.lower() == "path"), None)
    entry = lookup(spark, name)
    lowered = mode.lower()
    if entry is not None:
        _check_delta(entry, name)
        if lowered in ("error", "errorifexists", "default"):
            raise DeltaAnalysisException(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} already exists (mode {mode}): "
                "use mode('append') or mode('overwrite')"
            )
        if lowered == "ignore":
            return
        _check_location(entry, name, path)
        write_delta(spark, df, entry.location, WriteRequest(mode, partition_by, options))
        refresh(spark, entry)
        return
    location = path or default_location(spark, name)
    options[OPERATION_OPTION] = "CREATE TABLE AS SELECT"
    write_delta(spark, df, location, WriteRequest(mode, partition_by, options))
    register(spark, name, location, managed=path is None)


def write_to(
    spark: SparkSession,
    df: DataFrame,
    action: str,
    definition: TableDefinition,
    condition: str | None,
) -> bool:
    """``df.writeTo(name).<action>()`` when ``name`` is a Delta table (``append``,
    ``overwrite(condition)``, ``overwritePartitions``) or the writer says ``using("delta")``
    (``replace``, ``createOrReplace``); False leaves the write to Spark. (``create`` is
    Spark's CREATE TABLE AS SELECT, which the ``delta`` source serves.)"""
    if action in ("replace", "createOrReplace"):
        if not definition.is_delta:
            return False
        or_create = action == "createOrReplace"
        operation = "CREATE OR REPLACE TABLE AS SELECT" if or_create else "REPLACE TABLE AS SELECT"
        replace_table(spark, replace(definition, or_create=or_create), df, operation)
        return True
    if action not in ("append", "overwrite", "overwritePartitions"):
        return False
    path = definition.delta_path
    entry = None
    if path is None:
        entry = lookup(spark, definition.text)
        if entry is None or entry.provider != "delta":
            return False  # Spark's error (not found, or not a table V2 writes can take)
        path = entry.location
    elif not DeltaLog(path).is_delta_table():
        raise DeltaTableNotFoundError(f"{definition.text}: {path} is not a Delta table")
    options = dict(definition.options)
    if action == "overwrite":
        if any(key.lower() == "replacewhere" for key in options):
            raise DeltaAnalysisException(
                "[DELTA_REPLACE_WHERE_IN_OVERWRITE] You can't use replaceWhere in conjunction "
                "with an overwrite by filter"
            )
        options["replaceWhere"] = condition or "true"
    elif action == "overwritePartitions":
        options["partitionOverwriteMode"] = "dynamic"
    mode = "append" if action == "append" else "overwrite"
    df = _store_assigned(spark, df, DeltaLog.for_table(path).snapshot().schema)
    write_delta(spark, df, path, WriteRequest(mode, None, options))
    if entry is not None:
        refresh(spark, entry)
    return True


def _store_assigned(spark: SparkSession, df: DataFrame, schema: StructType) -> DataFrame:
    """``df`` with each top-level column of a narrower type cast to the table's, where Spark's
    ANSI store assignment allows it (int into bigint, say): a V2 write resolves its columns
    against the table as INSERT does, before the schema check sees them."""
    from pyspark.sql import functions as F

    by_name = {f.name.lower(): f for f in schema.fields}
    columns, changed = [], False
    for field in df.schema.fields:
        target = by_name.get(field.name.lower())
        if target is not None:
            spark_type = to_spark_type(target.type)
            if spark_type != field.dataType and ansi_store_assignable(
                spark, field.dataType.json(), spark_type.json()
            ):
                columns.append(F.col(f"`{field.name}`").cast(spark_type).alias(field.name))
                changed = True
                continue
        columns.append(F.col(f"`{field.name}`"))
    return df.select(*columns) if changed else df


def replace_table(
    spark: SparkSession,
    definition: TableDefinition,
    data: DataFrame | None,
    operation: str,
) -> None:
    """``[CREATE OR] REPLACE TABLE``: one commit over the table's log gives it the new
    schema, partitioning, properties, comment and data (``data``; None: no rows), keeping
    its history and identity, as delta-spark does. A missing table is created and
    registered when ``definition.or_create``; a table of another format is refused."""
    declared = data is None
    if data is None:
        assert definition.schema is not None  # REPLACE TABLE without AS has columns
        data = _empty_frame(spark, definition.schema)
    path = definition.delta_path
    if path is not None:
        if not definition.or_create and not DeltaLog(path).is_delta_table():
            raise _missing(definition)
        _write_definition(spark, path, definition, data, operation, declared)
        return
    entry = lookup(spark, definition.text)
    if entry is None:
        if not definition.or_create:
            raise _missing(definition)
        location = definition.location or default_location(spark, definition.text)
        _write_definition(spark, location, definition, data, operation, declared)
        register(spark, definition.text, location, managed=definition.location is None)
        return
    _check_delta(entry, definition.text)
    _check_location(entry, definition.text, definition.location)
    _write_definition(spark, entry.location, definition, data, operation, declared)
    refresh(spark, entry)


def create_at_path(
    spark: SparkSession,
    definition: TableDefinition,
    data: DataFrame | None,
    if_not_exists: bool,
) -> None:
    """``CREATE TABLE [IF NOT EXISTS] delta.`path` ...``: version 0 with the definition's
    schema (or ``data``'s), partitioning, properties and comment. An existing table is left
    alone when IF NOT EXISTS says so, or when the statement only names it (no columns, no
    query: delta-spark accepts that as a no-op); anything else is refused unchanged."""
    path = definition.delta_path or definition.location
    assert path is not None
    if DeltaLog(path).is_delta_table():
        if if_not_exists or (data is None and definition.schema is None):
            return
        raise DeltaAnalysisException(
            f"[DELTA_TABLE_ALREADY_EXISTS] Table {definition.text} already exists (use "
            "CREATE TABLE IF NOT EXISTS, or CREATE OR REPLACE TABLE to replace it)"
        )
    if data is None:
        if definition.schema is None:
            raise DeltaAnalysisException(
                f"[DELTA_SCHEMA_NOT_PROVIDED] CREATE TABLE {definition.text}: no Delta table "
                "is there, so the statement needs columns or AS SELECT"
            )
        data = _empty_frame(spark, definition.schema)
        operation = "CREATE TABLE"
    else:
        operation = "CREATE TABLE AS SELECT"
    options = {
        **definition.properties,
        OPERATION_OPTION: operation,
        PROPERTIES_OPTION: json.dumps(dict(definition.properties)),
    }
    if definition.clustering:
        options[CLUSTERING_OPTION] = json.dumps(list(definition.clustering))
    if definition.schema is not None and operation == "CREATE TABLE":
        options[DECLARED_SCHEMA_OPTION] = definition.schema.json()
    if definition.comment is not None:
        options[DESCRIPTION_OPTION] = definition.comment
    write_delta(
        spark, data, path, WriteRequest("errorifexists", list(definition.partitioning), options)
    )


def _write_definition(
    spark: SparkSession,
    location: str,
    definition: TableDefinition,
    data: DataFrame,
    operation: str,
    declared: bool,
) -> None:
    """One overwrite of ``location`` with the definition; ``declared``: the rows are none and
    the definition's columns are the schema, as declared."""
    options = {
        **definition.options,
        **definition.properties,
        OPERATION_OPTION: operation,
        REPLACE_OPTION: "true",
        PROPERTIES_OPTION: json.dumps(dict(definition.properties)),
        "overwriteSchema": "true",
    }
    if definition.clustering:
        options[CLUSTERING_OPTION] = json.dumps(list(definition.clustering))
    if declared:
        assert definition.schema is not None
        options[DECLARED_SCHEMA_OPTION] = definition.schema.json()
    if definition.comment is not None:
        options[DESCRIPTION_OPTION] = definition.comment
    write_delta(
        spark, data, location, WriteRequest("overwrite", list(definition.partitioning), options)
    )


def _empty_frame(spark: SparkSession, schema: SparkStructType) -> DataFrame:
    """No rows of ``schema`` (what a definition without a query writes)."""
    rows: list[tuple[Any, ...]] = []
    return spark.createDataFrame(rows, schema)


def _missing(definition: TableDefinition) -> DeltaAnalysisException:
    return DeltaAnalysisException(
        f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {definition.text} cannot be found: "
        "REPLACE needs an existing table; use CREATE OR REPLACE TABLE (or "
        "writeTo(...).createOrReplace())"
    )


def _check_delta(entry: CatalogEntry, name: str) -> None:
    if entry.provider != "delta":
        raise DeltaAnalysisException(
            f"[DELTA_TABLE_NOT_DELTA] {name} is a {entry.provider} table, not a Delta table"
        )


def _check_location(entry: CatalogEntry, name: str, location: str | None) -> None:
    if location is not None and normalise(location) != normalise(entry.location):
        raise DeltaAnalysisException(
            f"[DELTA_CREATE_TABLE_WITH_DIFFERENT_LOCATION] table {name} is at "
            f"{entry.location}, not at the location given ({location})"
        )
