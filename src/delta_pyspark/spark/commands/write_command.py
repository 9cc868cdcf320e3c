"""``df.write.format("delta")``: modes, options and schema rules of delta-spark.

Appends, overwrites (whole table, ``replaceWhere``, dynamic partition overwrite),
schema enforcement and evolution, idempotent ``txnAppId``/``txnVersion`` writes
and table creation all end in one optimistic-transaction commit.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyspark.core.commands.clustering import (
    CATALOG_PROPERTY,
    requested_names,
    stage_write_clustering,
)
from delta_pyspark.core.expressions.nodes import Expr
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.actions import AddFile, Metadata, RemoveFile, remove_actions
from delta_pyspark.core.protocol.generated_columns import check_type_changes
from delta_pyspark.core.protocol.schema import StructField, StructType, schema_to_string
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.protocol.schema_evolution import check_write_compatible, merge_schemas
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.protocol.table_properties import (
    canonical_key,
    check_constraints,
    is_delta_key,
    is_protocol_key,
    type_widening,
    validate_properties,
)
from delta_pyspark.core.skipping.data_skipping import (
    partition_filter_mask,
    split_partition_predicate,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import table_metadata
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
)
from delta_pyspark.spark.columns import generated_columns
from delta_pyspark.spark.columns.identity import record_high_water_marks, with_identity_values
from delta_pyspark.spark.commands.auto_compact import commit_and_compact
from delta_pyspark.spark.commands.change_data import records_changes, replaced_changes
from delta_pyspark.spark.commands.rewrite import rewrite_without
from delta_pyspark.spark.conf import PROPERTY_DEFAULTS_PREFIX, auto_merge, user_metadata
from delta_pyspark.spark.files.optimized_write import optimize_write_enabled
from delta_pyspark.spark.files.scan import read_files
from delta_pyspark.spark.files.write import write_files
from delta_pyspark.spark.files.write_checks import guard_rows
from delta_pyspark.spark.jvm.helpers import settings_with_prefix
from delta_pyspark.spark.types import from_spark_schema, relaxed, to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

# Options Spark's SQL commands hand the source (see DeltaWrites.java): the operation a commit
# records (CREATE TABLE, CREATE TABLE AS SELECT) and the table's comment.
OPERATION_OPTION = "__delta_operation"
DESCRIPTION_OPTION = "__delta_description"
# What Spark's DataFrameWriter.clusterBy hands a V1 source (a JSON list of names).
CLUSTERING_OPTION = "__clustering_columns"
# A [CREATE OR] REPLACE TABLE (see ``table_writes``): the new definition's properties and
# comment replace the table's, where an overwrite with ``overwriteSchema`` keeps them.
REPLACE_OPTION = "__delta_replace"
# The schema a CREATE/REPLACE TABLE declares (Spark's JSON): kept as declared, NOT NULL
# columns included, where the schema of written rows is made nullable.
DECLARED_SCHEMA_OPTION = "__delta_declared_schema"
# A statement's TBLPROPERTIES (a JSON object): user keys are kept too, where options of a
# write only ever give ``delta.*`` properties.
PROPERTIES_OPTION = "__delta_properties"
# The columns an INSERT's column list leaves out (Spark fills them with a bare NULL; see
# DeltaWrites.java), U+0001-separated: identity and generated columns left out get their
# values, where a NULL written explicitly is a value.
OMITTED_COLUMNS_OPTION = "__delta_omitted_columns"
_MODES = {"append", "overwrite", "error", "errorifexists", "ignore", "default"}


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() == "true"


@dataclass
class WriteRequest:
    """A delta write as the DataFrameWriter described it."""

    mode: str = "errorifexists"
    partition_by: list[str] | None = None
    options: dict[str, str] = field(default_factory=dict)
    # The commit's operationParameters, when the caller's operation has its own (streaming).
    parameters: dict[str, str] | None = None

    def opt(self, name: str, default: str | None = None) -> str | None:
        lowered = {k.lower(): v for k, v in self.options.items()}
        return lowered.get(name.lower(), default)

    @property
    def table_properties(self) -> dict[str, str]:
        """A statement's TBLPROPERTIES, else the ``delta.*`` options; ``delta.*`` keys in
        their stored spelling (Spark lower-cases the option keys it hands a source)."""
        declared = self.opt(PROPERTIES_OPTION)
        if declared is not None:
            return {
                canonical_key(k) if is_delta_key(k) else k: str(v)
                for k, v in json.loads(declared).items()
                if k != CATALOG_PROPERTY
            }
        return {canonical_key(k): str(v) for k, v in self.options.items() if is_delta_key(k)}

    @property
    def omitted_columns(self) -> set[str]:
        """The columns (lower case) an INSERT's column list left out."""
        return {c.lower() for c in (self.opt(OMITTED_COLUMNS_OPTION) or "").split("\x01") if c}


