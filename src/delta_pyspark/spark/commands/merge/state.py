"""What every merge step may use: the command's fields (set by ``MergeCommand``) and, for the
type checker only, the steps one mixin calls on another. The mixins each hold one step and
share this base so each can be read (and checked) alone; at run time the class adds nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

    from delta_pyspark.core.protocol.actions import AddFile, Protocol, RemoveFile
    from delta_pyspark.core.protocol.schema import StructField, StructType
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.snapshot.snapshot import Snapshot
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction
    from delta_pyspark.spark.commands.merge.clauses import MergeClause
    from delta_pyspark.spark.commands.merge.matching import _Matches


class _MergeState:
    """The fields of one merge execution and the cross-step calls (see the module doc)."""

    spark: SparkSession
    log: DeltaLog
    alias: str | None  # the target's alias in the condition and clauses
    source: DataFrame
    condition: Any  # str | Column
    clauses: tuple[MergeClause, ...]
    matched: list[MergeClause]
    inserts: list[MergeClause]
    by_source: list[MergeClause]
    evolve: bool  # schema evolution: ``*`` clauses may add the source's columns
    broadcast_source: bool
    preserved: tuple[str, str] | None  # row tracking's columns, when kept
    protocol: Protocol | None  # the target's (its generated columns); set by ``run``
    # the join key when a probe may find the matches (``_KeyProbe._probe_key``)
    probe_key: tuple[str, SparkColumn] | None
    matched_by_source_row: bool  # ``_Plan.matched_by_source_row``

    if TYPE_CHECKING:
        # projection
        def _codes(self) -> list[tuple[int, MergeClause]]: ...

        def _action(
            self,
            tgt: DataFrame | None,
            src: DataFrame,
            source_present: SparkColumn | None,
            include_inserts: bool,
        ) -> SparkColumn: ...

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
        ) -> DataFrame: ...

        def _values(
            self,
            tgt: DataFrame | None,
            src: DataFrame,
            schema: StructType,
            updates_only: bool = False,
        ) -> list[SparkColumn]: ...

        def _generated(self, df: DataFrame, schema: StructType, src: DataFrame) -> DataFrame: ...

        def _clause_value(
            self,
            clause: MergeClause,
            field: StructField,
            schema: StructType,
            current: SparkColumn,
            src: DataFrame,
            source_cols: dict[str, str],
        ) -> SparkColumn | None: ...

        # matching
        def _target(
            self, snapshot: Snapshot, files: Any, with_row_ids: bool = False
        ) -> DataFrame: ...

        def _join(
            self, tgt: DataFrame, src: DataFrame, cond: SparkColumn, how: str
        ) -> DataFrame: ...

        def _updates_from_source(self, schema: StructType, src: DataFrame) -> bool: ...

        def _upserts_every_source_row(self, schema: StructType) -> bool: ...

        # key probe
        def _probe_fits(
            self,
            txn: Transaction,
            snapshot: Snapshot,
            schema: StructType,
            candidates: Any,
            rows: int,
        ) -> bool: ...

        # inserts
        def _unmatched(
            self,
            snapshot: Snapshot,
            src: DataFrame,
            source_rows: int,
            candidates: Any,
            found: _Matches,
        ) -> DataFrame: ...

        # deletion vectors
        def _updates_of_source_rows(
            self, src: DataFrame, schema: StructType, marks: np.ndarray | None
        ) -> DataFrame: ...

        # metrics
        def _metrics(
            self,
            snapshot: Snapshot,
            touched: Any,
            counts: dict[int, int],
            adds: list[AddFile],
            removes: list[RemoveFile],
            scan_ms: int,
            start: float,
        ) -> dict[str, Any]: ...
