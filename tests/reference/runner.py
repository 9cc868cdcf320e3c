"""Run the same script of operations on delta-spark (in the worker process) and on
delta-pyspark (in this process), and compare.

``ReferenceRunner`` owns one ``worker.py`` process: started once (the JVM start is paid once
per pytest session, through the ``reference`` fixture of ``conftest.py``), fed one JSON line
per script, stopped at the end. ``run_ours`` executes the same script here, through
``delta_pyspark.tables``, and passes its results through JSON as the worker's do, so the two
sides' results compare with ``==``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from operations import Op, Result, execute

WORKER = Path(__file__).with_name("worker.py")
#: a JVM start with delta-spark's jars, on a loaded 2-core machine
START_TIMEOUT = 180.0
#: one script (a few tiny-table operations)
SCRIPT_TIMEOUT = 300.0


class ReferenceWorkerError(RuntimeError):
    """The worker died, hung or answered nonsense; the message ends with its log's tail."""


class ReferenceRunner:
    """A delta-spark worker process executing scripts of operations (``operations.py``)."""

    def __init__(
        self,
        jars: list[Path],
        workdir: Path,
        conf: dict[str, str] | None = None,
        script_timeout: float = SCRIPT_TIMEOUT,
    ) -> None:
        """``conf``: session settings over the worker's (benchmarks give both sides the
        same memory and shuffle partitions); ``script_timeout``: seconds a script may take."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.script_timeout = script_timeout
        self.log_path = workdir / "worker.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                os.pathsep.join(str(j) for j in jars),
                str(workdir / "warehouse"),
                json.dumps(conf or {}),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=workdir,
            env=env,
            text=True,
        )
        self.info = self._receive(START_TIMEOUT)

    def _fail(self, why: str) -> ReferenceWorkerError:
        self._log.flush()
        tail = self.log_path.read_text(errors="replace")[-4000:]
        return ReferenceWorkerError(f"delta-spark worker {why}; its log ({self.log_path}):\n{tail}")

    def _receive(self, timeout: float) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        if not ready:
            raise self._fail(f"did not answer within {timeout:.0f}s")
        line = stdout.readline()
        if not line:
            raise self._fail(f"exited (status {self.process.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def submit(self, ops: list[Op]) -> None:
        """Send a script to the worker without waiting (``results`` collects the answer), so
        that this process can run its own side meanwhile: the two JVMs use both cores."""
        if self.process.poll() is not None:
            raise self._fail(f"is gone (status {self.process.returncode})")
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"ops": ops}) + "\n")
        self.process.stdin.flush()

    def results(self) -> list[Result]:
        """The answer to the script ``submit`` sent: one result per operation."""
        results: list[Result] = self._receive(self.script_timeout)["results"]
        return results

    def run(self, ops: list[Op]) -> list[Result]:
        """Execute a script on delta-spark: one result per operation (``operations.execute``)."""
        self.submit(ops)
        return self.results()

    def run_both(
        self, spark: Any, ours: list[Op], theirs: list[Op]
    ) -> tuple[list[Result], list[Result]]:
        """Run ``ours`` here and ``theirs`` on delta-spark at the same time."""
        self.submit(theirs)
        mine = run_ours(spark, ours)
        return mine, self.results()

    def close(self) -> None:
        """Stop the worker: end of input, then a kill if it does not exit."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def run_ours(spark: Any, ops: list[Op]) -> list[Result]:
    """Execute a script on delta-pyspark in this process, results JSON-normalised like the
    worker's."""
    import delta_pyspark.tables as tables

    results = [execute(spark, tables, op) for op in ops]
    normalised: list[Result] = json.loads(json.dumps(results))
    return normalised


def value(result: Result) -> Any:
    """The value of a result that must have succeeded (else an assertion with its error)."""
    assert "error" not in result, f"operation failed: {result['error']}"
    return result["ok"]