def _session_defaults(spark: SparkSession) -> dict[str, str]:
    """Table properties the session sets for new tables:
    ``spark.databricks.delta.properties.defaults.appendOnly`` sets ``delta.appendOnly``."""
    settings = settings_with_prefix(spark, PROPERTY_DEFAULTS_PREFIX)
    return {"delta." + k[len(PROPERTY_DEFAULTS_PREFIX) :]: v for k, v in settings.items()}


def _align(df: DataFrame, schema: StructType) -> DataFrame:
    """``df`` with the table's columns, in table order (missing ones as typed nulls)."""
    from pyspark.sql import functions as F

    wanted = [(f.name, relaxed(to_spark_type(f.type))) for f in schema.fields]
    if [(f.name, f.dataType) for f in df.schema.fields] == wanted:
        return df  # as it is: a projection of no-op casts costs a JVM round trip a column
    by_name = {c.lower(): c for c in df.columns}
    cols = []
    for f in schema.fields:
        src = by_name.get(f.name.lower())
        if src is None:
            cols.append(F.lit(None).cast(relaxed(to_spark_type(f.type))).alias(f.name))
        else:
            cols.append(F.col(f"`{src}`").cast(relaxed(to_spark_type(f.type))).alias(f.name))
    return df.select(*cols)


def _spark_json_schema(text: str) -> StructType:
    from pyspark.sql.types import StructType as SparkStruct

    return from_spark_schema(SparkStruct.fromJson(json.loads(text)))


def _nullable(schema: StructType) -> StructType:
    return StructType(tuple(StructField(f.name, f.type, True, f.metadata) for f in schema.fields))


