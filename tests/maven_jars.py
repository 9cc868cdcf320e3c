"""Jars the tests need from Maven Central, fetched once with Maven, then read from a local
cache with no network: delta-spark for the reference runner (``tests/reference/``), Hadoop's
S3A connector and its AWS SDK for ``s3a://`` tables (``tests/s3_server.py``).

Why Maven and not ``spark.jars.packages``: Ivy resolves on every session start (seconds, and
a network check whenever its cache misses), while a Maven copy into a fixed directory is
done once and sessions then start from plain ``spark.jars`` paths. Only the named jars are
copied, not their dependencies: everything else they need at run time (Scala, ANTLR, Spark,
Hadoop's client) is already in PySpark's ``jars/``.

The cache is ``$DELTA_PYSPARK_JAR_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/delta-pyspark/jars``;
``python tests/maven_jars.py`` fetches (or checks) every jar and prints their paths.
When one cannot be had, ``JarsUnavailable`` says which artifact and what to do: the tests
needing it then fail, they never skip.
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
DELTA_SPARK: tuple[tuple[str, str], ...] = (
    ("io.delta:delta-spark_2.13", DELTA_SPARK_VERSION),
    ("io.delta:delta-storage", DELTA_SPARK_VERSION),
)
#: Hadoop's S3A connector for PySpark 4.0.1's Hadoop 3.4.1, and the AWS SDK v2 bundle
#: that hadoop-aws 3.4.1 declares
S3A: tuple[tuple[str, str], ...] = (
    ("org.apache.hadoop:hadoop-aws", "3.4.1"),
    ("software.amazon.awssdk:bundle", "2.24.6"),
)
#: pinned so a fresh machine resolves the same plugin (Maven's default 2.8 is ancient)
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


class JarsUnavailable(RuntimeError):
    """A jar is neither cached nor fetchable; the message says what to do."""


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
        raise JarsUnavailable(
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
            raise JarsUnavailable(
                f"cannot fetch {coordinate} from Maven Central (needed by the tests). "
                f"Check the network/proxy for Maven Central, or put "
                f"{target.name} into {target.parent}.\n{' '.join(command)}\n{detail}"
            )
        os.replace(fetched, target)


def maven_jars(artifacts: tuple[tuple[str, str], ...], fetch: bool = True) -> list[Path]:
    """The jar paths of ``artifacts`` (``(group:artifact, version)``), fetching what is
    missing (no network at all when every jar is cached)."""
    jars = []
    for artifact, version in artifacts:
        directory = cache_dir() / artifact.split(":")[0] / version
        jar = directory / _jar_name(artifact, version)
        if not jar.is_file():
            if not fetch:
                raise JarsUnavailable(f"{artifact}:{version} is not in {directory}")
            _fetch(artifact, version, jar)
        jars.append(jar)
    return jars


if __name__ == "__main__":
    try:
        for path in maven_jars(DELTA_SPARK + S3A):
            print(path)
    except JarsUnavailable as error:
        print(error, file=sys.stderr)
        sys.exit(1)
