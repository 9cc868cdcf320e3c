"""Common user mistakes raise the same error on both sides: the same PySpark exception class,
the same error condition (``getCondition()``), and a message saying the same thing.

Each case is a short script on a fresh path whose last operation is the mistake; all cases
run in one script per side (one round trip to the worker).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from operations import Op, Result
from runner import ReferenceRunner
from scripts import COLUMNS, SCHEMA, write

ROWS = [[1, 10, "x"], [2, 20, "y"]]


def _table(path: str, **properties: str) -> list[Op]:
    return [write(path, ROWS, options=properties)]


def _sql(statement: str, path: str) -> Op:
    return {"op": "sql", "sql": statement.format(t=f"delta.`{path}`")}


@dataclass(frozen=True)
class Mistake:
    """A script whose last operation fails, and what both messages must say."""

    name: str
    script: Callable[[str], list[Op]]
    message: str  # a regular expression both messages match


MISTAKES = [
    Mistake(
        "append-new-column",
        lambda p: [*_table(p), write(p, [[3, 30, "z", "q"]], SCHEMA + ", extra STRING")],
        r"(?i)schema mismatch",
    ),
    Mistake(
        "append-incompatible-type",
        lambda p: [*_table(p), write(p, [[3, "thirty", "z"]], "id BIGINT, a STRING, p STRING")],
        r"(?i)failed to merge",
    ),
    Mistake(
        "read-missing-path",
        lambda p: [{"op": "read", "path": p + "-missing"}],
        r"(?i)does not exist",
    ),
    Mistake(
        "forPath-not-a-delta-table",
        lambda p: [
            write(p, ROWS, format="parquet"),
            {"op": "delete", "path": p, "condition": "id = 1"},
        ],
        r"(?i)not a delta table",
    ),
    Mistake(
        "time-travel-past-latest",
        lambda p: [*_table(p), {"op": "read", "path": p, "options": {"versionAsOf": 5}}],
        r"(?i)version",
    ),
    Mistake(
        "merge-duplicate-source-matches",
        lambda p: [
            *_table(p),
            {
                "op": "merge",
                "path": p,
                "source": {"schema": SCHEMA, "rows": [[1, 11, "x"], [1, 12, "x"]]},
                "condition": "t.id = s.id",
                "clauses": [{"when": "matched", "action": "updateAll"}],
            },
        ],
        r"(?i)(multiple|several) source rows matched",
    ),
    Mistake(
        "drop-column-without-column-mapping",
        lambda p: [*_table(p), _sql("ALTER TABLE {t} DROP COLUMN a", p)],
        r"(?i)column mapping",
    ),
    Mistake(
        "check-constraint-violated",
        lambda p: [
            *_table(p),
            _sql("ALTER TABLE {t} ADD CONSTRAINT a_positive CHECK (a > 0)", p),
            write(p, [[3, -1, "z"]]),
        ],
        r"(?i)a_positive",
    ),
    Mistake(
        "new-constraint-violated-by-rows",
        lambda p: [*_table(p), _sql("ALTER TABLE {t} ADD CONSTRAINT big CHECK (a > 15)", p)],
        r"(?i)violate the new CHECK constraint",
    ),
    Mistake(
        "not-null-violated",
        lambda p: [
            {
                "op": "create",
                "path": p,
                "columns": [{**COLUMNS[0], "nullable": False}, *COLUMNS[1:]],
            },
            write(p, [[None, 1, "x"]]),
        ],
        r"(?i)null",
    ),
    Mistake(
        "update-unknown-column",
        lambda p: [
            *_table(p),
            {"op": "update", "path": p, "condition": "id = 1", "set": {"nope": "1"}},
        ],
        r"nope",
    ),
    Mistake(
        "create-existing-table",
        lambda p: [*_table(p), {"op": "create", "path": p, "columns": COLUMNS[:1]}],
        r"(?i)exist",
    ),
    Mistake(
        "vacuum-retention-too-short",
        lambda p: [*_table(p), {"op": "vacuum", "path": p, "hours": 0}],
        r"(?i)retention",
    ),
    Mistake(
        "insert-into-identity-always",
        lambda p: [
            {
                "op": "create",
                "path": p,
                "columns": [{**COLUMNS[0], "identity": {"start": 1, "step": 1}}, *COLUMNS[1:]],
            },
            write(p, ROWS),
        ],
        r"(?i)identity",
    ),
]
MISTAKES.append(
    Mistake(
        "merge-update-all-without-generated-column",
        lambda p: [
            {
                "op": "create",
                "path": p,
                "columns": [*COLUMNS, {"name": "g", "type": "INT", "generated": "a * 2"}],
            },
            write(p, ROWS),
            {
                "op": "merge",
                "path": p,
                "source": {"schema": SCHEMA, "rows": [[1, 11, "x"]]},
                "condition": "t.id = s.id",
                "clauses": [{"when": "matched", "action": "updateAll"}],
            },
        ],
        r"(?i)cannot resolve",
    )
)
BY_NAME = {m.name: m for m in MISTAKES}
#: mistakes on which the two disagree, with why
_PY4J = (
    "disagreement: delta-spark's {} reaches Python as a bare Py4JJavaError (PySpark converts "
    "no DeltaInvariantViolationException), with no condition; delta-pyspark raises "
    "InvariantViolationError, a PySparkException"
)
DISAGREEMENTS = {
    "merge-update-all-without-generated-column": "disagreement: delta-spark 4.0.1 refuses "
    "UPDATE SET * from a source without the target's generated column "
    "(DELTA_MERGE_UNRESOLVED_EXPRESSION: cannot resolve g); delta-pyspark computes g",
    "check-constraint-violated": _PY4J.format("CHECK violation on write"),
    "not-null-violated": _PY4J.format("NOT NULL violation on write"),
}


@pytest.fixture(scope="module")
def outcomes(
    spark: Any, reference: ReferenceRunner, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[list[Result], list[Result]]]:
    """Every mistake's script results: (ours, delta-spark's), each side on its own path."""
    root = tmp_path_factory.mktemp("mistakes")
    scripts = {
        side: [m.script(str(root / side / m.name)) for m in MISTAKES] for side in ("ours", "theirs")
    }
    ours, theirs = reference.run_both(
        spark,
        [op for script in scripts["ours"] for op in script],
        [op for script in scripts["theirs"] for op in script],
    )
    split: dict[str, tuple[list[Result], list[Result]]] = {}
    start = 0
    for mistake, script in zip(MISTAKES, scripts["ours"], strict=True):
        end = start + len(script)
        split[mistake.name] = (ours[start:end], theirs[start:end])
        start = end
    return split


def _failure(results: list[Result], side: str) -> dict[str, Any]:
    *setup, last = results
    assert all("error" not in r for r in setup), f"{side}: the set-up failed: {setup}"
    assert "error" in last, f"{side}: the mistake did not fail: {last}"
    error: dict[str, Any] = last["error"]
    return error


@pytest.mark.parametrize(
    "mistake",
    [
        pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=DISAGREEMENTS[m]))
        if m in DISAGREEMENTS
        else m
        for m in BY_NAME
    ],
)
def test_same_error(outcomes: dict[str, tuple[list[Result], list[Result]]], mistake: str) -> None:
    ours_results, theirs_results = outcomes[mistake]
    theirs = _failure(theirs_results, "delta-spark")
    ours = _failure(ours_results, "ours")
    assert (ours["pysparkType"], ours["condition"]) == (theirs["pysparkType"], theirs["condition"])
    pattern = BY_NAME[mistake].message
    assert re.search(pattern, theirs["message"]), theirs["message"]
    assert re.search(pattern, ours["message"]), ours["message"]
