"""Helpers shared by the reference tests: scripts over a tiny table, and the parts of a
history or a DESCRIBE DETAIL the two implementations must agree on."""

from __future__ import annotations

from typing import Any

from operations import Op, Result

SCHEMA = "id BIGINT, a INT, p STRING"
COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "BIGINT"},
    {"name": "a", "type": "INT"},
    {"name": "p", "type": "STRING"},
]

#: operationMetrics whose values do not depend on file layout or timing: both sides must
#: report the same number (numOutputRows only where it counts the rows of a plain write)
ROW_COUNT_METRICS = frozenset(
    {
        "numDeletedRows",
        "numUpdatedRows",
        "numSourceRows",
        "numTargetRowsInserted",
        "numTargetRowsUpdated",
        "numTargetRowsDeleted",
        "numTargetRowsMatchedUpdated",
        "numTargetRowsMatchedDeleted",
        "numTargetRowsNotMatchedBySourceUpdated",
        "numTargetRowsNotMatchedBySourceDeleted",
    }
)
PLAIN_WRITES = frozenset({"WRITE", "STREAMING UPDATE", "CREATE TABLE AS SELECT"})
#: operationParameters whose values are not expressions printed by an engine
COMPARED_PARAMETERS = frozenset({"mode", "partitionBy", "clusterBy", "outputMode"})
#: DESCRIBE DETAIL columns whose values must agree on copies made by the same script
COMPARED_DETAIL = (
    "format",
    "partitionColumns",
    "clusteringColumns",
    "minReaderVersion",
    "minWriterVersion",
    "tableFeatures",
)


def write(path: str, rows: list[list[Any]], schema: str = SCHEMA, **extra: Any) -> Op:
    return {"op": "write", "path": path, "rows": rows, "schema": schema, **extra}


def history_summary(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per commit: the operation, its parameter names (and the values that are not engine
    output), its metric names and the row-count metrics."""
    summary = []
    for entry in history:
        operation = entry["operation"]
        params = entry["operationParameters"] or {}
        metrics = entry["operationMetrics"] or {}
        counted = ROW_COUNT_METRICS | ({"numOutputRows"} if operation in PLAIN_WRITES else set())
        summary.append(
            {
                "version": entry["version"],
                "operation": operation,
                "parameterKeys": sorted(params),
                "parameters": {k: v for k, v in params.items() if k in COMPARED_PARAMETERS},
                "metricKeys": sorted(metrics),
                "rowCounts": {k: v for k, v in metrics.items() if k in counted},
            }
        )
    return summary


def detail_summary(detail: dict[str, Any]) -> dict[str, Any]:
    """DESCRIBE DETAIL's column names, the values that must agree, and the table properties
    less those holding a time."""
    properties = {
        # row tracking's materialized column names are random per table: compare presence
        k: "<name>" if k.startswith("delta.rowTracking.materialized") else v
        for k, v in (detail.get("properties") or {}).items()
        if not k.endswith("Timestamp")
    }
    return {
        "columns": sorted(detail),
        **{k: detail.get(k) for k in COMPARED_DETAIL},
        "properties": properties,
    }


def errors(results: list[Result]) -> list[tuple[int, Any]]:
    """The failed operations of a script, by index."""
    return [(i, r["error"]) for i, r in enumerate(results) if "error" in r]
