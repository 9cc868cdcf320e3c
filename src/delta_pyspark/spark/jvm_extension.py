"""delta-pyspark's JVM helper: Java classes Spark's Parquet scans of tables run.

Dropping the rows deletion vectors mark has no cheap form in Spark's public API: a join
against the deleted positions made scans 2-2.5x slower than scans of the same rows
without vectors, a per-row filter above the scan 1.5-2x. ``DeletionVectorParquetFormat``
is Spark's Parquet format whose reader drops them batch by batch inside the scan.
``FileScans`` gives a scan its own split size without changing the user's session.
``DeltaSource`` is the ``delta`` data source Spark resolves itself (registered through the
jar's ``META-INF/services``), whose ``DeltaFileIndex`` asks the Python core for the files
of each scan (``planner``); ``DeltaSparkExtensions`` is the session extension it needs.

The Java sources under ``java/`` are compiled when a session is configured
(``configure_spark_with_delta``) with Janino, the compiler Spark itself ships, so a Java
runtime suffices (no JDK). The jar is cached per source and Spark version and goes on
the driver's and executors' class path through ``spark.jars``. They subclass Spark's
internal ``ParquetFileFormat`` and build on its vector classes: they are written for the
Spark version pinned in ``pyproject.toml``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap64

from delta_pyspark.exceptions import DeltaJvmExtensionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCES = Path(__file__).parent / "java"
_JANINO_MAIN = "org.codehaus.commons.compiler.samples.CompilerDemo"


def _spark_jars() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "delta-pyspark"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def extension_jar() -> str:
    """Path of the helper jar, compiled on first use for these sources and this Spark."""
    import pyspark

    sources = sorted(SOURCES.rglob("*.java"))
    resources = sorted(p for p in (SOURCES / "META-INF").rglob("*") if p.is_file())
    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in sources + resources:
        digest.update(src.relative_to(SOURCES).as_posix().encode() + src.read_bytes())
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


def helper_class(spark: SparkSession, class_name: str) -> Any | None:
    """Helper class ``class_name`` in the session's JVM; None if the helper jar is not on
    its class path."""
    from py4j.java_gateway import JavaClass

    cls = spark._jvm
    for part in class_name.split("."):
        cls = getattr(cls, part)
    return cls if isinstance(cls, JavaClass) else None


def new_object(spark: SparkSession, class_name: str) -> Any:
    """A new instance of helper class ``class_name`` in the session's JVM."""
    cls = helper_class(spark, class_name)
    if cls is None:
        raise DeltaJvmExtensionError(
            f"this SparkSession lacks delta-pyspark's JVM helper ({class_name}), which reading "
            "tables with deletion vectors needs: build the session with "
            "delta_pyspark.configure_spark_with_delta(builder).getOrCreate(): it adds the "
            "helper jar to spark.jars before the JVM starts (a later spark.jars setting on "
            "the builder must keep it)"
        )
    return cls()


def deleted_rows(spark: SparkSession, vectors: Iterable[tuple[str, BitMap64]]) -> Any:
    """A ``DeletedRows`` holding each file's (``_metadata.file_path``) deleted rows."""
    paths, bitmaps = bytearray(), bytearray()
    for path, rows in vectors:
        paths += path.encode() + b"\0"
        bitmaps += rows.serialize()
    deleted = new_object(spark, "deltapyspark.DeletedRows")
    deleted.addAll(paths, bitmaps)
    return deleted