def write_delta(
    spark: SparkSession, df: DataFrame, path: str, request: WriteRequest
) -> Snapshot | None:
    """Execute one delta write; returns the committed snapshot (None when skipped)."""
    mode = _save_mode(request)
    opened = _open(path, mode)
    if opened is None:
        return None
    txn, snapshot = opened
    if not _claim_app_transaction(txn, request, path):
        return None

    data_schema = from_spark_schema(df.schema)
    overwrite = mode == "overwrite"
    if snapshot is not None:
        txn.check_writable()
    if overwrite and snapshot is not None:
        txn.check_data_removable()
    merge_schema = _truthy(request.opt("mergeSchema", "false")) or auto_merge(spark)
    overwrite_schema = overwrite and _truthy(request.opt("overwriteSchema", "false"))
    replace_where = request.opt("replaceWhere")
    if overwrite_schema and replace_where:
        raise DeltaIllegalArgumentException("overwriteSchema cannot be used with replaceWhere")

    metadata, protocol_requests = _target_metadata(
        spark, snapshot, data_schema, request, merge_schema, overwrite_schema
    )
    metadata, schema = _apply_metadata(spark, txn, snapshot, metadata, protocol_requests)
    cluster_by = stage_write_clustering(
        txn,
        snapshot,
        requested_names(request.opt(CLUSTERING_OPTION), request.opt(PROPERTIES_OPTION)),
        overwrite and not replace_where,
        _truthy(request.opt(REPLACE_OPTION, "false")),
    )
    checks = check_constraints(metadata.configuration)
    creating = request.opt(OPERATION_OPTION) == "CREATE TABLE"
    omitted = request.omitted_columns
    df, generated = with_identity_values(df, schema, metadata.partition_columns, omitted, creating)
    computed = generated_columns.missing(schema, txn.protocol, df, omitted)
    aligned = generated_columns.fill_missing(_align(df, schema), schema, computed)
    generation_checks = generated_columns.checks(schema, txn.protocol)
    guarded = guard_rows(aligned, schema, checks, generation_checks)
    partitions = list(metadata.partition_columns)
    operation = request.opt(OPERATION_OPTION) or "WRITE"
    params = _parameters(request, mode, operation, partitions, metadata)
    if cluster_by is not None:
        params["clusterBy"] = json.dumps(cluster_by, separators=(",", ":"))

    removes: list[RemoveFile] = []
    extra_adds: list[AddFile] = []
    replaced: DataFrame | None = None  # rows a replaceWhere rewrite replaces (change data)
    dynamic = overwrite and snapshot is not None and not replace_where and _dynamic(spark, request)
    if overwrite and snapshot is not None and replace_where:
        guarded = _guard_replace_where(guarded, replace_where)
        params["predicate"] = json.dumps([replace_where])
        removes, extra_adds, replaced = _replace_where_removes(spark, txn, snapshot, replace_where)
    elif dynamic:
        params["dynamicPartitionOverwrite"] = "true"
    elif overwrite and snapshot is not None:
        txn.read_whole_table()
        removes = remove_actions(snapshot.files)

    max_records = request.opt("maxRecordsPerFile")
    data_change = _truthy(request.opt("dataChange", "true"))
    adds = write_files(
        guarded,
        path,
        schema,
        partitions,
        metadata.configuration,
        int(max_records) if max_records else None,
        data_change,
        optimize_write_enabled(spark, metadata.configuration, request.opt("optimizeWrite")),
    )
    if dynamic:
        assert snapshot is not None
        removes = _dynamic_removes(txn, snapshot, adds, partitions)
    if replaced is not None:
        assert snapshot is not None
        replaced_changes(spark, txn, snapshot, replaced, adds)
    if not data_change:
        for r in removes:
            r["dataChange"] = False
    record_high_water_marks(txn, metadata, generated, adds)
    txn.remove_files(removes)
    txn.add_files(extra_adds + adds)
    metrics = _write_metrics(operation, adds, removes)
    meta = user_metadata(spark, request.opt("userMetadata"))
    return commit_and_compact(spark, txn, operation, params, metrics, meta)


def _save_mode(request: WriteRequest) -> str:
    """The request's save mode, after refusing what the request asks that is not built."""
    mode = (request.mode or "errorifexists").lower()
    if mode not in _MODES:
        raise DeltaIllegalArgumentException(f"unknown save mode {request.mode!r}")
    return "errorifexists" if mode in ("error", "default") else mode


def _open(path: str, mode: str) -> tuple[Transaction, Snapshot | None] | None:
    """The write's transaction and the snapshot it reads (None: the table is there and the
    mode says to leave it alone)."""
    delta_log = DeltaLog.for_table(path)
    try:
        snapshot: Snapshot | None = delta_log.snapshot()
    except DeltaTableNotFoundError:
        snapshot = None
    if snapshot is not None and mode == "errorifexists":
        raise DeltaAnalysisException(
            f"cannot write to {path}: a Delta table already exists there (mode errorifexists)"
        )
    if snapshot is not None and mode == "ignore":
        return None
    return Transaction(delta_log, snapshot), snapshot


def _claim_app_transaction(txn: Transaction, request: WriteRequest, path: str) -> bool:
    """Record ``txnAppId``/``txnVersion``; False when that version is already committed (the
    write is a replay and is skipped)."""
    app_id, app_version = request.opt("txnAppId"), request.opt("txnVersion")
    if app_id is None or app_version is None:
        if app_id is not None or app_version is not None:
            raise DeltaIllegalArgumentException("txnAppId and txnVersion must be given together")
        return True
    last = txn.app_transaction_version(app_id)
    version = int(app_version)
    if last is not None and version <= last:
        log.warning(
            "skipping write to %s: txnAppId %s already committed version %s (asked %s)",
            path,
            app_id,
            last,
            app_version,
        )
        return False
    txn.set_app_transaction(app_id, version)
    return True


