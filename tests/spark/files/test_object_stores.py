"""Delta tables on S3 through Spark: data files read and written by Hadoop's S3A connector,
the log by the core's object store, both configured by the session's ``fs.s3a.*`` settings,
against the local S3 server (moto). Rows are compared and the bucket's objects inspected."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import obstore
import pytest
from obstore.store import from_url
from pyspark.sql import functions as F

from delta_pyspark.exceptions import DeltaPathNotFoundError, DeltaTableNotFoundError
from delta_pyspark.spark.files.object_stores import s3_options
from delta_pyspark.spark.files.scan import DeltaFileNotFoundError
from delta_pyspark.tables import DeltaTable
from maven_jars import S3A, maven_jars
from s3_server import S3Server


def _keys(s3_server: S3Server, s3a_bucket: str, prefix: str) -> list[str]:
    store = from_url(f"s3://{s3a_bucket}", config=_config(s3_server), client_options=_client())
    return sorted(m["path"] for batch in obstore.list(store, prefix=prefix) for m in batch)


def _config(s3_server: S3Server) -> Any:
    return {k: v for k, v in s3_server.storage_options().items() if k != "AWS_ALLOW_HTTP"}


def _client() -> Any:
    return {"allow_http": True}


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_s3a_settings_become_the_logs_store_options() -> None:
    s3a = {
        "endpoint": "minio:9000",
        "connection.ssl.enabled": "false",
        "access.key": "global",
        "secret.key": "s",
        "bucket.b1.access.key": "one",
        "bucket.b1.path.style.access": "true",
        "bucket.b2.endpoint.region": "eu-west-1",
    }
    assert s3_options(s3a, "b1") == {
        "AWS_ACCESS_KEY_ID": "one",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_ENDPOINT_URL": "http://minio:9000",
        "AWS_ALLOW_HTTP": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }
    assert s3_options(s3a, "b3")["AWS_ACCESS_KEY_ID"] == "global"
    assert s3_options({}, "b1") == {}


@pytest.mark.long  # slow: CI's second step
def test_write_read_and_dml_on_an_s3a_table(
    spark: Any, s3a_bucket: str, s3_server: S3Server
) -> None:
    path = f"s3a://{s3a_bucket}/sales"
    df = spark.range(0, 20).select(
        F.col("id"), (F.col("id") % 3).cast("string").alias("p"), (F.col("id") * 10).alias("v")
    )
    df.write.format("delta").partitionBy("p").save(path)
    spark.range(20, 25).select(
        F.col("id"), (F.col("id") % 3).cast("string").alias("p"), (F.col("id") * 10).alias("v")
    ).write.format("delta").mode("append").save(path)

    got = _rows(spark.read.format("delta").load(path))
    assert got == [(i, str(i % 3), i * 10) for i in range(25)]
    keys = _keys(s3_server, s3a_bucket, "sales/")
    assert "sales/_delta_log/00000000000000000000.json" in keys
    assert "sales/_delta_log/00000000000000000001.json" in keys
    data = [k for k in keys if k.endswith(".parquet")]
    assert data and all(k.split("/")[1] in ("p=0", "p=1", "p=2") for k in data)
    assert not [k for k in keys if "_delta_staging" in k or "_temporary" in k]

    table = DeltaTable.forPath(spark, path)
    table.delete("id < 5")
    table.update("id = 10", {"v": "-1"})
    source = spark.createDataFrame([(11, "2", 111), (100, "1", 1000)], "id long, p string, v long")
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    expected = {i: (str(i % 3), i * 10) for i in range(5, 25)}
    expected[10] = ("1", -1)
    expected[11] = ("2", 111)
    expected[100] = ("1", 1000)
    assert _rows(spark.read.format("delta").load(path)) == sorted(
        (i, p, v) for i, (p, v) in expected.items()
    )
    assert [r.operation for r in table.history().orderBy("version").collect()] == [
        "WRITE", "WRITE", "DELETE", "UPDATE", "MERGE",
    ]  # fmt: skip
    assert spark.read.format("delta").option("versionAsOf", 1).load(path).count() == 25


@pytest.mark.long  # slow: CI's second step
def test_s3_and_s3a_name_one_table_and_deltalake_reads_every_version(
    spark: Any, s3a_bucket: str, s3_server: S3Server
) -> None:
    spark.range(0, 3).write.format("delta").save(f"s3://{s3a_bucket}/t")
    spark.range(3, 5).write.format("delta").mode("append").save(f"s3a://{s3a_bucket}/t")
    DeltaTable.forPath(spark, f"s3://{s3a_bucket}/t").delete("id = 0")

    assert _rows(spark.read.format("delta").load(f"s3a://{s3a_bucket}/t")) == [
        (i,) for i in (1, 2, 3, 4)
    ]
    options = s3_server.storage_options()
    for version, ids in [(0, [0, 1, 2]), (1, [0, 1, 2, 3, 4]), (2, [1, 2, 3, 4])]:
        theirs = deltalake.DeltaTable(
            f"s3://{s3a_bucket}/t", version=version, storage_options=options
        )
        assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == ids


@pytest.mark.long  # CI's second step, for the quick run's time
def test_we_read_and_extend_a_table_deltalake_wrote_on_s3(
    spark: Any, s3a_bucket: str, s3_server: S3Server
) -> None:
    import pyarrow as pa

    options = s3_server.storage_options()
    uri = f"s3://{s3a_bucket}/theirs"
    deltalake.write_deltalake(uri, pa.table({"id": [1, 2]}), storage_options=options)
    spark.createDataFrame([(3,)], "id long").write.format("delta").mode("append").save(
        f"s3a://{s3a_bucket}/theirs"
    )
    assert _rows(spark.read.format("delta").load(f"s3a://{s3a_bucket}/theirs")) == [
        (1,),
        (2,),
        (3,),
    ]
    theirs = deltalake.DeltaTable(uri, storage_options=options)
    assert theirs.version() == 1
    assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.long  # slow: CI's second step
def test_optimize_vacuum_and_restore_on_s3(
    spark: Any, s3a_bucket: str, s3_server: S3Server, conf: Any
) -> None:
    path = f"s3a://{s3a_bucket}/m"
    for start in range(0, 40, 10):
        spark.range(start, start + 10).repartition(2).write.format("delta").mode("append").save(
            path
        )
    table = DeltaTable.forPath(spark, path)
    before = [k for k in _keys(s3_server, s3a_bucket, "m/") if k.endswith(".parquet")]
    assert len(before) == 8

    metrics = table.optimize().executeCompaction().collect()[0].metrics
    assert metrics.numFilesRemoved == 8 and metrics.numFilesAdded == 1
    conf("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    # LITE: the files OPTIMIZE removed, found in the log, without listing the bucket
    spark.sql(f"VACUUM delta.`{path}` LITE RETAIN 0 HOURS").collect()
    after = [k for k in _keys(s3_server, s3a_bucket, "m/") if k.endswith(".parquet")]
    assert len(after) == 1
    assert "m/_delta_log/_last_vacuum_info" in _keys(s3_server, s3a_bucket, "m/_delta_log/")
    assert _rows(spark.read.format("delta").load(path)) == [(i,) for i in range(40)]

    # the files of version 3 are gone: RESTORE refuses to bring back what storage lacks
    with pytest.raises(Exception, match="no longer exist"):
        table.restoreToVersion(3)
    table.restoreToVersion(4)  # the OPTIMIZE result itself
    assert spark.read.format("delta").load(path).count() == 40


def test_a_deep_clone_and_a_stream_on_s3(
    spark: Any, s3a_bucket: str, s3_server: S3Server, tmp_path: Any
) -> None:
    source = f"s3a://{s3a_bucket}/src"
    spark.range(0, 5).write.format("delta").save(source)
    DeltaTable.forPath(spark, source).clone(f"s3a://{s3a_bucket}/deep", isShallow=False)
    assert _rows(spark.read.format("delta").load(f"s3a://{s3a_bucket}/deep")) == [
        (i,) for i in range(5)
    ]
    copied = [k for k in _keys(s3_server, s3a_bucket, "deep/") if k.endswith(".parquet")]
    assert copied, "a deep clone copies the data files into the target"

    sink = f"s3a://{s3a_bucket}/sink"
    query = (
        spark.readStream.format("delta")
        .load(source)
        .writeStream.format("delta")
        .option("checkpointLocation", f"s3a://{s3a_bucket}/checkpoints/sink")
        .trigger(availableNow=True)
        .start(sink)
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert _rows(spark.read.format("delta").load(sink)) == [(i,) for i in range(5)]
    assert _keys(s3_server, s3a_bucket, "checkpoints/sink/offsets/")


def test_a_data_file_missing_from_the_bucket_is_a_typed_error(
    spark: Any, s3a_bucket: str, s3_server: S3Server
) -> None:
    path = f"s3a://{s3a_bucket}/gone"
    spark.range(0, 6).repartition(2).write.format("delta").save(path)
    victim = next(k for k in _keys(s3_server, s3a_bucket, "gone/") if k.endswith(".parquet"))
    store = from_url(f"s3://{s3a_bucket}", config=_config(s3_server), client_options=_client())
    obstore.delete(store, victim)
    with pytest.raises(DeltaFileNotFoundError, match=victim.rsplit("/", 1)[-1]) as caught:
        spark.read.format("delta").load(path).collect()
    assert f"s3a://{s3a_bucket}/gone" in str(caught.value)


def test_reading_nothing_or_a_non_delta_prefix_on_s3(spark: Any, s3a_bucket: str) -> None:
    """A prefix holding no object is PATH_NOT_FOUND; one holding files but no log is not a
    Delta table (an object store has no directories to tell them apart by)."""
    with pytest.raises(DeltaPathNotFoundError, match="Path does not exist") as caught:
        spark.read.format("delta").load(f"s3a://{s3a_bucket}/nothing").collect()
    assert caught.value.getCondition() == "PATH_NOT_FOUND"
    spark.range(2).write.parquet(f"s3a://{s3a_bucket}/plain")
    with pytest.raises(DeltaTableNotFoundError, match="not a Delta table") as caught:
        spark.read.format("delta").load(f"s3a://{s3a_bucket}/plain").collect()
    assert caught.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"


def test_the_s3_option_brings_hadoops_s3a_connector_for_pysparks_hadoop() -> None:
    import pyspark
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    builder = configure_spark_with_delta(
        SparkSession.Builder().config("spark.jars.packages", "org.example:x:1"),
        extra_packages=["org.example:y:2"],
        s3=True,
    )
    options = builder._options
    # PySpark's Hadoop: 3.4.1 in PySpark 4.0.1, 3.4.2 in 4.1, ...
    (client,) = (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")
    hadoop = client.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert options["spark.jars.packages"].split(",") == [
        "org.example:x:1",
        "org.example:y:2",
        f"org.apache.hadoop:hadoop-aws:{hadoop}",
    ]
    assert options["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    given = configure_spark_with_delta(
        SparkSession.Builder().config("spark.jars", "/jars/hadoop-aws-3.4.1.jar"), s3=True
    )
    assert "spark.jars.packages" not in given._options  # the connector's jar is given
    plain = configure_spark_with_delta(SparkSession.Builder())
    assert "spark.jars.packages" not in plain._options
    assert "spark.hadoop.fs.s3.impl" not in plain._options


@pytest.mark.long  # every step of the demo on S3: CI's second step
def test_the_demo_runs_on_an_s3a_table(
    spark: Any, s3a_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from delta_pyspark.demo import tour

    path = f"s3a://{s3a_bucket}/demo"
    tour(spark, path)
    shown = capsys.readouterr().out
    assert "refused with SchemaMismatchError" in shown
    assert "the filter read 1 of" in shown
    # RESTORE to version 1 (the first two writes) is the last change
    got = _rows(spark.read.format("delta").load(path).select("id", "name", "country"))
    names = ["alice", "bob", "carol", "dan", "eve"]
    assert got == list(zip(range(1, 6), names, ["nl", "us", "nl", "us", "fr"], strict=True))
    operations = [r.operation for r in DeltaTable.forPath(spark, path).history().collect()]
    assert operations[:3] == ["RESTORE", "OPTIMIZE", "DELETE"]


def _spark_class(*args: str, log: Path) -> subprocess.Popen[bytes]:
    import pyspark

    script = Path(pyspark.__file__).parent / "bin" / "spark-class"
    with log.open("wb") as out:
        return subprocess.Popen([str(script), *args], stdout=out, stderr=subprocess.STDOUT)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.long  # a standalone cluster of three JVMs: CI's second step
def test_a_standalone_cluster_sharing_only_the_bucket_runs_dml(
    s3_server: S3Server, tmp_path: Path
) -> None:
    bucket = s3_server.create_bucket(f"cluster-{uuid.uuid4().hex[:12]}")
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    daemons = [
        _spark_class(
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", str(_free_port()), log=tmp_path / "master.log",
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "Starting Spark master" not in (tmp_path / "master.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "master.log").read_text()
            time.sleep(0.5)
        for w in range(2):
            work = tmp_path / f"worker{w}"  # each worker its own disk: only the bucket is shared
            work.mkdir()
            daemons.append(
                _spark_class(
                    "org.apache.spark.deploy.worker.Worker", master_url, "--cores", "1",
                    "--memory", "1g", "--work-dir", str(work), "--webui-port", str(_free_port()),
                    log=tmp_path / f"worker{w}.log",
                )
            )  # fmt: skip
        jars = ",".join(str(j) for j in maven_jars(S3A))
        driver = subprocess.run(
            [
                sys.executable, str(Path(__file__).with_name("cluster_driver.py")), master_url,
                f"s3a://{bucket}/t", jars, json.dumps(s3_server.s3a_settings(bucket)),
            ],
            capture_output=True, text=True, timeout=900, cwd=tmp_path,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )  # fmt: skip
        assert driver.returncode == 0, driver.stderr[-4000:]
        result = json.loads(driver.stdout.strip().splitlines()[-1])
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
            daemon.wait(timeout=60)
    expected = {i: (str(i % 4), i * 2) for i in range(600) if i % 10 != 0}
    expected |= {i: (str(i % 4), -i * 2) for i in range(50) if i % 10 != 0}
    # the MERGE: 591-599 matched, 590 (deleted) and 600-649 inserted
    expected |= {i: (str(i % 4), i * 2 + 1) for i in range(591, 600)}
    expected |= {i: (str(i % 4), i * 2) for i in [590, *range(600, 650)]}
    assert [tuple(r) for r in result["rows"]] == sorted((i, p, v) for i, (p, v) in expected.items())
    assert result["history"] == [
        "WRITE", "WRITE", "SET TBLPROPERTIES", "DELETE", "UPDATE", "MERGE", "OPTIMIZE",
    ]  # fmt: skip
    assert result["executors"] == 2
