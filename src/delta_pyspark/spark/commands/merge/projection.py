"""Clause evaluation: which clause applies to a joined row and the column values it writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyspark.core.protocol.generated_columns import generation_expressions
from delta_pyspark.core.protocol.identity_columns import identity_info, is_identity
from delta_pyspark.core.protocol.schema import StructField, StructType
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.columns.generated_columns import recompute
from delta_pyspark.spark.columns.identity import identity_values
from delta_pyspark.spark.commands.conditions import as_column, assigned_value, resolve_assignments
from delta_pyspark.spark.commands.merge.clauses import MergeClause
from delta_pyspark.spark.commands.merge.common import _ACTION, _SOURCE_MARK, COPY, DROP
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame


class _Projection(_MergeState):
    """Per-row clause choice and the values the chosen clause writes."""

    def _codes(self) -> list[tuple[int, MergeClause]]:
        return list(enumerate(self.clauses))

    def _action(
        self,
        tgt: DataFrame | None,
        src: DataFrame,
        source_present: SparkColumn | None,
        include_inserts: bool,
    ) -> SparkColumn:
        """The index of the first clause that applies to each joined row (COPY / DROP if none)."""
        from pyspark.sql import functions as F

        branches = []
        for code, clause in self._codes():
            cond = F.lit(True) if clause.condition is None else as_column(clause.condition)
            cond = F.coalesce(cond, F.lit(False))
            if clause.when == "matched" and source_present is not None and tgt is not None:
                branches.append((source_present & cond, code))
            elif clause.when == "notMatchedBySource" and source_present is not None:
                branches.append((~source_present & cond, code))
            elif clause.when == "notMatched" and include_inserts:
                branches.append((cond, code))
        result = None
        for when, code in branches:
            result = F.when(when, F.lit(code)) if result is None else result.when(when, code)
        fallback = F.lit(COPY if tgt is not None else DROP)
        return fallback if result is None else result.otherwise(fallback)

    def _project(
        self,
        joined: DataFrame,
        tgt: DataFrame | None,
        src: DataFrame,
        schema: StructType,
        source_present: SparkColumn | None,
        copies: bool = True,
        row_ids: bool = False,
        tracking: bool = True,
    ) -> DataFrame:
        """Rows written for ``joined``: clause results in table column order, deletes dropped
        (and unchanged target rows too unless ``copies``); ``row_ids`` keeps the target's
        ``FILE_PATH`` and ``ROW_INDEX``; ``tracking``: then row tracking's columns, when the
        table preserves row ids (``_tracking``)."""
        from pyspark.sql import functions as F

        action = self._action(tgt, src, source_present, include_inserts=tgt is None)
        cols = self._values(tgt, src, schema)
        ids = [tgt[c] for c in (FILE_PATH, ROW_INDEX)] if row_ids and tgt is not None else []
        kept_ids = self._tracking(tgt) if tracking else []
        with_action = self._generated(
            joined.select(action.alias(_ACTION), *cols, *kept_ids, *ids), schema, src
        )
        deletes = [code for code, c in self._codes() if c.action == "delete"]
        dropped = [DROP, *deletes] if copies else [DROP, COPY, *deletes]
        kept = with_action.where(~F.col(_ACTION).isin(dropped))
        return kept.drop(_ACTION)

    def _tracking(self, tgt: DataFrame | None) -> list[SparkColumn]:
        """Row tracking's materialized columns of the rows written: a target row keeps its
        stable id, and its commit version only when copied unchanged (updated rows take
        the commit's); inserted rows get neither (fresh ids). [] without row tracking."""
        from pyspark.sql import functions as F

        if self.preserved is None:
            return []
        id_col, version_col = self.preserved
        if tgt is None:
            return [F.lit(None).cast("long").alias(c) for c in (id_col, version_col)]
        version = F.when(F.col(_ACTION) == COPY, tgt[f"`{version_col}`"])
        return [tgt[f"`{id_col}`"].alias(id_col), version.alias(version_col)]

    def _values(
        self,
        tgt: DataFrame | None,
        src: DataFrame,
        schema: StructType,
        updates_only: bool = False,
    ) -> list[SparkColumn]:
        """The table's columns as the clause chosen in ``_ACTION`` sets them (a lateral
        reference: select them with ``_ACTION``). ``updates_only``: the values only matter
        for rows an update clause chose, so a column every update clause assigns does not
        reference the target's current value (Spark then need not read it)."""
        from pyspark.sql import functions as F

        source_cols = {c.lower(): c for c in src.columns if c != _SOURCE_MARK}
        cols = []
        for field in schema.fields:
            spark_type = to_spark_type(field.type)
            if tgt is not None and field.name in tgt.columns:
                current = tgt[f"`{field.name}`"]
            elif tgt is None and is_identity(field):  # an insert not giving it a value
                current = identity_values(src.sparkSession, identity_info(field))
            else:
                current = F.lit(None).cast(spark_type)
            value, assigned_by_all = None, True
            for code, clause in self._codes():
                if clause.action == "delete" or (clause.when == "notMatched") != (tgt is None):
                    continue
                new = self._clause_value(clause, field, schema, current, src, source_cols)
                if new is None:
                    assigned_by_all = False
                    continue
                new = new.cast(spark_type)
                test = F.col(_ACTION) == code
                value = F.when(test, new) if value is None else value.when(test, new)
            if value is None:
                column = current
            elif updates_only and assigned_by_all:
                column = value
            else:
                column = value.otherwise(current)
            cols.append(column.alias(field.name))
        return cols

    def _generated(self, df: DataFrame, schema: StructType, src: DataFrame) -> DataFrame:
        """``df`` (table columns and ``_ACTION``) with each generated column recomputed from
        the new values for the rows of the clauses that do not set it."""
        generated = generation_expressions(schema, self.protocol)
        if not generated:
            return df
        source_cols = {c.lower() for c in src.columns if c != _SOURCE_MARK}
        unset: dict[str, list[int]] = {name: [] for name in generated}
        for code, clause in self._codes():
            if clause.action == "delete":
                continue
            assigned = (
                source_cols
                if clause.star
                else {
                    k.lower()
                    for k in resolve_assignments(schema, clause.assignments or {}, "MERGE")
                }
            )
            for name in generated:
                if name.lower() not in assigned:
                    unset[name].append(code)
        return recompute(df, schema, self.protocol, _ACTION, dict(unset))

    def _clause_value(
        self,
        clause: MergeClause,
        field: StructField,
        schema: StructType,
        current: SparkColumn,
        src: DataFrame,
        source_cols: dict[str, str],
    ) -> SparkColumn | None:
        """The value ``clause`` gives ``field`` (None: leave it as it is)."""
        if clause.star:
            name = source_cols.get(field.name.lower())
            if name is not None:
                return src[f"`{name}`"]
            if self.evolve or field.name in generation_expressions(schema, self.protocol):
                return None  # a target-only column keeps its value (null when inserting)
            raise DeltaAnalysisException(
                f"{clause.action}All: the source has no column {field.name!r} "
                f"(source columns: {sorted(source_cols.values())})"
            )
        grouped = resolve_assignments(schema, clause.assignments or {}, f"MERGE {clause.action}")
        assignments = grouped.get(field.name)
        if assignments is None:
            return None
        if clause.action == "insert" and any(path for path, _ in assignments):
            raise DeltaAnalysisException(
                f"MERGE insert: assign whole columns, not nested fields ({field.name})"
            )
        return assigned_value(current, assignments)