def _apply_metadata(
    spark: SparkSession,
    txn: Transaction,
    snapshot: Snapshot | None,
    metadata: Metadata,
    protocol_requests: dict[str, str],
) -> tuple[Metadata, StructType]:
    """Stage ``metadata`` (and the protocol it and ``protocol_requests`` need) when it
    differs from the snapshot's; returns it as staged (column mapping ids assigned) and its
    schema."""
    if snapshot is not None and metadata == snapshot.metadata:
        return metadata, StructType.from_json(json.loads(metadata.schema_string))
    txn.update_metadata(metadata)
    metadata = txn.metadata  # with column mapping ids and physical names
    schema = StructType.from_json(json.loads(metadata.schema_string))
    if snapshot is None or schema != snapshot.schema:
        generated_columns.validate(spark, schema)
    protocol = protocol_for(
        schema,
        {**metadata.configuration, **protocol_requests},
        snapshot.protocol if snapshot else None,
    )
    if snapshot is None or protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    return metadata, schema


def _write_metrics(
    operation: str, adds: list[AddFile], removes: list[RemoveFile]
) -> dict[str, Any]:
    """A write's operationMetrics, with delta-spark's names for the operation."""
    metrics = {
        "numFiles": len(adds),
        "numOutputRows": sum(json.loads(a["stats"])["numRecords"] for a in adds if a.get("stats")),
        "numOutputBytes": sum(a["size"] for a in adds),
    }
    if removes:
        metrics["numRemovedFiles"] = len(removes)
    if operation == "STREAMING UPDATE":  # a micro-batch's are named as delta-spark names them
        metrics["numAddedFiles"] = metrics.pop("numFiles")
        metrics["numRemovedFiles"] = len(removes)
    return metrics


def _parameters(
    request: WriteRequest, mode: str, operation: str, partitions: list[str], metadata: Metadata
) -> dict[str, Any]:
    """The commit's operation parameters, as delta-spark records them for the operation."""
    if request.parameters is not None:
        return dict(request.parameters)
    if operation != "WRITE":  # CREATE TABLE [AS SELECT]
        return {
            "partitionBy": json.dumps(partitions),
            "description": metadata.description,
            "properties": json.dumps(request.table_properties),
        }
    # delta-spark records the writer's partitionBy ("[]" for an append to a partitioned table
    # that names none), not the table's
    return {
        "mode": mode.capitalize() if mode != "errorifexists" else "ErrorIfExists",
        "partitionBy": json.dumps(list(request.partition_by or [])),
    }


def _dynamic(spark: SparkSession, request: WriteRequest) -> bool:
    mode = request.opt("partitionOverwriteMode") or str(
        spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    )
    if mode.lower() not in ("static", "dynamic"):
        raise DeltaIllegalArgumentException(
            f"partitionOverwriteMode must be static or dynamic, got {mode!r}"
        )
    return mode.lower() == "dynamic"


def _target_metadata(
    spark: SparkSession,
    snapshot: Snapshot | None,
    data_schema: StructType,
    request: WriteRequest,
    merge_schema: bool,
    overwrite_schema: bool,
) -> tuple[Metadata, dict[str, str]]:
    """The metadata the write commits, and the protocol requests among the properties it
    sets (``delta.feature.*``, ``delta.min*Version``: never stored in the configuration)."""
    partition_by = list(request.partition_by or [])
    if snapshot is None or overwrite_schema:
        declared = request.opt(DECLARED_SCHEMA_OPTION)
        schema = _nullable(data_schema) if declared is None else _spark_json_schema(declared)
        replacing = snapshot is not None and _truthy(request.opt(REPLACE_OPTION, "false"))
        if snapshot is None or replacing:  # the properties are the statement's and defaults
            requested = validate_properties(
                _session_defaults(spark) | request.table_properties, creating=True
            )
            conf: dict[str, str] = {}
        else:  # an overwrite keeps the table's properties and adds the write's
            requested = validate_properties(request.table_properties, creating=True)
            conf = dict(snapshot.configuration)
        conf |= {k: v for k, v in requested.items() if not is_protocol_key(k)}
        protocol_requests = {k: v for k, v in requested.items() if is_protocol_key(k)}
        metadata = table_metadata(
            snapshot.metadata if snapshot else None,
            schema,
            partition_by,
            conf,
            description=request.opt(DESCRIPTION_OPTION),
            keep_description=snapshot is not None and not replacing,
        )
        return metadata, protocol_requests
    if partition_by and [c.lower() for c in partition_by] != [
        c.lower() for c in snapshot.partition_columns
    ]:
        raise DeltaAnalysisException(
            f"partition columns {partition_by} do not match the table's "
            f"{snapshot.partition_columns}; use .option('overwriteSchema', 'true') with "
            "mode('overwrite') to change partitioning"
        )
    if merge_schema:
        widening = type_widening(snapshot.configuration)
        merged = merge_schemas(snapshot.schema, data_schema, allow_type_widening=widening)
        check_type_changes(snapshot.schema, merged)
        if merged != snapshot.schema:
            return snapshot.metadata.with_changes(schema_string=schema_to_string(merged)), {}
        return snapshot.metadata, {}
    check_write_compatible(snapshot.schema, data_schema)
    return snapshot.metadata, {}


