"""Liquid clustering (PROTOCOL.md "Clustered Table"): the clustering columns of a table.

A table is clustered when its protocol supports the ``clustering`` writer feature (which
needs ``domainMetadata``, writer version 7). Its clustering columns live in the
``delta.clustering`` domain as physical name parts, ``{"clusteringColumns": [["a"], ["s",
"b"]]}``; an empty list (``CLUSTER BY NONE``) keeps the table clustered with no columns.
OPTIMIZE marks the files it clusters with ``clusteringProvider: "liquid"`` and, as
delta-spark does, the ``ZCUBE_ID``/``ZCUBE_ZORDER_BY`` tags naming the run and the columns
(logical names), so a later OPTIMIZE knows which files are clustered and by what.

The checks and error classes are delta-spark's (``ClusteredTableUtils``): at most four
columns, not with partition columns, every column a leaf with min/max statistics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.protocol.actions import DomainMetadata, Metadata, Protocol
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.protocol.schema import StructType, parse_schema_string, type_name
from delta_pyspark.core.protocol.schema_arrow import to_arrow_type
from delta_pyspark.core.protocol.table_features import supports, with_features
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.stats.indexed_columns import indexed_paths, resolve_leaf
from delta_pyspark.core.stats.layout import has_min_max, split_column_name
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import DeltaAnalysisException

DOMAIN = "delta.clustering"
LEGACY_DOMAIN = "delta.liquid"  # delta-spark 3.0's preview ("liquid" writer feature)
FEATURE = "clustering"
FEATURES = frozenset({FEATURE, "domainMetadata"})
FEATURE_PROPERTY = f"delta.feature.{FEATURE}"
PROVIDER = "liquid"
MAX_COLUMNS = 4  # delta-spark's clusteredTable.numClusteringColumnsLimit default
# Spark's CatalogTable.PROP_CLUSTERING_COLUMNS: how CLUSTER BY of a table by name reaches the
# source (a table property, JSON name parts); like delta-spark, never stored in the log.
CATALOG_PROPERTY = "clusteringColumns"
ZCUBE_ID_TAG = "ZCUBE_ID"
ZCUBE_COLUMNS_TAG = "ZCUBE_ZORDER_BY"


@dataclass(frozen=True)
class ClusteringColumn:
    """One clustering column: its logical path (as the schema spells it) and physical path."""

    logical: tuple[str, ...]
    physical: tuple[str, ...]

    @property
    def name(self) -> str:
        """The logical name as delta-spark prints it (parts joined with dots)."""
        return ".".join(self.logical)


def resolve_columns(
    names: Sequence[str],
    schema: StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
) -> list[ClusteringColumn]:
    """Check ``names`` as clustering columns of a table with this schema, partitioning and
    properties (delta-spark's checks, in its order); their logical and physical paths."""
    if partition_columns:
        raise DeltaAnalysisException(
            "[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] Clustering and partitioning cannot both "
            "be specified. Please remove partitionedBy if you want to create a Delta table "
            "with clustering."
        )
    if len(names) > MAX_COLUMNS:
        raise DeltaAnalysisException(
            f"[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] CLUSTER BY supports up to {MAX_COLUMNS} "
            f"clustering columns, but the table has {len(names)} clustering columns. Please "
            "remove the extra clustering columns."
        )
    mode = column_mapping_mode(configuration)
    columns: list[ClusteringColumn] = []
    unsupported: list[str] = []
    for name in names:
        found = resolve_leaf(schema, split_column_name(name), mode)
        if found is None:
            raise DeltaAnalysisException(
                f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column {name} in:\n"
                f"{schema.field_names}"
            )
        logical, physical, dtype = found
        column = ClusteringColumn(logical, physical)
        if column in columns:
            raise DeltaAnalysisException(
                f"[DELTA_DUPLICATE_COLUMNS_FOUND] Found duplicate column(s) in CLUSTER BY: {name}"
            )
        if type_name(dtype) == "variant" or not has_min_max(to_arrow_type(dtype)):
            unsupported.append(f"{column.name} : {type_name(dtype).upper()}")
        columns.append(column)
    if unsupported:
        raise DeltaAnalysisException(
            "[DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED] CLUSTER BY is not supported "
            f"because the following column(s): {', '.join(unsupported)} don't support data "
            "skipping."
        )
    indexed = indexed_paths(schema, partition_columns, configuration)
    missing = [c.name for c in columns if tuple(p.lower() for p in c.physical) not in indexed]
    if missing:
        raise DeltaAnalysisException(
            "[DELTA_CLUSTERING_COLUMN_MISSING_STATS] Clustering requires clustering columns to "
            f"have stats. Couldn't find clustering column(s) '{', '.join(missing)}' in stats "
            f"schema:\n{sorted('.'.join(p) for p in indexed)} (see "
            "delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns)"
        )
    return columns


def requested_names(option: str | None, properties: str | None) -> list[str] | None:
    """The clustering columns a write asks for: Spark's ``clusterBy`` option (a JSON list of
    names) or the catalog property (a JSON list of name parts); None when neither is set."""
    if option:
        return [str(n) for n in json.loads(option)]
    declared = json.loads(properties) if properties else {}
    value = declared.get(CATALOG_PROPERTY)
    if value is None:
        return None
    return [".".join(_quoted(p) for p in _parts(entry)) for entry in json.loads(value)]


def _quoted(part: str) -> str:
    if "." in part or "`" in part:
        return "`" + part.replace("`", "``") + "`"
    return part


def domain_metadata(columns: Sequence[ClusteringColumn]) -> DomainMetadata:
    """The ``delta.clustering`` domain naming ``columns`` (physical parts), as delta-spark
    writes it."""
    config = {"clusteringColumns": [list(c.physical) for c in columns], "domainName": DOMAIN}
    return DomainMetadata(DOMAIN, json.dumps(config, separators=(",", ":")))


def clustered_protocol(protocol: Protocol) -> Protocol:
    """``protocol`` with the ``clustering`` and ``domainMetadata`` writer features."""
    missing = {f for f in FEATURES if not supports(protocol, f)}
    return with_features(protocol, missing) if missing else protocol


def is_clustered(protocol: Protocol) -> bool:
    """Whether the protocol makes the table a clustered table (PROTOCOL.md)."""
    return supports(protocol, FEATURE)


def clustering_columns(
    domains: Mapping[str, DomainMetadata], metadata: Metadata
) -> list[ClusteringColumn] | None:
    """The clustering columns the domain names (None: no domain); read also from
    delta-spark 3.0's ``delta.liquid`` domain (``{"physicalName": [...]}`` entries) and
    from PROTOCOL.md's example spelling (one string per column)."""
    domain = domains.get(DOMAIN) or domains.get(LEGACY_DOMAIN)
    if domain is None or domain.removed:
        return None
    entries = json.loads(domain.configuration or "{}").get("clusteringColumns") or []
    schema = parse_schema_string(metadata.schema_string)
    mode = column_mapping_mode(metadata.configuration)
    return [_column(schema, _parts(entry), mode) for entry in entries]


def snapshot_columns(snapshot: Snapshot | None) -> list[ClusteringColumn]:
    """The snapshot's clustering columns ([] when it has none, or no table)."""
    if snapshot is None:
        return []
    return clustering_columns(snapshot.domain_metadata, snapshot.metadata) or []


def column_names(snapshot: Snapshot | None) -> list[str]:
    """The logical clustering column names (DESCRIBE DETAIL's ``clusteringColumns``)."""
    return [c.name for c in snapshot_columns(snapshot)]


def _parts(entry: Any) -> tuple[str, ...]:
    if isinstance(entry, Mapping):
        entry = entry.get("physicalName", [])
    if isinstance(entry, str):
        return (entry,)
    return tuple(str(p) for p in entry)


def _column(schema: StructType, physical: tuple[str, ...], mode: str) -> ClusteringColumn:
    """The logical path of a physical one (kept as is where the schema has no such path)."""
    logical: list[str] = []
    struct: Any = schema
    for part in physical:
        field = None
        if isinstance(struct, StructType):
            field = next((f for f in struct.fields if physical_name(f, mode) == part), None)
        if field is None:
            return ClusteringColumn(tuple(logical) + physical[len(logical) :], physical)
        logical.append(field.name)
        struct = field.type
    return ClusteringColumn(tuple(logical), physical)


def stage_clustering(
    txn: Transaction,
    snapshot: Snapshot | None,
    names: Sequence[str] | None,
    replacing: bool = False,
) -> list[str] | None:
    """Stage the clustering a new table or a table definition asks for: ``names`` (None: the
    statement says nothing) checked against the metadata ``txn`` commits, then the domain
    and the protocol. A table replaced without CLUSTER BY keeps the feature with no
    columns, as delta-spark does. Returns the logical names the commit records as
    ``clusterBy`` (None: nothing to record)."""
    if names is None:
        if is_clustered(txn.protocol) and (snapshot is None or not is_clustered(snapshot.protocol)):
            raise DeltaAnalysisException(
                "[DELTA_CREATE_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED] The clustering "
                f"table feature cannot be enabled through TBLPROPERTIES ({FEATURE_PROPERTY}): "
                "it needs clustering columns. Use CREATE OR REPLACE TABLE ... CLUSTER BY "
                "(or clusterBy) to create a clustered table."
            )
        if replacing and snapshot is not None and DOMAIN in snapshot.domain_metadata:
            txn.set_domain_metadata(domain_metadata([]))
            return []
        return None
    metadata = txn.metadata
    schema = parse_schema_string(metadata.schema_string)
    columns = resolve_columns(names, schema, metadata.partition_columns, metadata.configuration)
    txn.set_domain_metadata(domain_metadata(columns))
    protocol = clustered_protocol(txn.protocol)
    if snapshot is None or protocol != txn.protocol:
        txn.update_protocol(protocol)
    return [c.name for c in columns]


def refuse_feature_property(requested: Mapping[str, str]) -> None:
    """SET TBLPROPERTIES may not name the clustering feature (delta-spark's rule): a table
    gets it from CLUSTER BY, with its columns, never bare. ``requested``: canonical keys."""
    if FEATURE_PROPERTY in requested:
        raise DeltaAnalysisException(
            "[DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED] The clustering table "
            f"feature cannot be enabled with ALTER TABLE SET TBLPROPERTIES ({FEATURE_PROPERTY})"
            ": use ALTER TABLE ... CLUSTER BY, or CREATE OR REPLACE TABLE ... CLUSTER BY."
        )


def stage_write_clustering(
    txn: Transaction,
    snapshot: Snapshot | None,
    names: Sequence[str] | None,
    overwrite: bool,
    replacing: bool,
) -> list[str] | None:
    """The clustering of a DataFrame write (``clusterBy``): a new table, an overwrite of the
    whole table or a replaced table take the given columns (delta-spark's ``WriteIntoDelta``);
    an append or a ``replaceWhere`` overwrite must name the table's columns, if any."""
    if snapshot is not None and not overwrite:
        if names is not None:
            check_same_columns(snapshot, names)
        return None
    return stage_clustering(txn, snapshot, names, replacing)


def check_same_columns(snapshot: Snapshot, names: Sequence[str]) -> None:
    """An append (or replaceWhere) naming clustering columns must name the table's
    (``DELTA_CLUSTERING_COLUMNS_MISMATCH``): such writes cannot change them."""
    mode = column_mapping_mode(snapshot.configuration)
    given = []
    for name in names:
        found = resolve_leaf(snapshot.schema, split_column_name(name), mode)
        given.append(found[1] if found is not None else split_column_name(name))
    existing = snapshot_columns(snapshot)
    if given != [c.physical for c in existing]:
        raise DeltaAnalysisException(
            "[DELTA_CLUSTERING_COLUMNS_MISMATCH] The provided clustering columns do not match "
            f"the existing table's.\n- provided: {','.join(names)}\n- existing: "
            f"{','.join(c.name for c in existing)}"
        )


def alter_clustering(log: DeltaLog, names: Sequence[str]) -> Snapshot | None:
    """``ALTER TABLE t CLUSTER BY (names)`` / ``CLUSTER BY NONE`` (``names`` empty): one
    ``CLUSTER BY`` commit of the new domain (and the features, for a table not yet
    clustered). Files already clustered stay as they are (OPTIMIZE FULL reclusters them).
    CLUSTER BY NONE on a table that is not clustered commits nothing (None)."""
    snapshot = log.snapshot()
    if len(names) > MAX_COLUMNS:
        resolve_columns(names, snapshot.schema, (), snapshot.configuration)  # raises
    if not names and not is_clustered(snapshot.protocol):
        return None
    if snapshot.partition_columns:
        raise DeltaAnalysisException(
            "[DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED] ALTER TABLE "
            "CLUSTER BY cannot be applied to a partitioned table."
        )
    columns = resolve_columns(names, snapshot.schema, (), snapshot.configuration)
    old = column_names(snapshot)
    txn = Transaction(log, snapshot)
    txn.set_domain_metadata(domain_metadata(columns))
    protocol = clustered_protocol(snapshot.protocol)
    if protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    return txn.commit(
        "CLUSTER BY",
        {
            "oldClusteringColumns": ",".join(old),
            "newClusteringColumns": ",".join(c.name for c in columns),
        },
    )


def file_tags(columns: Sequence[ClusteringColumn], run_id: str) -> dict[str, str]:
    """The tags OPTIMIZE gives the files it clusters (delta-spark's ``ZCubeInfo``)."""
    return {
        ZCUBE_ID_TAG: run_id,
        ZCUBE_COLUMNS_TAG: json.dumps([c.name for c in columns], separators=(",", ":")),
    }


def files_to_cluster(files: pa.Table, full: bool) -> pa.BooleanArray:
    """Which files an OPTIMIZE of a clustered table rewrites: every file for FULL; else the
    unclustered ones (no ``clusteringProvider``). Files clustered by another provider, or by
    liquid under other clustering columns, are left alone unless FULL, as delta-spark's
    ``ClusteringStrategy`` does; files clustered by these columns are not rewritten again."""
    n = files.num_rows
    if full or n == 0:
        return pa.array([True] * n, pa.bool_())
    if "clusteringProvider" not in files.column_names:
        return pa.array([True] * n, pa.bool_())
    return pc.is_null(files.column("clusteringProvider").combine_chunks())
