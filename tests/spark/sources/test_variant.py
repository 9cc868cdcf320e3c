"""VARIANT columns (the ``variantType`` feature): written through every write path Spark
offers, read back, declared in the protocol, and given a nullCount but no min/max."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog

pytestmark = pytest.mark.spark


def test_variant_round_trip(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "v")
    rows = spark.sql(
        "SELECT id, CASE WHEN id = 1 THEN NULL ELSE parse_json('{\"a\": ' || id || '}') END "
        "AS v FROM range(3)"
    )
    rows.write.format("delta").save(path)
    spark.sql(f"INSERT INTO delta.`{path}` SELECT 3, parse_json('[1, 2]')")
    snapshot = DeltaLog(path).snapshot()
    assert "variantType" in (snapshot.protocol.reader_features or ())
    assert "variantType" in (snapshot.protocol.writer_features or ())
    stats = [json.loads(s) for s in snapshot.files.column("stats").to_pylist()]
    counts = [s["nullCount"]["v"] for s in stats]
    assert all(isinstance(c, int) for c in counts)  # one number, not the struct's parts
    assert sum(counts) == 1
    assert all("v" not in s.get("minValues", {}) for s in stats)
    got = spark.sql(
        f"SELECT id, variant_get(v, '$.a', 'int') AS a, to_json(v) AS j FROM delta.`{path}`"
    )
    assert sorted(tuple(r) for r in got.collect()) == [
        (0, 0, '{"a":0}'),
        (1, None, None),
        (2, 2, '{"a":2}'),
        (3, None, "[1,2]"),
    ]
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 4
