"""What the merge condition says about the target: target-only conjuncts, join key
equalities, and the candidate files they (with the source's key range) prune to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.expressions.nodes import (
    And,
    Column,
    Comparison,
    Expr,
    In,
    Literal,
    and_all,
    columns_of,
    conjuncts,
    map_columns,
)
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.spark.commands.conditions import condition_sql
from delta_pyspark.spark.commands.merge.source import _SourceSummary
from delta_pyspark.spark.commands.merge.state import _MergeState
from delta_pyspark.spark.conf import session_time_zone
from delta_pyspark.spark.jvm.plans import output_qualifiers
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame


# Join key types whose source min/max can prune target files exactly like Spark compares them.
_RANGE_TYPES = {"byte", "short", "integer", "long", "string", "date", "decimal"}


@dataclass
class _Plan:
    """What the merge condition says about the target, for pruning and the read set."""

    target_predicate: Expr | None
    key_pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]  # (target path, source path)
    only_keys: bool = False  # the condition is the key equalities alone
    # every matched clause's condition reads source columns only (or there is none)
    matched_by_source_row: bool = False


class _Planning(_MergeState):
    """Condition analysis and candidate files."""

    def _plan(self, snapshot: Snapshot, src: DataFrame) -> _Plan:
        expr = parse_predicate(condition_sql(self.condition) or "true")
        target_names = {f.name.lower() for f in snapshot.schema.fields}
        source_names = {c.lower() for c in src.columns}
        source_aliases = output_qualifiers(src)
        alias = self.alias.lower() if self.alias else None

        def side(path: tuple[str, ...]) -> str | None:
            # Spark resolves ``x.y`` as column y of relation x before field y of column x.
            head = path[0].lower()
            if alias and len(path) > 1 and head == alias:
                return "target"
            if len(path) > 1 and head in source_aliases:
                return "source"
            if head in target_names and head not in source_names:
                return "target"
            if head in source_names and head not in target_names:
                return "source"
            if len(path) > 1 and head not in target_names:
                return "source"  # qualified by the source's alias
            return None

        def strip(path: tuple[str, ...]) -> tuple[str, ...]:
            return path[1:] if alias and len(path) > 1 and path[0].lower() == alias else path

        target_only, keys = [], []
        parts = conjuncts(expr)
        for conj in parts:
            sides = {side(c) for c in columns_of(conj)}
            if sides == {"target"}:
                target_only.append(map_columns(conj, strip))
            elif (
                isinstance(conj, Comparison)
                and conj.op == "="  # not <=>: null keys match there, and min/max skip them
                and isinstance(conj.left, Column)
                and isinstance(conj.right, Column)
            ):
                pair = {
                    side(conj.left.path): conj.left.path,
                    side(conj.right.path): conj.right.path,
                }
                if set(pair) == {"target", "source"}:
                    keys.append((strip(pair["target"]), pair["source"]))

        def on_source(condition: Any) -> bool:
            if condition is None:
                return True
            try:
                parsed = parse_predicate(condition_sql(condition) or "true")
            except Exception:  # beyond our parser: not known to read the source only
                return False
            return all(side(c) == "source" for c in columns_of(parsed))

        by_source_row = all(on_source(c.condition) for c in self.matched)
        return _Plan(and_all(target_only), keys, len(keys) == len(parts), by_source_row)

    def _plan_for(self, snapshot: Snapshot, src: DataFrame) -> _Plan:
        if not self.by_source:
            return self._plan(snapshot, src)
        try:  # only the join keys are used (every target row is a candidate)
            return self._plan(snapshot, src)
        except Exception:
            return _Plan(None, [])

    def _candidates(
        self,
        txn: Transaction,
        snapshot: Snapshot,
        plan: _Plan,
        keys: list[tuple[str, SparkColumn]],
        summary: _SourceSummary,
    ) -> Any:
        """Files that may hold a matching target row; records the read predicate."""
        if self.by_source:
            txn.read_whole_table()  # every unmatched target row may change
            return snapshot.files
        parts = [plan.target_predicate] if plan.target_predicate is not None else []
        key_predicate = _key_predicate(keys, summary)
        if key_predicate is not None:
            parts.append(key_predicate)
        predicate = and_all(parts)
        if predicate is None:
            txn.read_whole_table()
            return snapshot.files
        txn.read_predicate(predicate, session_time_zone(self.spark))
        return prune_files(snapshot, predicate, session_time_zone(self.spark))

    def _join_keys(
        self, snapshot: Snapshot, src: DataFrame, plan: _Plan
    ) -> list[tuple[str, SparkColumn]]:
        """Equality keys (target column, source column) of the merge condition whose types
        are equal on both sides and compare exactly (so the source's min/max can prune and
        distinct source values are distinct join keys)."""
        from pyspark.sql import functions as F

        usable = []
        for target_path, source_path in plan.key_pairs:
            if len(target_path) != 1:
                continue
            field = snapshot.schema.find_field(target_path[0], case_sensitive=False)
            if field is None or _type_family(field.type) not in _RANGE_TYPES:
                continue
            source_col = F.col(".".join(f"`{p}`" for p in source_path))
            try:
                source_type = src.select(source_col).schema.fields[0].dataType
            except Exception:  # not a plain source column
                continue
            if source_type != to_spark_type(field.type):
                continue
            usable.append((field.name, source_col))
        return usable


def _key_predicate(keys: list[tuple[str, Any]], summary: _SourceSummary) -> Expr | None:
    """The source's join keys as a target predicate: ``k IN (...)`` or a range."""
    if not keys or summary.rows == 0:
        return None
    terms: list[Expr] = []
    for i, (name, _) in enumerate(keys):
        column = Column((name,))
        if summary.mins[i] is None:
            return In(column, ())  # only null keys: no target row can match
        if summary.sets is not None:
            terms.append(In(column, summary.sets[i]))
        else:
            terms.append(
                And(
                    Comparison(">=", column, Literal(summary.mins[i])),
                    Comparison("<=", column, Literal(summary.maxs[i])),
                )
            )
    return and_all(terms)


def _type_family(dt: Any) -> str:
    from delta_pyspark.core.protocol.schema import type_name

    return type_name(dt).split("(")[0]
