"""delta-pyspark's JVM helper: building the jar, and ``DeletedRows`` holding files' rows.

How its Parquet format drops rows is tested through reads (``test_deletion_vector_scan``).
"""

from __future__ import annotations

import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError
from pyroaring import BitMap64
from pyspark.errors import IllegalArgumentException

from delta_pyspark.exceptions import DeltaJvmExtensionError, DeltaUnsupportedOperationException
from delta_pyspark.spark.jvm import bridge, helper_jar
from delta_pyspark.spark.jvm.bridge import new_object
from delta_pyspark.spark.jvm.helper_jar import extension_jar, with_extension_jar
from delta_pyspark.spark.jvm.helpers import deleted_rows


def _deleted_rows(spark: Any, vectors: dict[str, list[int]]) -> Any:
    return deleted_rows(spark, ((p, BitMap64(v)) for p, v in vectors.items()))


def test_jar_is_compiled_once_per_source_and_spark_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = Path(extension_jar())
    assert jar.parent == tmp_path / "delta-pyspark"
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert {
        "deltapyspark/DeletedRows.class",
        "deltapyspark/DeletionVectorParquetFormat.class",
        "deltapyspark/DeletionVectorReader.class",
        "deltapyspark/FileScans.class",
        "deltapyspark/DeltaSource.class",
        "deltapyspark/DeltaFileIndex.class",
    } <= names
    with zipfile.ZipFile(jar) as z:  # how Spark's ServiceLoader finds format "delta"
        services = "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
        assert z.read(services).decode().split() == ["deltapyspark.DeltaSource"]
    built = jar.stat().st_mtime_ns
    assert Path(extension_jar()) == jar and jar.stat().st_mtime_ns == built
    assert with_extension_jar("a.jar") == f"a.jar,{jar}"
    assert with_extension_jar(f"a.jar,{jar}") == f"a.jar,{jar}"  # configured twice: once


def test_a_source_that_does_not_compile_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = tmp_path / "java" / "deltapyspark"
    sources.mkdir(parents=True)
    (sources / "Broken.java").write_text("package deltapyspark; public class Broken { int x = ; }")
    monkeypatch.setattr(helper_jar, "SOURCES", tmp_path / "java")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(DeltaJvmExtensionError, match="compiling delta-pyspark's JVM helper failed"):
        extension_jar()
    assert not list((tmp_path / "cache" / "delta-pyspark").glob("*.jar"))


def test_a_session_without_the_helper_is_told_how_to_get_it(spark: Any) -> None:
    with pytest.raises(DeltaJvmExtensionError, match="configure_spark_with_delta"):
        new_object(spark, "deltapyspark.NoSuchHelper")


def test_deleted_rows_holds_each_files_rows(spark: Any) -> None:
    rng = random.Random(11)
    vectors = {
        "file:/t/a.parquet": sorted(rng.sample(range(5_000), 300)),
        "file:/t/b%20c.parquet": [0, 1, 2, 4_999],
        "file:/t/d.parquet": [7],
        "file:/t/e.parquet": [],
        "file:/t/f.parquet": [5, 2**31, 2**32 - 1, 2**32, 7 * 2**32 + 3],  # several buckets
    }
    deleted = _deleted_rows(spark, vectors)
    for path, rows in vectors.items():
        assert list(deleted.rowsOf(path)) == rows, path
    assert deleted.toString() == "DeletedRows(310 rows in 5 files)"


def test_deleted_rows_refuses_unknown_files_and_bad_input(spark: Any) -> None:
    deleted = _deleted_rows(spark, {"file:/t/a.parquet": [3]})
    with pytest.raises(Py4JJavaError, match=r"no deletion vector was loaded for .*/x\.parquet"):
        deleted.rowsOf("file:/t/x.parquet")
    # PySpark turns java.lang.IllegalArgumentException into its own IllegalArgumentException
    with pytest.raises(IllegalArgumentException, match=r"two deletion vectors for .*/a\.parquet"):
        _deleted_rows(spark, {"file:/t/a.parquet": [1]}).addAll(
            bytearray(b"file:/t/a.parquet\0"), bytearray(BitMap64([2]).serialize())
        )
    with pytest.raises(IllegalArgumentException, match="4 bytes left after the last bitmap"):
        new_object(spark, "deltapyspark.DeletedRows").addAll(
            bytearray(b"file:/t/b.parquet\0"), bytearray(BitMap64([2]).serialize() + b"junk")
        )
    truncated = BitMap64(range(0, 10_000, 3)).serialize()[:-5]
    with pytest.raises(Py4JJavaError):
        new_object(spark, "deltapyspark.DeletedRows").addAll(
            bytearray(b"file:/t/c.parquet\0"), bytearray(truncated)
        )


def test_equal_vectors_make_equal_scans(spark: Any) -> None:
    one = _deleted_rows(spark, {"file:/t/a.parquet": [1, 5], "file:/t/b.parquet": [2]})
    same = _deleted_rows(spark, {"file:/t/b.parquet": [2], "file:/t/a.parquet": [1, 5]})
    other = _deleted_rows(spark, {"file:/t/a.parquet": [1, 6], "file:/t/b.parquet": [2]})
    assert one.equals(same) and one.hashCode() == same.hashCode()
    assert not one.equals(other)
    assert one.toString() == "DeletedRows(3 rows in 2 files)"


