"""Run benchmarks: ``python -m benchmarks`` runs all, ``python -m benchmarks NAME`` one,
``python -m benchmarks NAME --flag ...`` one with its own options (e.g.
``python -m benchmarks snapshot_load --files 1000000``)."""

from __future__ import annotations

import importlib
import inspect
import sys

BENCHMARKS = {
    "merge": "benchmarks.merge",
    "deletion_vectors": "benchmarks.deletion_vectors",
    "snapshot_load": "benchmarks.snapshot_load",
    "spark_scan_write": "benchmarks.spark_scan_write",
    "commit_throughput": "benchmarks.commit_throughput",
    "optimize": "benchmarks.optimize",
    "clustering": "benchmarks.clustering",
    "planner_reads": "benchmarks.planner_reads",
    "catalog_commits": "benchmarks.catalog_commits",
    "streaming": "benchmarks.streaming",
    "row_tracking": "benchmarks.row_tracking",
    "reference": "benchmarks.reference",
    "object_store": "benchmarks.object_store",
    "uniform": "benchmarks.uniform",
    "describe_cli": "benchmarks.describe_cli",
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    names = args
    options: list[str] = []
    if args and args[0] in BENCHMARKS and len(args) > 1 and args[1].startswith("-"):
        names, options = args[:1], args[1:]  # one benchmark with its own options
    if any(n in ("-h", "--help") for n in names):
        print(f"usage: python -m benchmarks [{' | '.join(BENCHMARKS)}] ... | NAME --option ...")
        return 0
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(BENCHMARKS)}",
            file=sys.stderr,
        )
        return 2
    for name in names or list(BENCHMARKS):
        print(f"== {name}")
        module = importlib.import_module(BENCHMARKS[name])
        if inspect.signature(module.main).parameters:
            module.main(options)  # never this process's argv, which names the benchmarks
        else:
            module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
