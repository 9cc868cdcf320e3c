"""The public merge builder (``DeltaTable.merge(...)``): collects WHEN clauses, runs the merge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark import arguments
from delta_pyspark.spark.commands.merge.clauses import MergeClause
from delta_pyspark.spark.commands.merge.command import MergeCommand
from delta_pyspark.spark.conf import auto_merge

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class DeltaMergeBuilder:
    """delta-spark's merge builder: add WHEN clauses in order, then ``execute()``."""

    def __init__(
        self,
        spark: SparkSession,
        log: DeltaLog,
        target_alias: str | None,
        source: DataFrame,
        condition: Any,
        clauses: tuple[MergeClause, ...] = (),
        schema_evolution: bool = False,
    ) -> None:
        self._spark = spark
        self._log = log
        self._alias = target_alias
        self._source = source
        self._condition = condition
        self._clauses = clauses
        self._evolve = schema_evolution

    def _with(self, clause: MergeClause) -> DeltaMergeBuilder:
        arguments.check_condition(clause.condition)
        return DeltaMergeBuilder(
            self._spark,
            self._log,
            self._alias,
            self._source,
            self._condition,
            (*self._clauses, clause),
            self._evolve,
        )

    def whenMatchedUpdate(
        self, condition: Any = None, set: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        assignments = _assignments(set, "'set' in whenMatchedUpdate", condition, self._alias)
        return self._with(MergeClause("matched", "update", condition, assignments))

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("matched", "update", condition, None, star=True))

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("matched", "delete", condition))

    def whenNotMatchedInsert(
        self, condition: Any = None, values: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        assignments = _assignments(
            values, "'values' in whenNotMatchedInsert", condition, self._alias
        )
        return self._with(MergeClause("notMatched", "insert", condition, assignments))

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("notMatched", "insert", condition, None, star=True))

    def whenNotMatchedBySourceUpdate(
        self, condition: Any = None, set: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        assignments = _assignments(
            set, "'set' in whenNotMatchedBySourceUpdate", condition, self._alias
        )
        return self._with(MergeClause("notMatchedBySource", "update", condition, assignments))

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._with(MergeClause("notMatchedBySource", "delete", condition))

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        return DeltaMergeBuilder(
            self._spark,
            self._log,
            self._alias,
            self._source,
            self._condition,
            self._clauses,
            True,
        )

    def execute(self) -> DataFrame:
        """Run the merge; a DataFrame of num_affected/updated/deleted/inserted rows."""
        evolve = self._evolve or auto_merge(self._spark)
        metrics = MergeCommand(
            self._spark,
            self._log,
            self._alias,
            self._source,
            self._condition,
            self._clauses,
            evolve,
        ).run()
        updated = metrics["numTargetRowsUpdated"]
        deleted = metrics["numTargetRowsDeleted"]
        inserted = metrics["numTargetRowsInserted"]
        return self._spark.createDataFrame(
            [(updated + deleted + inserted, updated, deleted, inserted)],
            "num_affected_rows long, num_updated_rows long, "
            "num_deleted_rows long, num_inserted_rows long",
        )


def _assignments(
    value: Any, name: str, condition: Any, target_alias: str | None
) -> Mapping[str, Any]:
    """A clause's ``set``/``values``, checked as delta-spark checks them (before the
    clause's condition), not empty, and with target columns named without the target's
    alias (``{"t.key": ...}`` sets ``key``, as Spark resolves ``t.key`` against the target)."""
    checked = arguments.check_assignments(value, name)
    arguments.check_condition(condition)
    if not checked:
        raise DeltaAnalysisException(f"{name} needs at least one column assignment")
    if target_alias is None:
        return checked
    prefix = f"{target_alias.lower()}."
    return {k[len(prefix) :] if k.lower().startswith(prefix) else k: v for k, v in checked.items()}
