"""The merge source: its materialised rows' summary (row count, key range, uniqueness),
whether to broadcast it, and freeing its checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyspark.spark.integration import java_frame, sql_conf

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession


# Source keys up to this many distinct values are recorded as an IN list, else as a range.
_MAX_KEY_SET = 1000


@dataclass
class _SourceSummary:
    """What one aggregation over the source says: its row count and, per join key (in
    ``_join_keys`` order), min, max and (small sources only) the set of values."""

    rows: int
    # no two source rows share non-null join keys, so a target row matches once; None: not
    # checked (the phase 1 of a merge collecting matched positions finds repeats itself)
    unique: bool | None
    mins: list[Any]
    maxs: list[Any]
    sets: list[tuple[Any, ...]] | None


class _Source:
    """Summarising the materialised source."""

    def _summarise_source(
        self,
        src: DataFrame,
        keys: list[tuple[str, SparkColumn]],
        prune: bool,
        check_unique: bool,
    ) -> _SourceSummary:
        """Count the (checkpointed) source rows, with the keys' min/max and (with
        ``check_unique``) whether the key tuples are unique, in one Spark job; a second
        small job collects the keys of a source of at most ``_MAX_KEY_SET`` rows. The
        uniqueness check groups the source by its keys (0.2 s for 200k rows); without it
        the job is one pass of partial aggregates."""
        from pyspark.sql import functions as F

        if not keys:
            row = src.agg(F.count(F.lit(1)).alias("rows")).first()
            return _SourceSummary(int(row["rows"]), False, [], [], None)
        names = [f"k{i}" for i in range(len(keys))]
        if check_unique:
            per_key = src.groupBy(*[c.alias(n) for (_, c), n in zip(keys, names, strict=True)])
            per_key = per_key.agg(F.count(F.lit(1)).alias("c"))
            present = _and_columns([F.col(n).isNotNull() for n in names])
            aggs = [F.sum("c").alias("rows"), F.max(F.when(present, F.col("c"))).alias("dup")]
        else:
            per_key = src.select(*[c.alias(n) for (_, c), n in zip(keys, names, strict=True)])
            aggs = [F.count(F.lit(1)).alias("rows")]
        for n in names:
            aggs += [F.min(n).alias(f"min_{n}"), F.max(n).alias(f"max_{n}")]
        row = per_key.agg(*aggs).first()
        rows = int(row["rows"] or 0)
        mins = [row[f"min_{n}"] for n in names]
        maxs = [row[f"max_{n}"] for n in names]
        sets = None
        if prune and 0 < rows <= _MAX_KEY_SET:  # a few rows: their keys, from the cache
            collected = src.select(*[col for _, col in keys]).collect()
            sets = [
                tuple(sorted({r[i] for r in collected if r[i] is not None}))
                for i in range(len(keys))
            ]
        # Null keys never match (``=``): their duplicates cannot make a row match twice.
        unique = (row["dup"] or 0) <= 1 if check_unique else None
        return _SourceSummary(rows, unique, mins, maxs, sets)


def _broadcastable(spark: SparkSession, df: DataFrame) -> bool:
    """Whether Spark's size estimate of ``df`` is within its broadcast-join threshold,
    the test Spark applies before broadcasting either side of a join."""
    threshold = int(sql_conf(spark).autoBroadcastJoinThreshold())
    size = java_frame(df).queryExecution().optimizedPlan().stats().sizeInBytes()
    return 0 <= int(size) <= threshold


def _drop_checkpoint(df: DataFrame) -> None:
    """Free the blocks of a ``localCheckpoint``ed DataFrame now rather than when the
    driver's garbage collector gets to its RDD."""
    java_frame(df).queryExecution().analyzed().rdd().unpersist(False)


def _and_columns(columns: list[SparkColumn]) -> SparkColumn:
    """``columns[0] AND columns[1] AND ...`` (at least one column)."""
    result = columns[0]
    for c in columns[1:]:
        result = result & c
    return result
