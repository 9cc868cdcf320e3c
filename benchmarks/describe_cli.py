"""A cold ``delta-pyspark describe TABLE --json``, whole process, against deltalake opening
the same table in a fresh interpreter.

The table is issue 39's shape: 90,010 files, a classic checkpoint at version 900, then 99
JSON commits of 111 actions (commit info, 10 removes, 100 adds with stats), written by
``benchmarks.snapshot_load.build_table`` (log only, no data files).

- **whole process**: wall time and peak RSS of each process, from start to exit. Ours is
  the installed ``delta-pyspark`` command. deltalake's is ``python -c`` opening
  ``DeltaTable(path)`` (which replays the log and its file list) and printing version,
  metadata, protocol and schema: less than ``describe`` prints (no file count or size,
  which would cost it a conversion of its file list), so the baseline is its fastest
  route to the same snapshot.
- **in process**: the time of ``DeltaLog(path).snapshot()`` in a fresh interpreter after
  the imports.

Each measurement runs in a fresh process, the two taking turns, after one untimed run of
each (the log in the page cache for both). Median and best of ``--repeat``; ratios of
medians. Targets (issue 39): whole-process time <= 1.0x and peak memory <= 1.5x
deltalake's; in-process snapshot <= 0.4 s.

    python -m benchmarks describe_cli
    python -m benchmarks.describe_cli --repeat 9 --keep /tmp/table
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_TIME_RATIO = 1.0
TARGET_MEMORY_RATIO = 1.5
TARGET_SNAPSHOT_SECONDS = 0.4

_DELTALAKE = r"""
import json, sys
from deltalake import DeltaTable
t = DeltaTable(sys.argv[1])
m, p = t.metadata(), t.protocol()
print(json.dumps({
    "version": t.version(), "id": m.id, "partitionColumns": m.partition_columns,
    "properties": m.configuration, "minReaderVersion": p.min_reader_version,
    "minWriterVersion": p.min_writer_version, "schema": t.schema().to_json(),
}))
"""

_SNAPSHOT = r"""
import sys, time
from delta_pyspark.core.snapshot.delta_log import DeltaLog
start = time.perf_counter()
snapshot = DeltaLog(sys.argv[1]).snapshot()
print(time.perf_counter() - start, snapshot.num_files)
"""


def _ours(root: Path) -> list[str]:
    script = Path(sys.executable).with_name("delta-pyspark")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "delta_pyspark.cli"]
    return [*command, "describe", str(root), "--json"]


def _run(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one process. This process imports
    nothing large: a child's peak RSS starts from its parent's at the fork."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err = process.stderr.read().decode() if process.stderr else ""
        if process.returncode:
            raise RuntimeError(f"{argv[0]} failed ({process.returncode}): {err}")
        out.seek(0)
        return elapsed, usage.ru_maxrss / 1024, out.read().decode()


def _build(root: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.describe_cli", "--build-only", str(root)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def run(repeat: int = 7, keep: Path | None = None) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="delta-bench-describe-"))
    root = keep or tmp / "table"
    try:
        if not (root / "_delta_log").is_dir():
            info = _build(root)
            print(f"built {info['files']:,} files, _delta_log {info['log_bytes'] / 2**20:.0f} MiB")
        sides = {"delta-pyspark": _ours(root), "deltalake": [sys.executable, "-c", _DELTALAKE]}
        sides["deltalake"].append(str(root))
        outputs = {name: _run(argv)[2] for name, argv in sides.items()}  # warm-up
        ours, theirs = (json.loads(outputs[n]) for n in sides)
        if ours["version"] != theirs["version"] or ours["id"] != theirs["id"]:
            raise RuntimeError(f"the two disagree: {ours['version']} vs {theirs['version']}")
        times: dict[str, list[float]] = {name: [] for name in sides}
        peaks: dict[str, list[float]] = {name: [] for name in sides}
        snapshots: list[float] = []
        for _ in range(repeat):
            for name, argv in sides.items():
                seconds, peak, _ = _run(argv)
                times[name].append(seconds)
                peaks[name].append(peak)
            _, _, out = _run([sys.executable, "-c", _SNAPSHOT, str(root)])
            seconds_text, files = out.split()
            if int(files) != ours["numFiles"]:
                raise RuntimeError(f"snapshot has {files} files, describe said {ours['numFiles']}")
            snapshots.append(float(seconds_text))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = {
        name: {
            "median_seconds": statistics.median(times[name]),
            "best_seconds": min(times[name]),
            "median_peak_mib": statistics.median(peaks[name]),
        }
        for name in sides
    }
    result["time_ratio"] = (
        result["delta-pyspark"]["median_seconds"] / result["deltalake"]["median_seconds"]
    )
    result["memory_ratio"] = (
        result["delta-pyspark"]["median_peak_mib"] / result["deltalake"]["median_peak_mib"]
    )
    result["snapshot_seconds"] = statistics.median(snapshots)
    print(f"{ours['numFiles']:,} files at version {ours['version']}; median (best) of {repeat}")
    print(f"{'process':<16}{'wall s':>16}{'peak RSS MiB':>16}")
    for name in sides:
        r = result[name]
        wall = f"{r['median_seconds']:.3f} ({r['best_seconds']:.3f})"
        print(f"{name:<16}{wall:>16}{r['median_peak_mib']:>16.0f}")
    print(f"{'ratio':<16}{result['time_ratio']:>16.2f}{result['memory_ratio']:>16.2f}")
    print(f"in-process snapshot: {result['snapshot_seconds']:.3f} s (best {min(snapshots):.3f} s)")
    ok = (
        result["time_ratio"] <= TARGET_TIME_RATIO
        and result["memory_ratio"] <= TARGET_MEMORY_RATIO
        and result["snapshot_seconds"] <= TARGET_SNAPSHOT_SECONDS
    )
    print(
        f"{'meets' if ok else 'MISSES'} the targets: time <= {TARGET_TIME_RATIO:.1f}x and "
        f"memory <= {TARGET_MEMORY_RATIO:.1f}x deltalake's, snapshot <= "
        f"{TARGET_SNAPSHOT_SECONDS:.1f} s"
    )
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.describe_cli",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, help="build the table here and keep it")
    parser.add_argument("--build-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args([] if argv is None else argv)
    if args.build_only is not None:
        from benchmarks.snapshot_load import build_table

        info = build_table(
            args.build_only,
            commits=1000,
            adds_per_commit=100,
            checkpoint_interval=900,
            removes_per_commit=10,
        )
        print(json.dumps(info))
        return
    run(args.repeat, args.keep)


if __name__ == "__main__":
    main(sys.argv[1:])
