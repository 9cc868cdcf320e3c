"""delta-pyspark against delta-spark itself, in the same run: ``python -m benchmarks reference``.

Both sides run the same operations (``tests/reference/operations.py``) on tables of their
own: ours in this process, delta-spark in the reference worker (``tests/reference/worker.py``,
its jars fetched once into a cache by ``tests/maven_jars.py``). Each figure is the median
of a few runs; the ratio is ours / delta-spark (below 1: we are faster). Small sizes: this
shows per-operation overheads, not throughput.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reference"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from operations import Op
from runner import ReferenceRunner, run_ours

from benchmarks.spark_session import bench_session
from maven_jars import DELTA_SPARK, maven_jars

SCHEMA = "id BIGINT, a INT, p STRING"


def _rows(start: int, count: int) -> list[list[Any]]:
    return [[i, i % 100, "xyz"[i % 3]] for i in range(start, start + count)]


def _write(path: str, rows: list[list[Any]]) -> Op:
    return {"op": "write", "path": path, "schema": SCHEMA, "rows": rows}


def _timed(run: Callable[[list[Op]], list[dict[str, Any]]], ops: list[Op]) -> float:
    started = time.perf_counter()
    results = run(ops)
    elapsed = time.perf_counter() - started
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise RuntimeError(f"benchmark operation failed: {failed[0]}")
    return elapsed


class Sides:
    """The two implementations, each with its own directory of tables."""

    def __init__(self, spark: Any, reference: ReferenceRunner, root: Path) -> None:
        self.runs = {
            "ours": lambda ops: run_ours(spark, ops),
            "delta-spark": reference.run,
        }
        self.root = root
        self.count = 0

    def path(self, side: str, name: str) -> str:
        self.count += 1
        return str(self.root / side / f"{name}-{self.count}")

    def measure(
        self, setup: Callable[[str], list[Op]], step: Callable[[str], list[Op]], repeat: int
    ) -> dict[str, float]:
        """Median seconds of ``step`` on a table ``setup`` made, per side (fresh each time)."""
        out = {}
        for side, run in self.runs.items():
            times = []
            for _ in range(repeat):
                path = self.path(side, "t")
                _timed(run, setup(path))
                times.append(_timed(run, step(path)))
            out[side] = statistics.median(times)
        return out


def _snapshot_load(sides: Sides, commits: int) -> dict[str, float]:
    """First read of a table of ``commits`` commits written by the other side."""
    paths = {side: sides.path(side, "log") for side in sides.runs}
    for side, run in sides.runs.items():
        _timed(run, [_write(paths[side], _rows(i, 1)) for i in range(commits)])
    other = {"ours": paths["delta-spark"], "delta-spark": paths["ours"]}
    return {
        side: _timed(run, [{"op": "read", "path": other[side]}]) for side, run in sides.runs.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    spark = bench_session()
    root = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    reference = ReferenceRunner(maven_jars(DELTA_SPARK), root / "worker")
    sides = Sides(spark, reference, root)
    n, repeat = options.rows, options.repeat

    def table(path: str) -> list[Op]:
        return [_write(path, _rows(0, n))]

    cases: dict[str, Callable[[], dict[str, float]]] = {
        "one-row append": lambda: sides.measure(table, lambda p: [_write(p, _rows(n, 1))], repeat),
        f"snapshot load after {options.commits} commits": lambda: _snapshot_load(
            sides, options.commits
        ),
        "DELETE 10%": lambda: sides.measure(
            table, lambda p: [{"op": "delete", "path": p, "condition": "a < 10"}], repeat
        ),
        "UPDATE 10%": lambda: sides.measure(
            table,
            lambda p: [{"op": "update", "path": p, "condition": "a < 10", "set": {"a": "a + 1"}}],
            repeat,
        ),
        "upsert MERGE (10% updates, 10% inserts)": lambda: sides.measure(
            table,
            lambda p: [
                {
                    "op": "merge",
                    "path": p,
                    "source": {"schema": SCHEMA, "rows": _rows(n - n // 10, n // 5)},
                    "condition": "t.id = s.id",
                    "clauses": [
                        {"when": "matched", "action": "updateAll"},
                        {"when": "notMatched", "action": "insertAll"},
                    ],
                }
            ],
            repeat,
        ),
        f"OPTIMIZE of {options.files} small files": lambda: sides.measure(
            lambda p: [_write(p, _rows(i * 10, 10)) for i in range(options.files)],
            lambda p: [{"op": "optimize", "path": p}],
            repeat,
        ),
    }
    try:
        _timed(sides.runs["delta-spark"], table(sides.path("delta-spark", "warm-up")))
        _timed(sides.runs["ours"], table(sides.path("ours", "warm-up")))
        print(f"{'case':45} {'ours s':>8} {'delta-spark s':>14} {'ratio':>6}")
        for name, case in cases.items():
            times = case()
            ratio = times["ours"] / times["delta-spark"]
            print(f"{name:45} {times['ours']:8.3f} {times['delta-spark']:14.3f} {ratio:6.2f}")
    finally:
        reference.close()


if __name__ == "__main__":
    main()
