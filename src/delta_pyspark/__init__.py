"""delta-pyspark: Delta Lake tables from PySpark.

The transaction log, snapshots and conflict checking live in the Spark-free
``delta_pyspark.core`` package; ``delta_pyspark.spark`` is the data plane; the
user-facing API is ``delta_pyspark.tables.DeltaTable`` and
``delta_pyspark.configure_spark_with_delta`` (imported lazily so the core and the
CLI never load pyspark).
"""

from typing import Any

from delta_pyspark._version import __version__ as __version__


def configure_spark_with_delta(
    builder: Any, extra_packages: list[str] | None = None, s3: bool = False
) -> Any:
    """Counterpart of delta-spark's ``configure_spark_with_delta_pip`` (``s3=True``: Hadoop's
    S3A connector for ``s3a://`` and ``s3://`` tables, see ``session``)."""
    from delta_pyspark.session import configure_spark_with_delta as configure

    return configure(builder, extra_packages, s3)


def scan_report(df: Any) -> Any:
    """Files a Delta scan kept and skipped (``ScanReport``), or None for other DataFrames."""
    from delta_pyspark.spark.sources import callback_service as planner

    return planner.scan_report(df)


def use_catalog(
    spark: Any, url: str | None, warehouse: str | None = None, allow_maintenance: bool = False
) -> Any:
    """Attach the process to a catalog of catalog-managed tables (``sqlite:///...`` or
    ``postgresql://...``; None detaches): its tables get names in ``spark`` and every read
    and write of them goes through it. Returns the core's ``Catalog``."""
    from delta_pyspark.spark.catalog.managed_tables import use_catalog as attach

    return attach(spark, url, warehouse, allow_maintenance)


def sync_catalog(spark: Any) -> list[str]:
    """Give ``spark`` names for the attached catalog's tables made since; returns them."""
    from delta_pyspark.spark.catalog.managed_tables import sync_catalog as sync

    return sync(spark)


def transaction(spark: Any, others_alone: bool = False) -> Any:
    """``with delta_pyspark.transaction(spark):`` — the block's statements on the attached
    catalog's catalog-managed tables read one catalog state, see each other's writes, and
    commit together, atomically, when it ends; readers through the catalog see all of
    them or none. An exception rolls them all back. A write to a table outside the catalog
    is refused in the block unless ``others_alone`` (then it commits alone, at once)."""
    from delta_pyspark.spark.catalog.managed_tables import transaction as open_transaction

    return open_transaction(spark, others_alone)
