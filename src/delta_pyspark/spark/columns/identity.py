"""Identity column values generated in Spark (PROTOCOL.md "Identity Columns"; the rules and
the high-water mark are ``core/protocol/identity_columns.py``).

A write that gives no values for an identity column gets them from
``IdentityValues.java`` (delta-spark's per-partition generator): unique within the write, in
the step's direction, past the table's high-water mark, consecutive within one task. The
write then records the new mark in its commit's metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.protocol.actions import Metadata
from delta_pyspark.core.protocol.identity_columns import (
    IdentityInfo,
    check_definitions,
    check_explicit_insert,
    check_update,
    identity_columns,
    identity_info,
    with_written_high_water_marks,
)
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.spark.jvm import helpers

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def identity_values(spark: SparkSession, info: IdentityInfo) -> Column:
    """The generated values of one identity column (``IdentityValues.java``)."""
    return helpers.identity_values(spark, info.next_value, info.step)


def with_identity_values(
    df: DataFrame,
    schema: StructType,
    partition_columns: Sequence[str],
    omitted: set[str],
    creating: bool = False,
) -> tuple[DataFrame, list[str]]:
    """``df`` with values for the identity columns it does not give, after delta-spark's
    checks (definitions; no values for a GENERATED ALWAYS column); and those columns' names.
    ``omitted``: the columns (lower case) an INSERT's column list left out, which count as
    not given; ``creating``: the write only creates the table (``df`` is the declared
    columns, without rows)."""
    check_definitions(schema, partition_columns)
    columns = identity_columns(schema)
    if not columns or creating:
        return df, []
    given = [c for c in df.columns if c.lower() not in omitted]
    check_explicit_insert(schema, given)
    names = {c.lower() for c in given}
    generated = [f.name for f in columns if f.name.lower() not in names]
    for f in columns:
        if f.name in generated:
            df = df.withColumn(f.name, identity_values(df.sparkSession, identity_info(f)))
    return df, generated


def value_range(spark: SparkSession, snapshot: Snapshot, name: str) -> tuple[Any, Any]:
    """(min, max) of top-level column ``name`` over the rows of ``snapshot`` (SYNC IDENTITY's
    query: the table's values, deletion vectors applied, not its files' stats)."""
    from pyspark.sql import functions as F

    from delta_pyspark.spark.files.scan import read_files

    rows = read_files(spark, snapshot, snapshot.files).select(f"`{name}`")
    extremes = rows.agg(F.min(f"`{name}`"), F.max(f"`{name}`")).first()
    assert extremes is not None  # an aggregation without groups has one row
    return extremes[0], extremes[1]


def record_high_water_marks(
    txn: Transaction,
    metadata: Metadata,
    generated: Iterable[str],
    adds: Sequence[Mapping[str, Any]],
) -> None:
    """Stage ``metadata`` with the marks the write's values moved (same commit as ``adds``)."""
    generated = list(generated)
    if not generated or not adds:
        return
    moved = with_written_high_water_marks(metadata, generated, txn.log.table_root, adds)
    if moved is not None:
        txn.update_metadata(moved)


def merge_generated_columns(
    schema: StructType, clauses: Sequence[Any], source_columns: Sequence[str]
) -> list[str]:
    """MERGE's identity rules (delta-spark's): no update clause assigns an identity column,
    no insert clause gives a GENERATED ALWAYS one a value (``*All`` assigns the source's
    columns of the table's names); returns the columns some insert clause leaves to be
    generated."""
    if not identity_columns(schema):
        return []
    generated = set()
    for clause in clauses:
        if clause.action == "delete":
            continue
        if clause.star:
            assigned = list(source_columns)
        else:
            assigned = [k.strip("`").partition(".")[0] for k in clause.assignments or {}]
        if clause.action == "update":
            check_update(schema, assigned)
            continue
        check_explicit_insert(schema, assigned)
        given = {c.lower() for c in assigned}
        generated |= {f.name for f in identity_columns(schema) if f.name.lower() not in given}
    return sorted(generated)