def _guard_replace_where(df: DataFrame, predicate: str) -> DataFrame:
    """Fail the write job if a written row falls outside ``replaceWhere``."""
    from pyspark.sql import functions as F

    msg = f"[DELTA_VIOLATION] Written data does not conform to replaceWhere predicate '{predicate}'"
    ok = F.coalesce(F.expr(predicate), F.lit(False))
    return df.where(F.when(~ok, F.raise_error(F.lit(msg))).otherwise(F.lit(True)))


def _replace_where_removes(
    spark: SparkSession, txn: Transaction, snapshot: Snapshot, predicate: str
) -> tuple[list[RemoveFile], list[AddFile], DataFrame | None]:
    """Files (or rows) the overwrite replaces: whole files when the predicate only names
    partition columns, otherwise copies of the touched files without matching rows; and
    then (on a table recording change data) the rows replaced."""
    from pyspark.sql import functions as F

    from delta_pyspark.core.skipping.file_pruning import prune_files
    from delta_pyspark.spark.conf import session_time_zone

    expr = parse_predicate(predicate)
    txn.read_predicate(expr, session_time_zone(spark))
    _, data_part = split_partition_predicate(expr, snapshot.partition_columns)
    if data_part is None:
        mask = partition_filter_mask(
            expr,
            snapshot.files,
            _arrow(snapshot),
            snapshot.partition_columns,
            time_zone=session_time_zone(spark),
        )
        files = snapshot.files.filter(mask)
        txn.read_files(files)
        return remove_actions(files), [], None
    files = prune_files(snapshot, expr, session_time_zone(spark))
    txn.read_files(files)
    rewrite, _ = rewrite_without(spark, snapshot, files, F.expr(predicate))
    replaced = None
    if rewrite.removes and records_changes(txn):
        replaced = read_files(spark, snapshot, files).where(F.expr(predicate))
    return rewrite.removes, rewrite.adds, replaced


def _arrow(snapshot: Snapshot) -> pa.Schema:
    return to_arrow_schema(snapshot.schema)


def _dynamic_removes(
    txn: Transaction, snapshot: Snapshot, adds: list[AddFile], partitions: list[str]
) -> list[RemoveFile]:
    """Dynamic partition overwrite: replace exactly the partitions the new data touches."""
    if not partitions:
        raise DeltaAnalysisException("dynamic partition overwrite needs a partitioned table")
    written = {tuple((a["partitionValues"] or {}).get(p) for p in partitions) for a in adds}
    from delta_pyspark.core.expressions.nodes import And, Column, Comparison, IsNull, Literal

    files = snapshot.files
    keys = [
        tuple(dict(pv or []).get(p) for p in partitions)
        for pv in files.column("partitionValues").to_pylist()
    ]
    mask = pa.array([k in written for k in keys])
    for values in written:
        conj: Expr | None = None
        for p, v in zip(partitions, values, strict=True):
            term = IsNull(Column((p,))) if v is None else Comparison("=", Column((p,)), Literal(v))
            conj = term if conj is None else And(conj, term)
        if conj is not None:
            txn.read_predicate(conj)
    chosen = files.filter(mask)
    txn.read_files(chosen)
    return remove_actions(chosen)
