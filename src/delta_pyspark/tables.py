"""``DeltaTable``: delta-spark's Python API over this implementation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from delta_pyspark.connect.tables import over_connect
from delta_pyspark.core.commands import clustering
from delta_pyspark.core.commands.protocol_upgrade import add_feature, upgrade_protocol
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.generated_columns import GENERATION_EXPRESSION_KEY
from delta_pyspark.core.protocol.identity_columns import check_definitions, identity_metadata
from delta_pyspark.core.protocol.schema import StructField, StructType
from delta_pyspark.core.protocol.table_features import (
    implied_writer_features,
    protocol_for,
    reader_features,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import partition_names, table_metadata
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
)
from delta_pyspark.spark import arguments as args
from delta_pyspark.spark.catalog.session_catalog import lookup, register, table_location
from delta_pyspark.spark.columns.generated_columns import validate as validate_generated_columns
from delta_pyspark.spark.commands.delete import execute_delete
from delta_pyspark.spark.commands.merge import DeltaMergeBuilder
from delta_pyspark.spark.commands.optimize import DeltaOptimizeBuilder
from delta_pyspark.spark.commands.update import execute_update
from delta_pyspark.spark.sources.activation import install, load_table
from delta_pyspark.spark.types import from_spark_schema

# The columns of ``history()`` and ``detail()`` (and of SQL DESCRIBE HISTORY / DETAIL).
HISTORY_DDL = (
    "version long, timestamp timestamp, userId string, userName string, operation string, "
    "operationParameters map<string,string>, readVersion long, isolationLevel string, "
    "isBlindAppend boolean, operationMetrics map<string,string>, userMetadata string, "
    "engineInfo string"
)
DETAIL_DDL = (
    "format string, id string, name string, description string, location string, "
    "createdAt timestamp, lastModified timestamp, partitionColumns array<string>, "
    "clusteringColumns array<string>, numFiles long, sizeInBytes long, "
    "properties map<string,string>, minReaderVersion int, minWriterVersion int, "
    "tableFeatures array<string>"
)


class DeltaTable:
    """A Delta table at a path (or managed table name), read at its latest version."""

    def __init__(self, spark: SparkSession, path: str, alias: str | None = None) -> None:
        install()
        self._spark = spark
        self._path = path
        self._log = DeltaLog.for_table(path)
        self._alias = alias

    # ------------------------------------------------------------ construction

    @classmethod
    @over_connect
    def forPath(
        cls,
        sparkSession: SparkSession,
        path: str,
        hadoopConf: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        args.check_str(path, "path")
        if hadoopConf:
            # the log is read by Python, not through Hadoop: such settings would be ignored
            keys = ", ".join(sorted(args.check_dict(hadoopConf, "hadoopConf")))
            raise DeltaIllegalArgumentException(
                f"forPath's hadoopConf ({keys}) is not supported: delta-pyspark reads the log "
                "without Hadoop file systems"
            )
        log = DeltaLog.for_table(path)
        if not log.is_delta_table():
            raise DeltaTableNotFoundError(f"{path} is not a Delta table")
        return cls(sparkSession, path)

    @classmethod
    @over_connect
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        args.check_str(tableOrViewName, "tableOrViewName")
        location = table_location(sparkSession, tableOrViewName)
        if not DeltaLog.for_table(location).is_delta_table():
            raise DeltaTableNotFoundError(
                f"{tableOrViewName} is not a Delta table (looked in {location})"
            )
        return cls(sparkSession, location)

    @classmethod
    @over_connect
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        args.check_str(identifier, "identifier")
        return DeltaLog(identifier).is_delta_table()

    @classmethod
    @over_connect
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession or SparkSession.getActiveSession(), "create")

    @classmethod
    @over_connect
    def createIfNotExists(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(
            sparkSession or SparkSession.getActiveSession(), "createIfNotExists"
        )

    @classmethod
    @over_connect
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession or SparkSession.getActiveSession(), "replace")

    @classmethod
    @over_connect
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession or SparkSession.getActiveSession(), "createOrReplace")

    # ------------------------------------------------------------ reading

    def _snapshot(self) -> Snapshot:
        return self._log.snapshot()

    def toDF(self) -> DataFrame:
        df = load_table(self._spark, self._path, {})
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        args.check_str(aliasName, "aliasName")
        return DeltaTable(self._spark, self._path, aliasName)

    def history(self, limit: int | None = None) -> DataFrame:
        if limit is not None:
            args.check_int(limit, "limit")
        rows = []
        for r in self._log.history(limit):
            rows.append(
                (
                    r["version"],
                    _datetime(r["timestamp"]),
                    r.get("userId"),
                    r.get("userName"),
                    r.get("operation"),
                    {  # a parameter without a value stays null (delta-spark's history)
                        k: None if v is None else str(v)
                        for k, v in (r.get("operationParameters") or {}).items()
                    },
                    r.get("readVersion"),
                    r.get("isolationLevel"),
                    r.get("isBlindAppend"),
                    {k: str(v) for k, v in (r.get("operationMetrics") or {}).items()},
                    r.get("userMetadata"),
                    r.get("engineInfo"),
                )
            )
        return self._spark.createDataFrame(rows, HISTORY_DDL)

    def detail(self) -> DataFrame:
        s = self._snapshot()
        p = s.protocol
        features = sorted(reader_features(p) | implied_writer_features(p))
        created = s.metadata.created_time
        row = {
            "format": "delta",
            "id": s.metadata.id,
            "name": s.metadata.name,
            "description": s.metadata.description,
            "location": s.table_root,
            "createdAt": _datetime(created) if created else None,
            "lastModified": _datetime(s.timestamp),
            "partitionColumns": s.partition_columns,
            "clusteringColumns": clustering.column_names(s),
            "numFiles": s.num_files,
            "sizeInBytes": s.size_in_bytes,
            "properties": dict(s.configuration),
            "minReaderVersion": p.min_reader_version,
            "minWriterVersion": p.min_writer_version,
            "tableFeatures": features,
        }
        return self._spark.createDataFrame([row], DETAIL_DDL)

    # ------------------------------------------------------------ protocol

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raise the protocol to at least these versions; lower ones are kept (delta-spark makes
        a request below the table's versions a no-op, never a downgrade)."""
        args.check_version(readerVersion, "readerVersion")
        args.check_version(writerVersion, "writerVersion")
        upgrade_protocol(self._log, readerVersion, writerVersion)

    def addFeatureSupport(self, featureName: str) -> None:
        args.check_str(featureName, "featureName")
        add_feature(self._log, featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """ALTER TABLE DROP FEATURE: remove the feature's traces, then drop it from the
        protocol (delta-spark's rules and errors; ``spark/commands/drop_feature.py``)."""
        from delta_pyspark.spark.commands.drop_feature import drop_table_feature

        args.check_str(featureName, "featureName")
        if truncateHistory is not None:
            args.check_bool(truncateHistory, "truncateHistory")
        drop_table_feature(self._spark, self._log, featureName, bool(truncateHistory))

    # ------------------------------------------------------------ DML

    def delete(self, condition: str | Column | None = None) -> DataFrame:
        """Delete rows matching ``condition`` (all rows when None) in one atomic commit.

        Returns a one-row DataFrame ``num_affected_rows`` (what SQL DELETE returns).
        """
        args.check_condition(condition)
        metrics = execute_delete(self._spark, self._log, condition)
        return self._affected(metrics.get("numDeletedRows"))

    def update(
        self,
        condition: str | Column | None = None,
        set: Mapping[str, str | Column] | None = None,
    ) -> DataFrame:
        """Set ``set`` (column -> SQL expression or Column) on rows matching ``condition``.

        Returns a one-row DataFrame ``num_affected_rows`` (what SQL UPDATE returns).
        """
        assignments = args.check_assignments(set, "'set'")
        args.check_condition(condition)
        metrics = execute_update(self._spark, self._log, condition, assignments)
        return self._affected(metrics["numUpdatedRows"])

    def merge(self, source: DataFrame, condition: str | Column) -> DeltaMergeBuilder:
        """Start a MERGE of ``source`` into this table on ``condition``."""
        args.check_merge_source(source, condition)
        return DeltaMergeBuilder(self._spark, self._log, self._alias, source, condition)

    # ------------------------------------------------------------ maintenance

    def optimize(self) -> DeltaOptimizeBuilder:
        """Start an OPTIMIZE (bin-packing compaction or Z-ordering) of this table."""
        return DeltaOptimizeBuilder(self._spark, self._log)

    def reorgPurge(self, condition: str | None = None) -> DataFrame:
        """REORG TABLE ... [WHERE partition predicate] APPLY (PURGE): rewrite the files
        that carry deletion vectors so soft-deleted rows are physically gone."""
        from delta_pyspark.spark.commands.optimize import execute_purge

        return execute_purge(self._spark, self._log, condition)

    def vacuum(
        self, retentionHours: float | None = None, dryRun: bool = False, *, lite: bool | None = None
    ) -> DataFrame:
        """Delete files no version within the retention period references.

        ``lite=True`` is SQL's ``VACUUM ... LITE``: only files the log removed, found without
        listing the table (``lite=False``: FULL; None: the session's
        ``spark.databricks.delta.vacuum.lite.enabled``, default false).

        Refuses, deleting nothing, with a ``CorruptLogError`` when the log does not describe
        the files on disk (a damaged log, a disagreeing ``.crc``, a live file missing): the
        files it would call unused might be live. After checking the table by other means,
        ``spark.databricks.delta.vacuum.trustDamagedLog=true`` runs it past the missing-file
        check.
        """
        from delta_pyspark.spark.commands.vacuum import execute_vacuum

        hours = None if retentionHours is None else _hours(retentionHours)
        return execute_vacuum(
            self._spark,
            self._log,
            hours,
            dry_run=args.check_bool(dryRun, "dryRun"),
            lite=None if lite is None else args.check_bool(lite, "lite"),
        )

    def restoreToVersion(self, version: int) -> DataFrame:
        from delta_pyspark.spark.commands.restore import execute_restore

        return execute_restore(self._spark, self._log, version=args.check_int(version, "version"))

    def restoreToTimestamp(self, timestamp: str) -> DataFrame:
        from delta_pyspark.spark.commands.restore import execute_restore

        return execute_restore(
            self._spark, self._log, timestamp=args.check_str(timestamp, "timestamp")
        )

    def clone(
        self,
        target: str,
        isShallow: bool,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        return self._clone(target, isShallow, replace, properties)

    def cloneAtVersion(
        self,
        version: int,
        target: str,
        isShallow: bool,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        return self._clone(target, isShallow, replace, properties, version=version)

    def cloneAtTimestamp(
        self,
        timestamp: str,
        target: str,
        isShallow: bool,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        return self._clone(target, isShallow, replace, properties, timestamp=timestamp)

    def _clone(
        self,
        target: str,
        shallow: bool,
        replace: bool,
        properties: Mapping[str, str] | None,
        version: int | None = None,
        timestamp: str | None = None,
    ) -> DeltaTable:
        from delta_pyspark.spark.commands.clone import execute_clone

        args.check_str(target, "target")
        args.check_bool(shallow, "isShallow")
        args.check_bool(replace, "replace")
        if version is not None:
            args.check_int(version, "version")
        if timestamp is not None:
            args.check_str(timestamp, "timestamp")
        if properties is not None:
            for key, value in args.check_dict(properties, "properties").items():
                args.check_str(key, f"All property keys including {key}")
                args.check_str(value, f"All property values including {value}")
        result = execute_clone(
            self._spark,
            self._log,
            target,
            shallow=shallow,
            replace=replace,
            properties=dict(properties or {}),
            version=version,
            timestamp=timestamp,
        )
        return DeltaTable(self._spark, result.target_root)

    @classmethod
    @over_connect
    def convertToDelta(
        cls,
        sparkSession: SparkSession,
        identifier: str,
        partitionSchema: str | Any | None = None,
    ) -> DeltaTable:
        """Turn a Parquet directory (``parquet.`path```) or a Parquet table of the session
        catalog (by name) into a Delta table in place."""
        from delta_pyspark.spark.commands.convert import convert_to_delta

        return cls(sparkSession, convert_to_delta(sparkSession, identifier, partitionSchema))

    def generate(self, mode: str) -> None:
        """Generate ``symlink_format_manifest`` files for engines that read manifests."""
        from delta_pyspark.core.transaction.manifest import generate_manifest

        generate_manifest(self._log, mode)

    # ------------------------------------------------------------ constraints, properties

    def addConstraint(self, name: str, expression: str) -> None:
        """ALTER TABLE ADD CONSTRAINT: fails if an existing row violates ``expression``."""
        from delta_pyspark.spark.commands.constraints import add_constraint

        add_constraint(self._spark, self._log, name, expression)

    def dropConstraint(self, name: str, ifExists: bool = True) -> None:
        from delta_pyspark.spark.commands.constraints import drop_constraint

        drop_constraint(self._log, name, if_exists=ifExists)

    def setProperties(self, properties: Mapping[str, str]) -> None:
        """ALTER TABLE SET TBLPROPERTIES: one metadata (and, if needed, protocol) commit."""
        from delta_pyspark.core.commands.alter_table import set_properties

        set_properties(self._log, {k: str(v) for k, v in properties.items()})

    def unsetProperties(self, keys: list[str], ifExists: bool = False) -> None:
        from delta_pyspark.core.commands.alter_table import unset_properties

        unset_properties(self._log, list(keys), if_exists=ifExists)

    def _affected(self, rows: int | None) -> DataFrame:
        return self._spark.createDataFrame([(rows,)], "num_affected_rows long")


def _hours(value: Any) -> float:
    """``vacuum``'s retention: a number of hours, as delta-spark's ``float(retentionHours)``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DeltaIllegalArgumentException(
            f"retentionHours needs to be a number but got '{type(value)}'."
        )
    return float(value)


def _datetime(ms: int) -> Any:
    from datetime import datetime

    return datetime.fromtimestamp(ms / 1000)


@dataclass
class IdentityGenerator:
    """delta-spark's ``IdentityGenerator``: an identity column's first value and step, given
    to ``addColumn(generatedAlwaysAs=...)`` or ``addColumn(generatedByDefaultAs=...)``."""

    start: int = 1
    step: int = 1


def _check_generation(always: Any, by_default: Any) -> None:
    """delta-spark's checks of ``generatedAlwaysAs``/``generatedByDefaultAs`` (an expression
    string or an ``IdentityGenerator``: anything with ``start`` and ``step``), then a refusal
    string or an ``IdentityGenerator``: anything with ``start`` and ``step``)."""
    if always is not None and by_default is not None:
        raise DeltaIllegalArgumentException(
            "generatedByDefaultAs and generatedAlwaysAs cannot both be set."
        )

    def identity(spec: Any) -> bool:
        if not (hasattr(spec, "start") and hasattr(spec, "step")):
            return False
        if spec.step == 0:
            raise DeltaIllegalArgumentException(
                "Column identity generation requires step to be non-zero."
            )
        return True

    if always is not None:
        args.check_type(
            isinstance(always, str) or identity(always),
            "Generated always as expression must be str or IdentityGenerator.",
            [always],
        )
    if by_default is not None:
        args.check_type(
            identity(by_default),
            "Generated by default expression must be IdentityGenerator.",
            [by_default],
        )


def _identity_metadata(always: Any, by_default: Any) -> dict[str, Any]:
    """The column metadata of an identity column declared with an ``IdentityGenerator``
    (checked by ``_check_generation``); empty for any other column."""
    spec = by_default if by_default is not None else always
    if spec is None or isinstance(spec, str):  # a generated column's expression
        return {}
    return identity_metadata(int(spec.start), int(spec.step), by_default is not None)


class DeltaTableBuilder:
    """``DeltaTable.create()/createIfNotExists()/replace()/createOrReplace()`` builder."""

    def __init__(self, spark: SparkSession | None, mode: str) -> None:
        if spark is None:
            raise DeltaIllegalArgumentException("no active SparkSession")
        self._spark = spark
        self._mode = mode
        self._name: str | None = None
        self._location: str | None = None
        self._fields: list[StructField] = []
        self._partitions: list[str] = []
        self._clustering: list[str] | None = None
        self._properties: dict[str, str] = {}
        self._comment: str | None = None

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        args.check_type(isinstance(identifier, str), "Identifier must be str.", [identifier])
        self._name = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        args.check_type(isinstance(location, str), "Location must be str.", [location])
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        args.check_type(isinstance(comment, str), "Table comment must be str.", [comment])
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder:
        from pyspark.sql.types import DataType as SparkDataType
        from pyspark.sql.types import StructField as SparkField
        from pyspark.sql.types import StructType as SparkStruct
        from pyspark.sql.types import _parse_datatype_string

        args.check_type(isinstance(colName, str), "Column name must be str.", [colName])
        args.check_type(
            isinstance(dataType, str | SparkDataType),
            "Column data type must be str or DataType.",
            [dataType],
        )
        args.check_type(isinstance(nullable, bool), "Column nullable must be bool.", [nullable])
        if comment is not None:
            args.check_type(isinstance(comment, str), "Column comment must be str.", [comment])
        _check_generation(generatedAlwaysAs, generatedByDefaultAs)
        spark_type = (
            dataType if isinstance(dataType, SparkDataType) else _parse_datatype_string(dataType)
        )
        metadata: dict[str, Any] = {"comment": comment} if comment else {}
        metadata |= _identity_metadata(generatedAlwaysAs, generatedByDefaultAs)
        if isinstance(generatedAlwaysAs, str):
            metadata[GENERATION_EXPRESSION_KEY] = generatedAlwaysAs
        spark_field = SparkField(colName, spark_type, nullable, metadata)
        self._fields.append(from_spark_schema(SparkStruct([spark_field])).fields[0])
        return self

    def addColumns(self, cols: Any) -> DeltaTableBuilder:
        from pyspark.sql.types import StructField as SparkField
        from pyspark.sql.types import StructType as SparkStruct

        if isinstance(cols, list):
            for c in cols:
                args.check_type(
                    isinstance(c, SparkField), "Column in existing schema must be StructField.", [c]
                )
            cols = SparkStruct(cols)
        args.check_type(
            isinstance(cols, SparkStruct),
            "Schema must be StructType or a list of StructField.",
            [cols],
        )
        for f in cols.fields:
            self.addColumn(f.name, f.dataType, f.nullable, comment=f.metadata.get("comment"))
        return self

    def partitionedBy(self, *cols: Any) -> DeltaTableBuilder:
        self._partitions = args.column_names(cols, "Partitioning column")
        return self

    def clusterBy(self, *cols: Any) -> DeltaTableBuilder:
        self._clustering = args.column_names(cols, "Clustering column")
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        args.check_type(
            isinstance(key, str) and isinstance(value, str),
            "Key and value of property must be string.",
            [key, value],
        )
        self._properties[key] = value
        return self

    def execute(self) -> DeltaTable:
        if self._location is None and self._name is None:
            raise DeltaIllegalArgumentException("give the table a tableName() or a location()")
        path = self._location or table_location(self._spark, self._name or "")
        log = DeltaLog.for_table(path)
        exists = log.is_delta_table()
        shown = f"`{self._name}`" if self._name else path
        if exists and self._mode == "create":
            raise DeltaAnalysisException(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create table or view {shown} because "
                "it already exists"
            )
        if exists and self._mode == "createIfNotExists":
            return DeltaTable(self._spark, path)
        if not exists and self._mode == "replace":
            raise DeltaAnalysisException(
                f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {shown} cannot be found: replace() "
                "needs an existing table (createOrReplace() makes one)"
                if self._name
                else f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table {path} cannot be replaced as "
                "it does not exist: createOrReplace() makes one"
            )
        if not self._fields:
            raise DeltaAnalysisException("a new table needs at least one column")
        schema = StructType(tuple(self._fields))
        partitions = partition_names(schema, self._partitions)
        check_definitions(schema, partitions)
        validate_generated_columns(self._spark, schema)
        snapshot = log.snapshot() if exists else None
        txn = Transaction(log, snapshot)
        if snapshot is not None:
            txn.read_whole_table()
            txn.remove_files(remove_actions(snapshot.files))
        metadata = table_metadata(
            snapshot.metadata if snapshot else None,
            schema,
            partitions,
            self._properties,
            description=self._comment,
            name=self._name,
        )
        txn.update_metadata(metadata)
        txn.update_protocol(
            protocol_for(schema, self._properties, snapshot.protocol if snapshot else None)
        )
        cluster_by = clustering.stage_clustering(txn, snapshot, self._clustering, replacing=True)
        operation = "CREATE TABLE" if snapshot is None else "REPLACE TABLE"
        # delta-spark's parameters of a CREATE/REPLACE TABLE, in its order (description is
        # null without a comment; clusterBy is "[]" on a table without clustering)
        params = {
            "partitionBy": json.dumps(self._partitions),
            "clusterBy": json.dumps(cluster_by or [], separators=(",", ":")),
            "description": self._comment,
            "isManaged": "true" if self._location is None else "false",
            "properties": json.dumps(self._properties),
        }
        txn.commit(operation, params)
        if self._name is not None and lookup(self._spark, self._name) is None:
            register(self._spark, self._name, path, managed=self._location is None)
        return DeltaTable(self._spark, path)
