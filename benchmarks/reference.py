"""delta-pyspark against delta-spark itself, in the same run: ``./dev bench reference``.

Both sides run the same operations (``tests/reference/operations.py``): ours in this
process, delta-spark in the reference worker (``tests/reference/worker.py``, its jars fetched
once into a cache by ``tests/maven_jars.py``), each JVM on ``local[2]`` with a 4 GiB driver
and the same shuffle partitions, one side at a time. Sections (``--only a,b``):

- ``tpch``: TPC-H at ``--scale`` (default 1), generated once by ``tpchgen-cli`` into a cache;
  the eight tables loaded into Delta by each side and into plain Parquet by Spark (the
  baseline on the same data), then the 22 queries on each (best of ``--repeat``, the
  sides taking turns at each repetition). The sides' answers must be equal: a query whose
  rows differ is reported as a failure.
- ``merge``: delta-spark's MERGE benchmark shapes on ``orders`` (insert-only, delete-only,
  upsert) with 0.1%, 1%, 10% and 50% of its rows in the source; then the 10% upsert on a
  composite key, on a string key, with conditional clauses, and with deletion vectors
  (unconditional and conditional). Each merge runs on a fresh copy (best of ``--repeat``,
  the sides taking turns); the sides' merged tables must agree (a digest of rows, keys and
  sums).
- ``dml``: DELETE and UPDATE of 10% of ``orders``, copy-on-write and with deletion vectors.
- ``optimize``: OPTIMIZE of ``orders`` written as 1,000 small files; Z-order of ``orders``
  by (o_custkey, o_orderdate).
- ``log``: the first DESCRIBE DETAIL (snapshot load with the file list) of a log-only table of
  1,000 commits of 100 files (``benchmarks.snapshot_load``'s table: a checkpoint every 10).
- ``append``: latency of a one-row append to a 2,000-row table.
- ``stream``: streaming throughput, one ``Trigger.AvailableNow`` run from a Delta copy of
  ``lineitem`` into a new Delta table (best of ``--repeat``, the sides taking turns; the
  sinks' rows and sums compared across the sides).

Each ratio is ours / delta-spark (below 1: we are faster); TPC-H also shows ours / Parquet.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reference"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from operations import Op, Result
from runner import ReferenceRunner, run_ours

from benchmarks.snapshot_load import build_table
from benchmarks.spark_session import bench_session
from benchmarks.tpch_queries import QUERIES, TABLES
from maven_jars import DELTA_SPARK, cache_dir, maven_jars

SECTIONS = ("tpch", "merge", "dml", "optimize", "log", "append", "stream")
#: the same on both sides: TPC-H's joins need more than the suite's two partitions
SESSION = {"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8"}
ORDERS_COLUMNS = (
    "o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, "
    "o_shippriority, o_comment"
)
NEW_KEY = "o_orderkey + 100000000 AS o_orderkey"
VECTORS_ON = "'delta.enableDeletionVectors' = 'true'"


def tpch_data(scale: float) -> Path:
    """TPC-H's tables as Parquet (one file each), generated once per scale into the cache."""
    target = cache_dir().parent / "tpch" / f"sf{scale:g}"
    if all((target / f"{t}.parquet").exists() for t in TABLES):
        return target
    target.mkdir(parents=True, exist_ok=True)
    generator = Path(sys.executable).with_name("tpchgen-cli")
    subprocess.run(
        [str(generator), "parquet", "-s", f"{scale:g}", f"--output-dir={target}"], check=True
    )
    return target


class Sides:
    """The implementations, each with its own directory of tables and its own script runner:
    delta-pyspark and delta-spark on Delta, plain Spark on Parquet (our session)."""

    def __init__(self, spark: Any, reference: ReferenceRunner, root: Path) -> None:
        ours: Callable[[list[Op]], list[Result]] = lambda ops: run_ours(spark, ops)  # noqa: E731
        self.runs = {"ours": ours, "delta-spark": reference.run, "parquet": ours}
        self.root = root
        self.count = 0

    def path(self, side: str, name: str) -> str:
        self.count += 1
        return str(self.root / side / f"{name}-{self.count}")

    def timed(self, side: str, ops: list[Op]) -> tuple[float, list[Result]]:
        started = time.perf_counter()
        results = self.runs[side](ops)
        elapsed = time.perf_counter() - started
        failed = [r["error"] for r in results if "error" in r]
        if failed:
            raise RuntimeError(f"{side}: benchmark operation failed: {failed[0]}")
        return elapsed, results

    def sources(self, data: Path) -> None:
        """``src_<table>``: the generated Parquet, a view in every session (sources of loads
        and of MERGE)."""
        ops = [
            {
                "op": "view",
                "name": f"src_{t}",
                "path": str(data / f"{t}.parquet"),
                "format": "parquet",
            }
            for t in TABLES
        ]
        for side in ("ours", "delta-spark"):
            self.timed(side, ops)

    def orders_copy(
        self, side: str, repartition: int | None = None, sql: str = "SELECT * FROM src_orders"
    ) -> str:
        path = self.path(side, "orders")
        op: Op = {"op": "write", "sql": sql, "path": path}
        if repartition:
            op["repartition"] = repartition
        self.timed(side, [op])
        return path


