"""MERGE INTO, one job per module: ``builder`` (the public builder), ``clauses``,
``command`` (one execution, its steps in that module's docstring), ``planning``
(condition analysis, key-range pruning), ``source``, ``matching`` (phase 1),
``projection`` (clause evaluation), the write strategies ``copy_on_write``,
``positional`` and ``deletion_vectors``, ``inserts``, ``changes`` (change data feed)
and ``metrics``."""

from delta_pyspark.spark.commands.merge.builder import DeltaMergeBuilder
from delta_pyspark.spark.commands.merge.clauses import MergeClause
from delta_pyspark.spark.commands.merge.command import MergeCommand

__all__ = ["DeltaMergeBuilder", "MergeClause", "MergeCommand"]