def test_spark_4_0_to_4_3_are_accepted_and_others_refused_by_name() -> None:
    for version in ("4.0.1", "4.1.4", "4.2.1", "4.3.0"):
        helper_jar.check_spark_version(version)
    for version in ("3.5.1", "4.4.0", "5.0.0"):
        with pytest.raises(
            DeltaJvmExtensionError, match=rf"PySpark 4\.0 to 4\.3 .* has PySpark {version}"
        ):
            helper_jar.check_spark_version(version)


def test_each_spark_version_compiles_the_newest_versioned_files_not_newer_than_it() -> None:
    def versioned(version: str) -> dict[str, str]:
        chosen = helper_jar.helper_sources(version)
        apart = [p for p in chosen if helper_jar.VERSIONED_SOURCES in p.parents]
        common = {p.name for p in chosen} - {p.name for p in apart}
        assert common >= {"DeltaSqlParser.java", "Products.java"}
        return {p.name: p.parent.parent.name for p in apart}

    assert versioned("4.0.1") == {
        "SparkVersion.java": "spark-4.0",
        "VersionedParser.java": "spark-4.0",
    }
    assert versioned("4.2.1") == {
        "ParameterizedParser.java": "spark-4.1",
        "SparkVersion.java": "spark-4.0",
        "VersionedParser.java": "spark-4.1",
    }
    assert versioned("4.3.0") == {
        "ParameterizedParser.java": "spark-4.1",
        "SparkVersion.java": "spark-4.3",
        "VersionedParser.java": "spark-4.3",
    }


def test_a_builder_for_a_remote_connect_server_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    with pytest.raises(DeltaUnsupportedOperationException, match="Spark Connect"):
        configure_spark_with_delta(SparkSession.builder.remote("sc://localhost:15002"))
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost:15002")
    with pytest.raises(DeltaUnsupportedOperationException, match="Spark Connect"):
        configure_spark_with_delta(SparkSession.builder.appName("connect"))

    class ConnectLike:  # what a Spark Connect session lacks: a JVM session behind it
        pass

    with pytest.raises(DeltaUnsupportedOperationException, match="classic SparkSession"):
        bridge.classic_session(ConnectLike())  # type: ignore[arg-type]


def test_internal_plans_stop_recording_call_sites_until_the_last_use_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyspark.errors.utils as origins

    monkeypatch.setattr(origins, "_enable_debugging_cache", True)
    with bridge.internal_plans():
        assert origins.is_debugging_enabled() is False
        with bridge.internal_plans():
            assert origins.is_debugging_enabled() is False
        assert origins.is_debugging_enabled() is False  # the outer use still runs
    assert origins.is_debugging_enabled() is True
    with pytest.raises(ValueError, match="inside"), bridge.internal_plans():
        raise ValueError("inside")
    assert origins.is_debugging_enabled() is True


@pytest.mark.parametrize("command", ["merge", "update", "delete"])
def test_dml_commands_record_no_call_sites_of_their_own(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """The call sites a command's plans would record all point into delta-pyspark; each
    cost ~10 py4j calls (0.1-0.2 s per MERGE)."""
    import pyspark.errors.utils as origins
    from pyspark.sql import functions as F

    from delta_pyspark.tables import DeltaTable

    path = str(tmp_path / "t")
    spark.range(10).withColumn("v", F.col("id") * 10).write.format("delta").save(path)
    source = spark.range(5, 15).withColumn("v", F.lit(-1).cast("long"))
    table = DeltaTable.forPath(spark, path)
    recorded: list[str] = []
    capture = origins._capture_call_site
    monkeypatch.setattr(origins, "_enable_debugging_cache", True)
    monkeypatch.setattr(
        origins, "_capture_call_site", lambda depth: recorded.append("x") or capture(depth)
    )
    if command == "merge":
        merge = table.alias("t").merge(source.alias("s"), "t.id = s.id")
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        expected = [(i, i * 10) for i in range(5)] + [(i, -1) for i in range(5, 15)]
    elif command == "update":
        table.update("id >= 5", {"v": "-1"})
        expected = [(i, i * 10) for i in range(5)] + [(i, -1) for i in range(5, 10)]
    else:
        table.delete("id >= 5")
        expected = [(i, i * 10) for i in range(5)]
    assert recorded == []
    rows = spark.read.format("delta").load(path).orderBy("id").collect()
    assert [tuple(r) for r in rows] == expected
    assert len(recorded) > 0  # a user's own DataFrame calls still record theirs


def test_a_merge_converts_no_jvm_error(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the source's observed row count and key range raised (and converted) a Java
    ``NoSuchElementException`` at the end of PySpark's iteration of the JVM map."""
    from pyspark.errors.exceptions import captured
    from pyspark.sql import functions as F

    from delta_pyspark.tables import DeltaTable

    path = str(tmp_path / "t")
    spark.range(0, 20, 2).write.format("delta").save(path)
    converted: list[Any] = []
    convert = captured.convert_exception
    monkeypatch.setattr(captured, "convert_exception", lambda e: converted.append(e) or convert(e))
    source = spark.range(5).select((F.col("id") * 3).alias("id"))
    table = DeltaTable.forPath(spark, path).alias("t")
    table.merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    assert converted == []
    ids = [r.id for r in spark.read.format("delta").load(path).orderBy("id").collect()]
    assert ids == [0, 2, 3, 4, 6, 8, 9, 10, 12, 14, 16, 18]