def _row(name: str, ours: float, theirs: float, extra: str = "") -> None:
    print(f"{name:52} {ours:9.3f} {theirs:13.3f} {ours / theirs:6.2f} {extra}")


def _header(first: str) -> None:
    print(f"\n{first:52} {'ours s':>9} {'delta-spark s':>13} {'ratio':>6}")


def _vs_parquet(times: dict[str, float]) -> str:
    return f"parquet {times['parquet']:8.3f}  ours/parquet {times['ours'] / times['parquet']:.2f}"


def run_tpch(sides: Sides, data: Path, repeat: int) -> None:
    _header(f"TPC-H SF{data.name[2:]}")
    paths: dict[str, dict[str, str]] = {}
    loads: dict[str, float] = {}
    for side in sides.runs:
        fmt = "parquet" if side == "parquet" else "delta"
        paths[side] = {t: sides.path(side, t) for t in TABLES}
        ops: list[Op] = [
            {"op": "write", "sql": f"SELECT * FROM src_{t}", "path": p, "format": fmt}
            for t, p in paths[side].items()
        ]
        loads[side], _ = sides.timed(side, ops)
        views: list[Op] = [
            {"op": "view", "name": t, "path": p, "format": fmt} for t, p in paths[side].items()
        ]
        sides.timed(side, views)
    _row("load (8 tables)", loads["ours"], loads["delta-spark"], _vs_parquet(loads))
    totals = dict.fromkeys(sides.runs, 0.0)
    mismatches = []
    for number, sql in QUERIES.items():
        times: dict[str, list[float]] = {side: [] for side in sides.runs}
        answers: dict[str, Any] = {}
        for _ in range(repeat):  # the sides take turns: no side always runs a query first
            for side in sides.runs:
                elapsed, results = sides.timed(side, [{"op": "sql", "sql": sql}])
                times[side].append(elapsed)
                answers.setdefault(side, results[0]["ok"])
        best = {side: min(runs) for side, runs in times.items()}
        for side, seconds in best.items():
            totals[side] += seconds
        if not answers["ours"] == answers["delta-spark"] == answers["parquet"]:
            mismatches.append(number)
        _row(f"Q{number}", best["ours"], best["delta-spark"], _vs_parquet(best))
    _row("22 queries, total", totals["ours"], totals["delta-spark"], _vs_parquet(totals))
    if mismatches:
        print(f"ANSWERS DIFFER between the sides for queries {mismatches}")
        raise SystemExit(1)


def _merge_source(shape: str, percent: float) -> tuple[str, list[dict[str, str]]]:
    picked = f"pmod(hash(o_orderkey), 100000) < {round(percent * 1000)}"
    matched = f"SELECT * FROM src_orders WHERE {picked}"
    new = f"SELECT {NEW_KEY}, {ORDERS_COLUMNS} FROM src_orders WHERE {picked}"
    if shape == "insert-only":
        return new, [{"when": "notMatched", "action": "insertAll"}]
    if shape == "delete-only":
        return matched, [{"when": "matched", "action": "delete"}]
    return f"{matched} UNION ALL {new}", [
        {"when": "matched", "action": "updateAll"},
        {"when": "notMatched", "action": "insertAll"},
    ]


#: the upsert of 10% of the rows in shapes beyond delta-spark's matrix: (name, condition,
#: clauses (None: the upsert's), deletion vectors); the string key is ``o_orderkey`` as text,
#: in a column ``o_key`` of the target and of the source (``_STRING_KEY``)
_KEY = "t.o_orderkey = s.o_orderkey"
_STRING_KEY = "SELECT concat('order-', o_orderkey) AS o_key, * FROM ({})"
_CONDITIONAL = [
    {"when": "matched", "action": "updateAll", "condition": "s.o_orderstatus = 'F'"},
    {"when": "matched", "action": "delete", "condition": "s.o_orderstatus = 'O'"},
    {"when": "notMatched", "action": "insertAll", "condition": "s.o_totalprice > 100000"},
]
_MORE_SHAPES: tuple[tuple[str, str, list[dict[str, str]] | None, bool], ...] = (
    ("composite key", f"{_KEY} AND t.o_custkey = s.o_custkey", None, False),
    ("string key", "t.o_key = s.o_key", None, False),
    ("conditional clauses", _KEY, _CONDITIONAL, False),
    ("deletion vectors", _KEY, None, True),
    ("conditional, deletion vectors", _KEY, _CONDITIONAL, True),
)


