"""The JVM helper jar: the Java sources under ``java/`` compiled with Janino, the compiler
Spark itself ships (a Java runtime suffices, no JDK), cached per source and Spark version, and
put on the driver's and executors' class path through ``spark.jars``.

``DeltaSource`` is the ``delta`` data source Spark resolves itself (registered through the
jar's ``META-INF/services``), whose ``DeltaFileIndex`` asks the Python core for the files of
each scan; ``DeltaSparkExtensions`` is its session extension. The classes use Spark's
internal API (``ParquetFileFormat``, column vectors, parsed plans), which changes between
minor versions: what differs is isolated in ``versions/spark-X.Y/``, whose files replace
those of older versions for Spark X.Y and later, and a Spark outside ``SUPPORTED`` is refused.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

from delta_pyspark.exceptions import DeltaJvmExtensionError

SUPPORTED = ((4, 0), (4, 3))  # the oldest and newest Spark minor versions the sources match

SOURCES = Path(__file__).parent / "java"
VERSIONED_SOURCES = Path(__file__).parent / "versions"


_JANINO_MAIN = "org.codehaus.commons.compiler.samples.CompilerDemo"


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def check_spark_version(version: str | None = None) -> None:
    """Refuse a PySpark outside ``SUPPORTED``: the helper compiles against Spark's internal
    classes, whose signatures change between minor versions, so an untried one is not
    guessed at."""
    import pyspark

    version = version or pyspark.__version__
    oldest, newest = SUPPORTED
    if not oldest <= _minor(version) <= newest:
        raise DeltaJvmExtensionError(
            f"delta-pyspark works with PySpark {oldest[0]}.{oldest[1]} to {newest[0]}.{newest[1]}"
            f" (its JVM helper is compiled against Spark's internals), this process has PySpark "
            f"{version}: install a pyspark in that range"
        )


def helper_sources(version: str) -> list[Path]:
    """The Java sources for Spark ``version``: the common ones, and of each versioned file
    the copy of the newest ``versions/spark-X.Y`` not newer than ``version``."""
    chosen: dict[str, Path] = {}
    releases = sorted(
        (_minor(d.name.removeprefix("spark-")), d) for d in VERSIONED_SOURCES.glob("spark-*")
    )
    for release, directory in releases:
        if release <= _minor(version):
            for src in directory.rglob("*.java"):
                chosen[src.relative_to(directory).as_posix()] = src
    return sorted(SOURCES.rglob("*.java")) + [chosen[name] for name in sorted(chosen)]


def _spark_jars() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"


def hadoop_version() -> str:
    """The Hadoop release PySpark ships (its ``hadoop-client-api`` jar's version), which
    Hadoop's S3A connector must match."""
    for jar in _spark_jars().glob("hadoop-client-api-*.jar"):
        return jar.name[len("hadoop-client-api-") : -len(".jar")]
    raise DeltaJvmExtensionError(f"no hadoop-client-api jar in {_spark_jars()}")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "delta-pyspark"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def extension_jar() -> str:
    """Path of the helper jar, compiled on first use for these sources and this Spark."""
    import pyspark

    sources = helper_sources(pyspark.__version__)
    resources = sorted(p for p in (SOURCES / "META-INF").rglob("*") if p.is_file())
    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in sources + resources:
        digest.update(src.name.encode() + src.read_bytes())
    jar = _cache_dir() / f"delta-pyspark-jvm-{digest.hexdigest()[:16]}.jar"
    if not jar.exists():
        _compile(sources, resources, jar)
    return str(jar)


def _compile(sources: list[Path], resources: list[Path], jar: Path) -> None:
    jars = sorted(_spark_jars().glob("*.jar"))
    compiler = [j for j in jars if j.name.startswith(("janino-", "commons-compiler-"))]
    if len(compiler) != 2:
        raise DeltaJvmExtensionError(f"Spark's Janino compiler was not found in {_spark_jars()}")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        command = [
            _java(),
            "-cp",
            os.pathsep.join(map(str, compiler)),
            _JANINO_MAIN,
            "-d",
            str(classes),
            "-classpath",
            os.pathsep.join(map(str, jars)),
            *map(str, sources),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        built = sorted(classes.rglob("*.class"))
        if done.returncode != 0 or not built:
            output = (done.stderr or done.stdout)[-2000:]
            raise DeltaJvmExtensionError(f"compiling delta-pyspark's JVM helper failed: {output}")
        staged = Path(tmp) / jar.name
        with zipfile.ZipFile(staged, "w") as out:
            for cls in built:
                out.write(cls, cls.relative_to(classes).as_posix())
            for resource in resources:  # e.g. the ServiceLoader entry naming ``DeltaSource``
                out.write(resource, resource.relative_to(SOURCES).as_posix())
        os.replace(staged, jar)  # concurrent builders write the same bytes: last one wins


def with_extension_jar(jars: str | None) -> str:
    """``spark.jars`` with the helper jar added (kept once)."""
    listed = [j for j in (jars or "").split(",") if j]
    jar = extension_jar()
    return ",".join([*listed, jar] if jar not in listed else listed)
