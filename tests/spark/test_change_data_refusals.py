"""The change data feed is not built yet: reading it is refused, not answered with the
table's rows, and DML that would have to write change data leaves the table unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaUnsupportedOperationException
from delta_pyspark.tables import DeltaTable


def test_read_change_feed_is_refused(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    for option in ("readChangeFeed", "readChangeData"):
        reader = spark.read.format("delta").option(option, "true").option("startingVersion", 0)
        with pytest.raises(DeltaUnsupportedOperationException, match=option):
            reader.load(path).collect()


def test_update_on_a_change_data_table_is_refused_and_changes_nothing(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "cdf")
    spark.range(3).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(DeltaUnsupportedOperationException, match="write change data"):
        table.update("id = 1", {"id": "10"})
    with pytest.raises(DeltaUnsupportedOperationException, match="write change data"):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    assert DeltaLog(path).snapshot().version == 0
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [0, 1, 2]
    spark.range(5, 6).write.format("delta").mode("append").save(path)  # appends need none
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')"
    )
    table.update("id = 1", {"id": "10"})
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [0, 2, 5, 10]
