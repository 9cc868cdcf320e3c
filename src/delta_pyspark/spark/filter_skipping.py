"""Whole-file skipping for filters a user applies to a Delta table's DataFrame.

Spark cannot see the log's per-file statistics, so a plain ``df.where(...)`` on a
Delta scan would open every file's footer. A DataFrame read from a table remembers
its snapshot and the filters applied to it so far; each new filter re-plans the scan
over only the files whose partition values and min/max/null counts can match all of
them, then applies the filters as usual (Spark still prunes row groups). The scan
stays native; re-planning costs one pass of pyarrow compute over the file list.

Only filters applied directly to the table's DataFrame take part (``where`` after
``select``, ``join``... is plain Spark). A filter Spark cannot re-apply to the new
scan (a ``Column`` bound to the old plan) falls back to an ordinary filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.expressions import and_all
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.spark.conditions import as_predicate
from delta_pyspark.spark.scan import ScanReport, read_snapshot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_SOURCE = "_delta_source"
_REPORT = "_delta_scan_report"


@dataclass(frozen=True)
class ScanSource:
    """The snapshot a DataFrame scans and the filters applied to it so far."""

    snapshot: Snapshot
    conditions: tuple[Any, ...] = ()


def scan_table(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """The snapshot as a DataFrame that later ``where``/``filter`` calls can prune."""
    df, report = read_snapshot(spark, snapshot)
    return _tag(df, ScanSource(snapshot), report)


def scan_report(df: DataFrame) -> ScanReport | None:
    """Files kept and skipped by the scan behind ``df`` (None: not a Delta table scan)."""
    return df.__dict__.get(_REPORT)


def refine(
    df: DataFrame, condition: Any, where: Callable[[DataFrame, Any], DataFrame]
) -> DataFrame | None:
    """``where(df, condition)`` over a re-planned scan; None when ``df`` is no Delta scan."""
    source: ScanSource | None = df.__dict__.get(_SOURCE)
    if source is None:
        return None
    conditions = (*source.conditions, condition)
    predicate = and_all(as_predicate(c, df, where) for c in conditions)
    rescanned, report = read_snapshot(df.sparkSession, source.snapshot, predicate)
    try:
        for c in conditions:
            rescanned = where(rescanned, c)
    except Exception:  # e.g. a Column resolved against the old plan: filter as Spark would
        return None
    return _tag(rescanned, ScanSource(source.snapshot, conditions), report)


def _tag(df: DataFrame, source: ScanSource, report: ScanReport) -> DataFrame:
    df.__dict__[_SOURCE] = source
    df.__dict__[_REPORT] = report
    return df