def _merged(sides: Sides, side: str, path: str) -> list[Result]:
    """A digest of the merged table (rows, keys, sums), compared across the sides."""
    digest = (
        "SELECT count(*), count(DISTINCT o_orderkey), sum(o_totalprice), "
        f"sum(pmod(xxhash64(o_comment, o_orderstatus), 1000000007)) FROM delta.`{path}`"
    )
    return sides.timed(side, [{"op": "sql", "sql": digest}])[1]


def _merge_case(
    sides: Sides,
    name: str,
    target: str,
    sql: str,
    condition: str,
    clauses: list[dict[str, str]],
    vectors: bool,
    repeat: int,
) -> None:
    """Time one MERGE on each side, each run into a fresh copy of ``target``'s rows (best
    of ``repeat``, the sides taking turns), and check both sides end with the same table."""
    times: dict[str, list[float]] = {"ours": [], "delta-spark": []}
    digests = {}
    for _ in range(repeat):
        for side, took in times.items():
            path = sides.orders_copy(side, sql=target)
            if vectors:
                enable = f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({VECTORS_ON})"
                sides.timed(side, [{"op": "sql", "sql": enable}])
            op: Op = {
                "op": "merge",
                "path": path,
                "source": {"sql": sql},
                "condition": condition,
                "clauses": clauses,
            }
            took.append(sides.timed(side, [op])[0])
            digests[side] = _merged(sides, side, path)
        if digests["ours"] != digests["delta-spark"]:
            raise RuntimeError(f"MERGE {name}: the sides' tables differ: {digests}")
    _row(name, min(times["ours"]), min(times["delta-spark"]))


def run_merge(sides: Sides, repeat: int) -> None:
    _header(f"MERGE into orders, % of its rows (best of {repeat})")
    for shape in ("insert-only", "delete-only", "upsert"):
        for percent in (0.1, 1.0, 10.0, 50.0):
            sql, clauses = _merge_source(shape, percent)
            target = "SELECT * FROM src_orders"
            _merge_case(sides, f"{shape} {percent:g}%", target, sql, _KEY, clauses, False, repeat)
    upsert, upsert_clauses = _merge_source("upsert", 10.0)
    for name, condition, conditional, vectors in _MORE_SHAPES:
        target, sql = "SELECT * FROM src_orders", upsert
        if "o_key" in condition:
            target, sql = _STRING_KEY.format(target), _STRING_KEY.format(upsert)
        clauses = conditional or upsert_clauses
        _merge_case(sides, f"upsert 10%, {name}", target, sql, condition, clauses, vectors, repeat)


def run_dml(sides: Sides) -> None:
    _header("DELETE / UPDATE of 10% of orders")
    condition = "pmod(hash(o_orderkey), 10) = 0"
    steps: dict[str, Op] = {
        "DELETE": {"op": "delete", "condition": condition},
        "UPDATE": {"op": "update", "condition": condition, "set": {"o_comment": "'updated'"}},
    }
    for vectors in (False, True):
        for name, step in steps.items():
            times = {}
            for side in ("ours", "delta-spark"):
                path = sides.orders_copy(side)
                if vectors:
                    enable = f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({VECTORS_ON})"
                    sides.timed(side, [{"op": "sql", "sql": enable}])
                times[side], _ = sides.timed(side, [{**step, "path": path}])
            label = "deletion vectors" if vectors else "copy-on-write"
            _row(f"{name} ({label})", times["ours"], times["delta-spark"])


def run_optimize(sides: Sides) -> None:
    _header("OPTIMIZE")
    cases: dict[str, tuple[int, Op]] = {
        "compaction of 1,000 small files": (1000, {"op": "optimize"}),
        "Z-order by (o_custkey, o_orderdate)": (
            8,
            {"op": "optimize", "zorder": ["o_custkey", "o_orderdate"]},
        ),
    }
    for name, (files, step) in cases.items():
        times = {}
        for side in ("ours", "delta-spark"):
            path = sides.orders_copy(side, repartition=files)
            times[side], _ = sides.timed(side, [{**step, "path": path}])
        _row(name, times["ours"], times["delta-spark"])


