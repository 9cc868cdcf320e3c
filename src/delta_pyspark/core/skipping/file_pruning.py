"""Which files of a snapshot a scan, a DML statement or OPTIMIZE must read for a
predicate: partition values and per-file statistics (``data_skipping``), plus the
partition filters generated partition columns derive from filters on their sources
(``generated_columns``). The predicate names logical columns; with column mapping it is
renamed to the physical names the log's partition values and statistics use."""

from __future__ import annotations

import pyarrow as pa

from delta_pyspark.core.expressions.nodes import And, Expr, rename_columns
from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
    logical_to_physical_names,
    physical_name,
    to_physical_schema,
)
from delta_pyspark.core.protocol.generated_columns import partition_filter
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.skipping.data_skipping import may_match
from delta_pyspark.core.snapshot.snapshot import Snapshot


def prune_files(snapshot: Snapshot, predicate: Expr | None, time_zone: str = "UTC") -> pa.Table:
    """The snapshot's files that may hold a row matching ``predicate`` (all if None).

    ``time_zone``: the Spark session's, which timestamp literals without one are in.
    A filter on a column that generated partition columns are computed from also prunes by
    those partitions (``core/generated_columns.partition_filter``).
    """
    files = snapshot.files
    if predicate is None or files.num_rows == 0:
        return files
    derived = partition_filter(
        predicate, snapshot.schema, snapshot.partition_columns, snapshot.protocol, time_zone
    )
    if derived is not None:  # generated partition columns follow their sources' filters
        predicate = And(predicate, derived)
    mode = column_mapping_mode(snapshot.configuration)
    physical = to_physical_schema(snapshot.schema, mode)
    parts = [physical_name(snapshot.schema.field(c), mode) for c in snapshot.partition_columns]
    mask = may_match(
        _to_physical_expr(predicate, snapshot, mode),
        files,
        to_arrow_schema(physical),
        parts,
        time_zone=time_zone,
        parsed=snapshot.stats_cache,
    )
    return files.filter(mask)


def _to_physical_expr(expr: Expr, snapshot: Snapshot, mode: str) -> Expr:
    if mode == "none":
        return expr
    mapping = logical_to_physical_names(snapshot.schema, mode)
    return rename_columns(expr, mapping)
