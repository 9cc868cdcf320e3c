"""One set of S3 settings for Spark's S3A connector and the log's object store.

Spark reads and writes data files through Hadoop's S3A connector, configured by
``fs.s3a.*`` settings (``spark.hadoop.fs.s3a.*`` confs); the core commits to the log through
``obstore``, configured by deltalake's option names. A table is only consistent when both
talk to the same endpoint with the same credentials, so the engine derives the log's options
from the session's S3A settings (per-bucket ``fs.s3a.bucket.<name>.*`` ones over the
global ones) whenever the core opens a bucket that ``configure_storage`` did not configure.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from delta_pyspark.core.storage import object_store
from delta_pyspark.spark.jvm.bridge import hadoop_settings

#: S3A setting -> deltalake/obstore option with the same meaning
_S3A_OPTIONS = {
    "endpoint.region": "AWS_REGION",
    "access.key": "AWS_ACCESS_KEY_ID",
    "secret.key": "AWS_SECRET_ACCESS_KEY",
    "session.token": "AWS_SESSION_TOKEN",
}


def s3_options(s3a: Mapping[str, str], bucket: str) -> dict[str, str]:
    """obstore's options for ``bucket`` from S3A settings (names after ``fs.s3a.``)."""
    prefix = f"bucket.{bucket}."
    merged = {k: v for k, v in s3a.items() if not k.startswith("bucket.")}
    merged |= {k[len(prefix) :]: v for k, v in s3a.items() if k.startswith(prefix)}
    options = {_S3A_OPTIONS[k]: v for k, v in merged.items() if k in _S3A_OPTIONS and v}
    secure = merged.get("connection.ssl.enabled", "true").strip().lower() != "false"
    endpoint = merged.get("endpoint", "").strip()
    if endpoint:
        if "://" not in endpoint:
            endpoint = f"{'https' if secure else 'http'}://{endpoint}"
        options["AWS_ENDPOINT_URL"] = endpoint
    if not secure or endpoint.startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    if "path.style.access" in merged:
        path_style = merged["path.style.access"].strip().lower() == "true"
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if path_style else "true"
    return options


def share_s3_settings(spark: SparkSession) -> None:
    """Let the core open S3 buckets with ``spark``'s S3A settings (until another session
    is enabled)."""

    def source(bucket_url: str) -> dict[str, str]:
        if urlparse(bucket_url).scheme != "s3":
            return {}
        return s3_options(hadoop_settings(spark, "fs.s3a."), urlparse(bucket_url).netloc)

    object_store.use_options_source(source)
