"""delta-spark reads our UniForm tables: the Iceberg metadata beside the log changes nothing
for Delta readers. A table we create with ``enabledFormats = iceberg`` goes through writes,
DML and OPTIMIZE; after each step delta-spark reads the rows we read, and at the end the
Iceberg side (pyiceberg) holds the same rows.

delta-spark writing to such a table is not compared: its 4.0.x releases do not build their
delta-iceberg module (its build.sbt leaves it out until Iceberg supports Spark 4.0), so it
has no converter to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyiceberg.table import StaticTable
from runner import ReferenceRunner, run_ours, value
from scripts import COLUMNS, SCHEMA, write


def test_delta_spark_reads_every_version_of_our_uniform_table(
    spark: Any, reference: ReferenceRunner, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    properties = {
        "delta.enableIcebergCompatV2": "true",
        "delta.universalFormat.enabledFormats": "iceberg",
    }
    steps = [
        {"op": "create", "path": path, "columns": COLUMNS, "partitionedBy": ["p"],
         "clusterBy": [], "properties": properties},
        write(path, [[1, 10, "x"], [2, 20, "y"], [3, 30, "x"]]),
        write(path, [[4, 40, "y"]]),
        {"op": "delete", "path": path, "condition": "id = 2"},
        {"op": "merge", "path": path,
         "source": {"schema": SCHEMA, "rows": [[1, 11, "x"], [6, 60, "z"]]},
         "condition": "t.id = s.id",
         "clauses": [{"when": "matched", "action": "updateAll"},
                     {"when": "notMatched", "action": "insertAll"}]},
        {"op": "optimize", "path": path},
    ]  # fmt: skip
    read = {"op": "read", "path": path, "select": []}
    for step in steps:
        ours = run_ours(spark, [step, read])
        assert "ok" in ours[0], ours[0]
        theirs = reference.run([read])
        assert value(theirs[0]) == value(ours[1]), step["op"]
    final = value(run_ours(spark, [read])[0])
    iceberg = StaticTable.from_metadata(path).scan().to_arrow().to_pylist()
    assert sorted([r["id"], r["a"], r["p"]] for r in iceberg) == sorted(final)
    assert sorted(r[0] for r in final) == [1, 3, 4, 6]
