"""The merge source: materialising it, its rows' summary (row count, key range,
uniqueness), whether to broadcast it, its rows by id, and freeing its checkpoint."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from delta_pyspark.spark.commands.merge.common import _SOURCE_MARK
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.jvm.bridge import observed_values
from delta_pyspark.spark.jvm.helpers import ids_among

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame


# Source keys up to this many distinct values are recorded as an IN list, else as a range.
_MAX_KEY_SET = 1000


@dataclass
class _SourceSummary:
    """What the source's rows say: their count and, per join key (in ``_join_keys``
    order), min, max and (small sources only) the set of values."""

    rows: int
    # no two source rows share non-null join keys, so a target row matches once; None: not
    # checked (the phase 1 of a merge collecting matched positions finds repeats itself)
    unique: bool | None
    mins: list[Any]
    maxs: list[Any]
    sets: list[tuple[Any, ...]] | None


class _Source(_MergeState):
    """Materialising and summarising the source."""

    def _materialise_source(
        self, marked: DataFrame, keys: list[tuple[str, SparkColumn]]
    ) -> tuple[DataFrame, _SourceSummary]:
        """``marked`` checkpointed (its rows computed once, kept as rows), with its row
        count and the join keys' min/max observed in the same pass: a separate aggregation
        was one more Spark job per merge (50-100 ms measured on 200k rows). The summary's
        ``unique`` is None and ``sets`` None until ``_summarise_source``."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        started = time.monotonic()
        observed = Observation()
        aggs = [F.count(F.lit(1)).alias("rows")]
        for i, (_, column) in enumerate(keys):
            aggs += [F.min(column).alias(f"min_{i}"), F.max(column).alias(f"max_{i}")]
        src = marked.observe(observed, *aggs).localCheckpoint(eager=True)
        self._materialize_source_ms = int((time.monotonic() - started) * 1000)  # a metric
        names = ["rows"] + [f"{side}_{i}" for i in range(len(keys)) for side in ("min", "max")]
        row = observed_values(observed, names)
        summary = _SourceSummary(
            int(row["rows"] or 0),
            None,
            [row[f"min_{i}"] for i in range(len(keys))],
            [row[f"max_{i}"] for i in range(len(keys))],
            None,
        )
        return src, summary

    def _summarise_source(
        self,
        src: DataFrame,
        keys: list[tuple[str, SparkColumn]],
        summary: _SourceSummary,
        prune: bool,
        check_unique: bool,
    ) -> None:
        """Complete ``summary`` of the (checkpointed) source: with ``check_unique``, whether
        the key tuples are unique (a Spark job grouping the source by its keys: 0.2 s for
        200k rows); with ``prune``, the keys of a source of at most ``_MAX_KEY_SET`` rows
        (a small job over the checkpoint)."""
        from pyspark.sql import functions as F

        if not keys:
            summary.unique = False
            return
        if check_unique:
            names = [f"k{i}" for i in range(len(keys))]
            per_key = src.groupBy(*[c.alias(n) for (_, c), n in zip(keys, names, strict=True)])
            present = _and_columns([F.col(n).isNotNull() for n in names])
            counts = per_key.agg(F.count(F.lit(1)).alias("c"))
            top = counts.agg(F.max(F.when(present, F.col("c")))).first()
            assert top is not None  # an aggregation without groups has one row
            dup = top[0]
            # Null keys never match (``=``): their duplicates cannot make a row match twice.
            summary.unique = (dup or 0) <= 1
        if prune and 0 < summary.rows <= _MAX_KEY_SET:  # a few rows: their keys
            collected = src.select(*[col for _, col in keys]).collect()
            summary.sets = [
                tuple(sorted({r[i] for r in collected if r[i] is not None}))
                for i in range(len(keys))
            ]


def _rows_by_mark(src: DataFrame, marks: np.ndarray, present: bool) -> DataFrame:
    """The rows of ``src`` whose ids (``_SOURCE_MARK``) are among the sorted ``marks``
    (``present``) or not: the JVM helper's binary search, no join and no broadcast built
    on the driver."""
    return src.filter(ids_among(src, _SOURCE_MARK, marks, present))


def _and_columns(columns: list[SparkColumn]) -> SparkColumn:
    """``columns[0] AND columns[1] AND ...`` (at least one column)."""
    result = columns[0]
    for c in columns[1:]:
        result = result & c
    return result
