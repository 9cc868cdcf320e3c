"""``DESCRIBE [EXTENDED] delta.`path``` and ``SHOW COLUMNS IN delta.`path```: the rows Spark
gives for a catalog table, for a table that is only a path; names stay Spark's. Spark's own
parser reads these statements (its syntax errors, Delta's command in the parsed plan)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import ParseException

from delta_pyspark.exceptions import DeltaError

pytestmark = pytest.mark.spark


def test_describe_and_show_columns_of_a_path(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT COMMENT 'key', v STRING, p INT) USING delta "
        "PARTITIONED BY (p) TBLPROPERTIES ('team' = 'data')"
    )
    rows = [tuple(r) for r in spark.sql(f"DESCRIBE TABLE delta.`{path}`").collect()]
    assert rows == [
        ("id", "bigint", "key"),
        ("v", "string", ""),
        ("p", "int", ""),
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
        ("p", "int", ""),
    ]
    extended = {
        r.col_name: r.data_type for r in spark.sql(f"DESC EXTENDED delta.`{path}`").collect()
    }
    assert extended["Provider"] == "delta"
    assert extended["Location"] == path
    assert extended["Table Properties"] == "[team=data]"
    columns = [r.col_name for r in spark.sql(f"SHOW COLUMNS IN delta.`{path}`").collect()]
    assert columns == ["id", "v", "p"]
    # a name is Spark's own DESCRIBE
    spark.sql(f"CREATE TABLE desc_named USING delta LOCATION '{path}'")
    try:
        named = [r.col_name for r in spark.sql("DESCRIBE TABLE desc_named").collect()]
        assert named[:3] == ["id", "v", "p"]
        assert [r.col_name for r in spark.sql("SHOW COLUMNS IN desc_named").collect()] == [
            "id",
            "v",
            "p",
        ]
    finally:
        spark.sql("DROP TABLE IF EXISTS desc_named")


def test_spark_parses_them(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    plan = spark.sql(f"EXPLAIN DESCRIBE TABLE delta.`{path}`").first()[0]
    assert "DeltaDmlCommand DESCRIBE TABLE delta." in plan
    plan = spark.sql(f"EXPLAIN SHOW TBLPROPERTIES delta.`{path}`").first()[0]
    assert "DeltaDmlCommand SHOW TBLPROPERTIES delta." in plan
    for bad in (f"SHOW COLUMNS IN delta.`{path}` extra", f"DESCRIBE TABLE delta.`{path}` ,"):
        with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR") as caught:
            spark.sql(bad)
        assert not isinstance(caught.value, DeltaError)  # Spark's own, not a grammar of ours
