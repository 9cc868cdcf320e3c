"""What Spark's plans say, read from the JVM: an analysed filter's condition, the qualifiers
of a plan's output, the optimiser's size estimate, the expressions under a projection.

Engine modules ask these questions with DataFrames and get plain Python answers; only this
module walks Catalyst's objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pyspark.sql import DataFrame

from delta_pyspark.spark.jvm.bridge import java_frame, jvm, sql_conf

_EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."

Finding = Literal["not_a_projection", "udf", "per_query", "aggregate", "nondeterministic"]


def filter_condition_sql(filtered: DataFrame) -> str:
    """The SQL of the condition of ``filtered``, a DataFrame whose analysed plan is a
    ``Filter`` (Spark resolves the column names); raises when it is not."""
    return str(java_frame(filtered).queryExecution().analyzed().condition().sql())


def output_qualifiers(df: DataFrame) -> set[str]:
    """The relation names (aliases) ``df``'s columns can be qualified with, lower-cased."""
    output = java_frame(df).queryExecution().analyzed().output()
    names: set[str] = set()
    for i in range(output.size()):
        qualifier = output.apply(i).qualifier()
        names.update(str(qualifier.apply(j)).lower() for j in range(qualifier.size()))
    return names


def within_broadcast_threshold(df: DataFrame) -> bool:
    """Whether Spark's size estimate of ``df`` is within its broadcast-join threshold, the
    test Spark applies before broadcasting either side of a join."""
    threshold = int(sql_conf(df.sparkSession).autoBroadcastJoinThreshold())
    size = java_frame(df).queryExecution().optimizedPlan().stats().sizeInBytes()
    return 0 <= int(size) <= threshold


def unpersist_checkpoint(df: DataFrame) -> None:
    """Free the blocks of a ``localCheckpoint``ed DataFrame now rather than when the
    driver's garbage collector gets to its RDD."""
    java_frame(df).queryExecution().analyzed().rdd().unpersist(False)


def first_disallowed_expression(
    projected: DataFrame, per_query: frozenset[str]
) -> tuple[Finding, str] | None:
    """Walk the one expression ``projected`` selects, top-down below its alias, for what a
    generated column may not use: a user-defined function, an expression in ``per_query``
    (class names: deterministic for Spark, yet different each query), an aggregate, a
    non-deterministic expression. The first found and its SQL, or None."""
    plan = java_frame(projected).queryExecution().analyzed()
    if plan.getClass().getSimpleName() != "Project":
        return "not_a_projection", ""
    classes = jvm(projected.sparkSession).java.lang.Class
    udf = classes.forName(_EXPRESSIONS + "UserDefinedExpression")
    aggregate = classes.forName(_EXPRESSIONS + "aggregate.AggregateExpression")
    pending: list[Any] = [plan.projectList().apply(0).child()]
    while pending:
        node = pending.pop()
        finding: Finding | None = None
        if udf.isInstance(node):
            finding = "udf"
        elif node.getClass().getSimpleName() in per_query:
            finding = "per_query"
        elif aggregate.isInstance(node):
            finding = "aggregate"
        elif not node.deterministic():
            finding = "nondeterministic"
        if finding is not None:
            return finding, str(node.sql())
        children = node.children()
        pending.extend(children.apply(i) for i in reversed(range(children.size())))
    return None
