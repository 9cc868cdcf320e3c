"""ALTER TABLE ... ADD / DROP CONSTRAINT (PROTOCOL.md "CHECK Constraints"): one metadata
commit each, the constraint stored as ``delta.constraints.<name lowercased>``. Adding one first
scans the table; any row where the expression is false *or NULL* (delta-spark counts ``NOT expr
OR expr IS UNKNOWN``) refuses it. Writes enforce the constraints through
``files.write_checks``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyspark.core.protocol.actions import Metadata
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.protocol.table_properties import CONSTRAINT_PREFIX, check_constraints
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
)
from delta_pyspark.spark.files.write_checks import quoted_column, referenced_columns, show_value

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def _constraints(metadata: Metadata) -> dict[str, tuple[str, str]]:
    """Lowercased constraint name -> (stored key, expression)."""
    prefix = len(CONSTRAINT_PREFIX)
    stored = {k[prefix:]: k for k in metadata.configuration}
    return {
        name.lower(): (stored[name], text)
        for name, text in check_constraints(metadata.configuration).items()
    }


def add_constraint(spark: SparkSession, log: DeltaLog, name: str, expr: str) -> Snapshot:
    """Add CHECK constraint ``name``; refused if any existing row violates ``expr``."""
    from pyspark.sql import functions as F

    from delta_pyspark.spark.files.scan import read_files

    if not name or not name.strip() or not expr or not expr.strip():
        raise DeltaIllegalArgumentException("a CHECK constraint needs a name and an expression")
    snapshot = log.snapshot()
    existing = _constraints(snapshot.metadata)
    if name.lower() in existing:
        raise DeltaAnalysisException(
            f"constraint '{name}' already exists as a CHECK constraint "
            f"({existing[name.lower()][1]}); drop the old constraint first"
        )
    df = read_files(spark, snapshot, snapshot.files)
    condition = _analysed_condition(df, name, expr)
    refs = referenced_columns(expr, df.columns) or df.columns
    bad = df.where(~F.coalesce(condition, F.lit(False)))
    found = bad.agg(
        F.count(F.lit(1)).alias("n"),
        F.first(F.struct(*[quoted_column(c) for c in refs])).alias("row"),
    ).collect()[0]
    if found["n"]:
        values = "".join(
            f"\n - {c} : {show_value(v)}" for c, v in zip(refs, found["row"], strict=True)
        )
        raise DeltaAnalysisException(
            f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {found['n']} rows in {log.table_root} "
            "violate the new CHECK constraint "
            f"{name} ({expr}); for example the row with values:{values}"
        )
    conf = dict(snapshot.configuration) | {CONSTRAINT_PREFIX + name.lower(): expr}
    txn = Transaction(log, snapshot)
    txn.read_files(snapshot.files)  # a concurrent append could add violating rows
    txn.read_whole_table()
    txn.update_metadata(snapshot.metadata.with_changes(configuration=conf))
    protocol = protocol_for(snapshot.schema, conf, snapshot.protocol)
    if protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    return txn.commit("ADD CONSTRAINT", {"name": name, "expr": expr})


def drop_constraint(log: DeltaLog, name: str, if_exists: bool = True) -> Snapshot | None:
    """Drop CHECK constraint ``name`` (case-insensitive). A missing one is an error unless
    ``if_exists``, in which case nothing is committed. The protocol is left as it is."""
    snapshot = log.snapshot()
    found = _constraints(snapshot.metadata).get(name.lower())
    if found is None:
        if if_exists:
            return None
        raise DeltaAnalysisException(
            f"cannot drop nonexistent constraint {name} from table {log.table_root} "
            "(use ifExists=True to ignore a missing constraint)"
        )
    key, expr = found
    conf = {k: v for k, v in snapshot.configuration.items() if k != key}
    txn = Transaction(log, snapshot)
    txn.update_metadata(snapshot.metadata.with_changes(configuration=conf))
    # delta-spark records whether the constraint existed (always, here: IF EXISTS on a
    # missing one commits nothing)
    return txn.commit("DROP CONSTRAINT", {"name": name, "expr": expr, "existed": "true"})


def _analysed_condition(df: DataFrame, name: str, expr: str) -> Column:
    """The constraint as a Column, analysed against the table: unknown columns, syntax
    errors and non-boolean expressions raise DeltaAnalysisException."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    try:
        condition = F.expr(expr)
        dtype = df.select(condition.alias("c")).schema["c"].dataType
    except AnalysisException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DeltaAnalysisException(
            f"cannot add CHECK constraint {name} ({expr}): {first}"
        ) from None
    if not isinstance(dtype, BooleanType):
        raise DeltaAnalysisException(
            f"CHECK constraint {name} ({expr}) should be a boolean expression, "
            f"not {dtype.simpleString()}"
        )
    return condition
