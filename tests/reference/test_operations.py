"""The same sequence of SQL and DeltaTable operations, run by us and by delta-spark on two
copies of one table, gives the same rows after every step, the same change data feed, the
same history (operation, parameter names, metric names, row counts) and the same DESCRIBE
DETAIL.

The sequence covers the DML (UPDATE, DELETE, a MERGE with every kind of clause, SQL
statements), the maintenance operations (OPTIMIZE, RESTORE, VACUUM), a shallow CLONE and a
``Trigger.AvailableNow`` stream out of the table; it runs on a plain and on a partitioned
table with deletion vectors, both with the change data feed on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from operations import Op, Result
from runner import ReferenceRunner, value
from scripts import SCHEMA, detail_summary, errors, history_summary, write

SETUPS: dict[str, dict[str, Any]] = {
    "plain": {"options": {"delta.enableChangeDataFeed": "true"}},
    "partitioned-deletionVectors": {
        "options": {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"},
        "partitionBy": ["p"],
    },
}
ROWS = [[i, i * 10, "xyz"[i % 3]] for i in range(1, 10)]


def _steps(path: str, setup: str) -> list[Op]:
    """The operations after the initial write (version 0); each commits one version."""
    table = f"delta.`{path}`"
    return [
        {"op": "update", "path": path, "condition": "a >= 70", "set": {"a": "a + 1"}},
        {"op": "delete", "path": path, "condition": "p = 'x' AND id > 5"},
        {
            "op": "merge",
            "path": path,
            "source": {
                "schema": SCHEMA,
                "rows": [[1, -1, "y"], [2, 0, "z"], [20, 200, "x"], [21, 210, "y"]],
            },
            "condition": "t.id = s.id",
            "clauses": [
                {"when": "matched", "action": "delete", "condition": "s.a = 0"},
                {"when": "matched", "action": "update", "set": {"a": "s.a", "p": "s.p"}},
                {
                    "when": "notMatched",
                    "action": "insert",
                    "condition": "s.id < 21",
                    "set": {"id": "s.id", "a": "s.a", "p": "s.p"},
                },
                {
                    "when": "notMatchedBySource",
                    "action": "update",
                    "condition": "t.id = 4",
                    "set": {"a": "t.a * 2"},
                },
            ],
        },
        {"op": "sql", "sql": f"UPDATE {table} SET a = 0 WHERE id = 3"},
        {"op": "sql", "sql": f"DELETE FROM {table} WHERE a < 0"},
        write(path, [[30, 300, "z"]]),
        {"op": "optimize", "path": path},
        {"op": "restore", "path": path, "version": 3},
    ]


def _script(path: str, setup: str) -> list[Op]:
    initial = write(path, ROWS, **SETUPS[setup])
    return [initial, *_steps(path, setup)]


def _after(path: str, versions: int, root: str) -> list[Op]:
    """Reads of every version, the change feed, a shallow clone of the latest version, then
    VACUUM (0 hours), the clone and a stream out of the table read back, the histories and
    the detail."""
    return [
        *({"op": "read", "path": path, "options": {"versionAsOf": v}} for v in range(versions)),
        {"op": "changes", "path": path, "start": 0},
        {"op": "clone", "path": path, "target": root + "/clone", "shallow": True},
        {"op": "conf", "key": "spark.databricks.delta.retentionDurationCheck.enabled",
         "value": "false"},
        {"op": "vacuum", "path": path, "hours": 0},
        {"op": "conf", "key": "spark.databricks.delta.retentionDurationCheck.enabled",
         "value": None},
        {"op": "read", "path": path},
        {"op": "read", "path": root + "/clone"},
        {"op": "stream", "source": path, "target": root + "/stream",
         "checkpoint": root + "/checkpoint"},
        {"op": "read", "path": root + "/stream"},
        {"op": "history", "path": path},
        {"op": "detail", "path": path},
        {"op": "history", "path": root + "/clone"},
        {"op": "history", "path": root + "/stream"},
    ]  # fmt: skip


AFTER_NAMES = [
    "changes",
    "clone",
    "conf",
    "vacuum",
    "conf",
    "read after vacuum",
    "read clone",
    "stream",
    "read stream",
    "history",
    "detail",
    "clone history",
    "stream history",
]


@pytest.fixture(scope="module")
def ran(
    spark: Any, reference: ReferenceRunner, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], dict[str, list[Result]]]:
    """Per setup, both sides' results: the script, then ``_after``'s reads."""
    cache: dict[str, dict[str, list[Result]]] = {}

    def get(setup: str) -> dict[str, list[Result]]:
        if setup not in cache:
            root = tmp_path_factory.mktemp(f"operations-{setup}")
            roots = {side: str(root / side) for side in ("ours", "theirs")}
            paths = {side: r + "/t" for side, r in roots.items()}
            ours, theirs = reference.run_both(
                spark, _script(paths["ours"], setup), _script(paths["theirs"], setup)
            )
            versions = len(ours)
            ours_after, theirs_after = reference.run_both(
                spark,
                _after(paths["ours"], versions, roots["ours"]),
                _after(paths["theirs"], versions, roots["theirs"]),
            )
            cache[setup] = {"ours": ours + ours_after, "theirs": theirs + theirs_after}
        return cache[setup]

    return get


def _named(results: list[Result], versions: int) -> dict[str, Result]:
    after = results[-len(AFTER_NAMES) :]
    reads = results[-len(AFTER_NAMES) - versions : -len(AFTER_NAMES)]
    named = {f"version {v}": r for v, r in enumerate(reads)}
    named.update(zip(AFTER_NAMES, after, strict=True))
    return named


@pytest.mark.parametrize("setup", list(SETUPS))
def test_every_operation_succeeds(
    ran: Callable[[str], dict[str, list[Result]]], setup: str
) -> None:
    results = ran(setup)
    assert errors(results["ours"]) == errors(results["theirs"]) == []


STEP_NAMES = ["write", "update", "delete", "merge", "sql update", "sql delete", "append",
              "optimize", "restore"]  # fmt: skip
COMPARED = [f"version {v}" for v in range(len(STEP_NAMES))] + [
    "changes",
    "read after vacuum",
    "read clone",
    "read stream",
]


@pytest.mark.parametrize("read", COMPARED)
@pytest.mark.parametrize("setup", list(SETUPS))
def test_same_rows(ran: Callable[[str], dict[str, list[Result]]], setup: str, read: str) -> None:
    results = ran(setup)
    ours = _named(results["ours"], len(STEP_NAMES))[read]
    theirs = _named(results["theirs"], len(STEP_NAMES))[read]
    assert ours == theirs


@pytest.mark.parametrize("table", ["history", "clone history", "stream history"])
@pytest.mark.parametrize("setup", list(SETUPS))
def test_same_history(
    ran: Callable[[str], dict[str, list[Result]]], setup: str, table: str
) -> None:
    results = ran(setup)
    ours = history_summary(value(_named(results["ours"], len(STEP_NAMES))[table]))
    theirs = history_summary(value(_named(results["theirs"], len(STEP_NAMES))[table]))
    assert ours == theirs


@pytest.mark.parametrize("setup", ["plain", "partitioned-deletionVectors"])
def test_same_detail(ran: Callable[[str], dict[str, list[Result]]], setup: str) -> None:
    results = ran(setup)
    ours = value(_named(results["ours"], len(STEP_NAMES))["detail"])
    theirs = value(_named(results["theirs"], len(STEP_NAMES))["detail"])
    assert detail_summary(ours) == detail_summary(theirs)