def run_log(sides: Sides, repeat: int) -> None:
    _header("snapshot load: first DESCRIBE DETAIL")
    template = sides.root / "log-template"
    built = build_table(template)
    times: dict[str, list[float]] = {"ours": [], "delta-spark": []}
    for _ in range(repeat):
        for side in times:
            copy = Path(sides.path(side, "log"))
            shutil.copytree(template, copy)  # a path neither side has read: a cold load
            elapsed, _ = sides.timed(side, [{"op": "detail", "path": str(copy)}])
            times[side].append(elapsed)
    name = f"{built['commits']:,} commits, {built['files']:,} files (best of {repeat})"
    _row(name, min(times["ours"]), min(times["delta-spark"]))


def run_append(sides: Sides, repeat: int) -> None:
    _header("latency")
    rows = [[i, i % 100, "xyz"[i % 3]] for i in range(2000)]
    schema = "id BIGINT, a INT, p STRING"
    times: dict[str, list[float]] = {"ours": [], "delta-spark": []}
    for side in times:
        path = sides.path(side, "append")
        sides.timed(side, [{"op": "write", "path": path, "schema": schema, "rows": rows}])
        for i in range(repeat):
            one: Op = {"op": "write", "path": path, "schema": schema, "rows": [[-i, 1, "x"]]}
            times[side].append(sides.timed(side, [one])[0])
    _row(f"one-row append (best of {repeat})", min(times["ours"]), min(times["delta-spark"]))


def run_stream(sides: Sides, repeat: int) -> None:
    """Streaming throughput: one ``Trigger.AvailableNow`` run reading a Delta copy of
    ``lineitem`` (48 files) into a fresh Delta table, best of ``repeat``, the sides taking
    turns; each run's sink must hold every source row, with the same sums on both sides."""
    _header(f"streaming, Delta to Delta (best of {repeat})")
    sources = {}
    for side in ("ours", "delta-spark"):
        sources[side] = sides.path(side, "lineitem")
        copy: Op = {"op": "write", "sql": "SELECT * FROM src_lineitem", "repartition": 48}
        sides.timed(side, [{**copy, "path": sources[side]}])
    times: dict[str, list[float]] = {"ours": [], "delta-spark": []}
    digests = {}
    for _ in range(repeat):
        for side, took in times.items():
            sink = sides.path(side, "stream-sink")
            run: Op = {"op": "stream", "source": sources[side], "target": sink}
            took.append(sides.timed(side, [{**run, "checkpoint": f"{sink}-checkpoint"}])[0])
            digest = (
                "SELECT count(*), sum(l_quantity), sum(l_extendedprice), "
                f"sum(pmod(xxhash64(l_comment), 1000000007)) FROM delta.`{sink}`"
            )
            digests[side] = sides.timed(side, [{"op": "sql", "sql": digest}])[1]
        if digests["ours"] != digests["delta-spark"]:
            raise RuntimeError(f"streaming: the sides' sinks differ: {digests}")
    rows = digests["ours"][0]["ok"][0][0]
    best = {side: min(took) for side, took in times.items()}
    rates = ", ".join(f"{side} {rows / t / 1e6:.2f}" for side, t in best.items())
    _row(f"lineitem, {rows:,} rows", best["ours"], best["delta-spark"], f"(M rows/s: {rates})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    options = parser.parse_args(argv)
    chosen = options.only.split(",")
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {SECTIONS}")
    data = tpch_data(options.scale)
    spark = bench_session()
    for key, value in SESSION.items():
        if key != "spark.driver.memory":  # bench_session's already
            spark.conf.set(key, value)
    root = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    reference = ReferenceRunner(
        maven_jars(DELTA_SPARK), root / "worker", conf=SESSION, script_timeout=3600
    )
    sides = Sides(spark, reference, root)
    print(f"delta-spark {reference.info['spark']} worker; tables under {root}")
    try:
        sides.sources(data)
        sections: dict[str, Callable[[], None]] = {
            "tpch": lambda: run_tpch(sides, data, options.repeat),
            "merge": lambda: run_merge(sides, options.repeat),
            "dml": lambda: run_dml(sides),
            "optimize": lambda: run_optimize(sides),
            "log": lambda: run_log(sides, max(options.repeat, 3)),
            "append": lambda: run_append(sides, 5),
            "stream": lambda: run_stream(sides, options.repeat),
        }
        for name in SECTIONS:
            if name in chosen:
                sections[name]()
    finally:
        reference.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
