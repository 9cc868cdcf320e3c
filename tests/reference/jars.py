"""delta-spark's jars for the reference runner: fetched once from Maven Central with Maven,
then read from a local cache with no network.

Why Maven and not ``spark.jars.packages``: Ivy resolves on every session start (seconds, and
a network check whenever its cache misses), while a Maven copy into a fixed directory is
done once and the worker then starts from plain ``spark.jars`` paths. Only delta-spark and
delta-storage are copied: everything else delta-spark needs at run time (Scala, ANTLR, Spark)
is already in PySpark's ``jars/``.

The cache is ``$DELTA_PYSPARK_JAR_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/delta-pyspark/jars``;
``python tests/reference/jars.py`` fetches (or checks) the jars and prints their paths.
When they cannot be had, ``ReferenceJarsUnavailable`` says which artifact and what to do:
the reference tests then fail, they never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: delta-spark built for PySpark 4.0.x (the newest 4.0 release on Maven Central)
DELTA_SPARK_VERSION = "4.0.1"
ARTIFACTS: tuple[str, ...] = ("io.delta:delta-spark_2.13", "io.delta:delta-storage")
#: pinned so a fresh machine resolves the same plugin (Maven's default 2.8 is ancient)
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


class ReferenceJarsUnavailable(RuntimeError):
    """delta-spark's jars are neither cached nor fetchable; the message says what to do."""


def cache_dir() -> Path:
    """Where the jars (and Maven's own repository for them) live between runs."""
    explicit = os.environ.get("DELTA_PYSPARK_JAR_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "delta-pyspark" / "jars"


def _jar_name(artifact: str, version: str) -> str:
    return f"{artifact.split(':')[1]}-{version}.jar"


def _fetch(artifact: str, version: str, target: Path) -> None:
    """Copy one jar from Maven Central into ``target`` (atomically: a half-copied jar never
    has the final name, so an interrupted fetch is redone)."""
    mvn = shutil.which("mvn")
    coordinate = f"{artifact}:{version}"
    if mvn is None:
        raise ReferenceJarsUnavailable(
            f"cannot fetch {coordinate}: Maven (mvn) is not on PATH. Install it "
            f"(apt-get install maven) or put {_jar_name(artifact, version)} into {target.parent}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        command = [
            mvn,
            "-q",
            "-B",
            "-C",  # strict checksums: a damaged download fails instead of being cached
            f"-Dmaven.repo.local={cache_dir() / 'm2'}",
            f"{DEPENDENCY_PLUGIN}:copy",
            f"-Dartifact={coordinate}",
            f"-DoutputDirectory={tmp}",
            "-Dmdep.overWriteReleases=true",
        ]
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
        fetched = Path(tmp) / target.name
        if run.returncode != 0 or not fetched.is_file():
            lines = (run.stdout + run.stderr).strip().splitlines()
            detail = "\n".join(line for line in lines if "ERROR" in line)[:2000]
            raise ReferenceJarsUnavailable(
                f"cannot fetch {coordinate} from Maven Central (needed by the delta-spark "
                f"reference tests). Check the network/proxy for Maven Central, or put "
                f"{target.name} into {target.parent}.\n{' '.join(command)}\n{detail}"
            )
        os.replace(fetched, target)


def delta_spark_jars(version: str = DELTA_SPARK_VERSION, fetch: bool = True) -> list[Path]:
    """The jar paths for ``spark.jars`` of a delta-spark session, fetching what is missing
    (no network at all when every jar is cached)."""
    directory = cache_dir() / version
    jars = []
    for artifact in ARTIFACTS:
        jar = directory / _jar_name(artifact, version)
        if not jar.is_file():
            if not fetch:
                raise ReferenceJarsUnavailable(f"{artifact}:{version} is not in {directory}")
            _fetch(artifact, version, jar)
        jars.append(jar)
    return jars


if __name__ == "__main__":
    try:
        for path in delta_spark_jars():
            print(path)
    except ReferenceJarsUnavailable as error:
        print(error, file=sys.stderr)
        sys.exit(1)
