"""Until the change data feed is written, a DML commit that rewrites rows of a table with
``delta.enableChangeDataFeed = true`` is refused: without ``cdc`` actions, readers of the
feed would take every row of the rewritten files as deleted and re-inserted."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_transaction_log import SCHEMA, add, append, remove

from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.core.transaction import Transaction, create_table
from delta_pyspark.exceptions import DeltaUnsupportedOperationException


def _table(root: Path, cdf: bool) -> DeltaLog:
    log = DeltaLog(str(root))
    conf = {"delta.enableChangeDataFeed": "true"} if cdf else {}
    create_table(log, SCHEMA, ["part"], conf)
    append(log, add("f1"), add("f2", part="b"))
    return log


def _rewrite(log: DeltaLog, operation: str, cdc: bool = False) -> None:
    txn = Transaction(log, log.snapshot())
    txn.remove_files([remove(add("f1"))])
    txn.add_files([add("f1-rewritten")])
    if cdc:
        txn.add_cdc_files(
            [
                {
                    "path": "_change_data/c.parquet",
                    "partitionValues": {"part": "a"},
                    "size": 9,
                    "dataChange": False,
                }
            ]
        )
    txn.commit(operation, {})


@pytest.mark.parametrize("operation", ["UPDATE", "DELETE", "MERGE"])
def test_dml_rewrite_without_change_data_is_refused(tmp_path: Path, operation: str) -> None:
    log = _table(tmp_path, cdf=True)
    with pytest.raises(DeltaUnsupportedOperationException, match="write change data"):
        _rewrite(log, operation)
    assert log.snapshot().version == 1  # nothing committed
    assert sorted(log.snapshot().files.column("path").to_pylist()) == [
        "part=a/f1.parquet",
        "part=b/f2.parquet",
    ]


def test_what_needs_no_change_data_still_commits(tmp_path: Path) -> None:
    log = _table(tmp_path / "cdf", cdf=True)
    append(log, add("f3"))  # appends: the feed reads added files as inserts
    txn = Transaction(log, log.snapshot())
    txn.remove_files([remove(add("f2", part="b"))])  # a whole-file delete
    txn.commit("DELETE", {})
    _rewrite(log, "WRITE")  # an overwrite
    _rewrite(log, "UPDATE", cdc=True)  # a rewrite that carries its change data
    assert log.snapshot().version == 5
    _rewrite(_table(tmp_path / "plain", cdf=False), "UPDATE")  # no feed, no change data
