"""What the running PySpark's Spark does differently, for the tests whose expectations follow
it (CI runs the suite on the oldest supported Spark and part of it on the newest)."""

from __future__ import annotations

import pyspark

SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])

#: Spark 4.1 binds ``spark.sql(text, args)``'s markers while parsing (4.0 after it), so a
#: marker is a value wherever a literal is
BINDS_MARKERS_WHILE_PARSING = SPARK >= (4, 1)


def v1_dml_refusal(operation: str) -> str:
    """Spark's refusal of ``operation`` (``MERGE INTO TABLE``, ``UPDATE TABLE``) on a table
    of a V1 source, as a pattern: 4.1 reworded it."""
    return rf"{operation} is not supported temporarily|does not support {operation}"
