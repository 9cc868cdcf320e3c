"""MERGE's WHEN clauses: the clause record and the checks on their order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.commands.conditions import condition_sql


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause: ``when`` is matched | notMatched | notMatchedBySource."""

    when: str
    action: str  # update | delete | insert
    condition: Any = None  # str | Column | None
    assignments: Mapping[str, Any] | None = None  # None with star
    star: bool = False  # updateAll / insertAll

    def describe(self) -> dict[str, str]:
        out = {"actionType": self.action + ("All" if self.star else "")}
        if self.condition is not None:
            out["predicate"] = condition_sql(self.condition) or ""
        return out


def _validate_clauses(clauses: tuple[MergeClause, ...]) -> None:
    if not clauses:
        raise DeltaAnalysisException("a MERGE needs at least one WHEN clause")
    for when, label in (
        ("matched", "MATCHED"),
        ("notMatched", "NOT MATCHED"),
        ("notMatchedBySource", "NOT MATCHED BY SOURCE"),
    ):
        group = [c for c in clauses if c.when == when]
        if any(c.condition is None for c in group[:-1]):
            raise DeltaAnalysisException(
                f"when a MERGE has several WHEN {label} clauses, only the last one may omit "
                "its condition (an earlier unconditional clause would hide the later ones)"
            )
