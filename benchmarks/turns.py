"""Timing sides that take turns, for benchmarks whose ratio compares two or more ways of
doing one job in the same process.

On the project machine one run of the same Spark job moves by 10-25% (a best of three, run
to run) and single runs by more. Three causes are handled here. Drift: the sides run in
rounds, every side once per round, so a slow spell falls on all of them alike. The page
cache: each run starts after ``os.sync()``, so it does not pay for writing back what the
run before it wrote. Luck: the median is printed next to the best.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping


def timed(run: Callable[[], object]) -> float:
    """Seconds ``run()`` takes."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def taking_turns(
    sides: Mapping[str, Callable[[], float]], rounds: int, warmup: int = 0
) -> dict[str, list[float]]:
    """Each side's timings over ``warmup`` untimed and then ``rounds`` timed rounds; a side
    returns the seconds it counts (so it can leave its own set-up out)."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(warmup + rounds):
        for name, run in sides.items():
            os.sync()
            elapsed = run()
            if i >= warmup:
                times[name].append(elapsed)
    return times


def best_median(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return ordered[0], ordered[len(ordered) // 2]


def spread(times: list[float]) -> str:
    """The median and every timed run, when there are several."""
    if len(times) == 1:
        return ""
    runs = ", ".join(f"{t:.2f}" for t in times)
    return f" (median {best_median(times)[1]:.2f}; runs {runs})"


def ratio(ours: list[float], baseline: list[float]) -> str:
    """Ours / the baseline by the best of each and, with several rounds, by the medians."""
    (best, median), (their_best, their_median) = best_median(ours), best_median(baseline)
    by_median = f", of medians {median / their_median:.3f}" if len(ours) > 1 else ""
    return f"ratio of best {best / their_best:.3f}{by_median}"
