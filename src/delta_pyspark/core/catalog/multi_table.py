"""Multi-table transactions on catalog-managed tables of one catalog.

Each table opened in the transaction gets an ordinary ``Transaction``. At commit every
table's next version is staged, then the catalog ratifies all of them in ONE database
transaction, or none. When another writer won a table's version, that table alone runs
its conflict checks against the winners (as a single-table retry would), is staged
again at the next free version, and the ratification is retried.

Isolation: each table keeps its own level (WriteSerializable by default) against the
commits that raced it; on top, the commit is atomic and readers going through the
catalog (``Catalog.snapshots``) see all of its versions or none. A table opened but
left unchanged still commits an empty version, so what was read from it is checked for
conflicts too. It does not make reads of tables outside the transaction repeatable,
and a reader that loads tables one at a time (not via ``snapshots``) may see one table
before and another after a commit.

Durability: a crash before ratification leaves only staged files nobody reads; a crash
after it leaves the commit visible through the catalog and ``Catalog.publish`` (or the
next commit) copies it to ``<v>.json``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from delta_pyspark.core.catalog.database import CommitConflictError, Ratification
from delta_pyspark.core.catalog.managed_tables import Catalog, CatalogCommitter
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction, set_commit_collector
from delta_pyspark.exceptions import DeltaError, DeltaUnsupportedOperationException

log = logging.getLogger(__name__)

StepHook = Callable[[str, str | None], None]
"""Called with ``(step, table)`` before each step: ``stage`` (per table), ``ratify``,
``publish`` (per table). Tests use it to inject failures and crashes."""


class MultiTableTransaction:
    """``with catalog.transaction() as tx: tx.table("a").add_files(...)`` commits on exit
    without an exception; ``commit()`` can also be called explicitly."""

    def __init__(self, catalog: Catalog, on_step: StepHook | None = None) -> None:
        self.catalog = catalog
        self.id = str(uuid.uuid4())
        self._on_step = on_step
        self._txns: dict[str, Transaction] = {}
        self._committers: dict[str, CatalogCommitter] = {}
        self._prepared: set[str] = set()  # collected commits, prepared by their own operation
        self.committed: dict[str, Snapshot] | None = None

    def tables(self, *names: str) -> list[Transaction]:
        """Transactions of ``names``, the ones not yet open read at one catalog state."""
        new = [n for n in dict.fromkeys(names) if n not in self._txns]
        logs = {}
        for name in new:
            committer = self.catalog.committer(name)
            self._committers[name] = committer
            logs[name] = DeltaLog(committer.entry.location, committer.store, committer)
        for name, snapshot in self.catalog.snapshots_of(logs).items():
            self._txns[name] = Transaction(logs[name], snapshot)
        return [self._txns[n] for n in names]

    def table(self, name: str) -> Transaction:
        return self.tables(name)[0]

    def _step(self, step: str, table: str | None) -> None:
        if self._on_step is not None:
            self._on_step(step, table)

    def commit(
        self, operation: str = "WRITE", parameters: Mapping[str, Any] | None = None
    ) -> dict[str, Snapshot]:
        """Commit every open table atomically; the new snapshots by table name.

        A conflict with a concurrent commit raises the table's typed
        ``DeltaConcurrentModificationException`` and nothing is committed anywhere.
        """
        if self.committed is not None:
            raise DeltaError("multi-table transaction already committed")
        if not self._txns:
            raise DeltaError("a multi-table transaction needs at least one table")
        names = sorted(self._txns, key=lambda n: self._committers[n].table_id)
        params = {"multiTableTransaction": self.id, "tables": sorted(names), **(parameters or {})}
        for name in names:
            if name not in self._prepared:
                self._txns[name].prepare_commit(operation, params)
        staged: dict[str, Ratification] = {}
        while True:
            for name in names:
                if name not in staged:
                    self._step("stage", name)
                    txn, committer = self._txns[name], self._committers[name]
                    version = txn.pending_version
                    file = committer.stage(version, txn.next_attempt())
                    staged[name] = Ratification(committer.table_id, version, file)
            self._step("ratify", None)
            try:
                self.catalog.backend.ratify([staged[n] for n in names])
                break
            except CommitConflictError as e:
                for name in names:
                    if self._committers[name].table_id in e.latest:
                        self._txns[name].rebase_past_winners()  # raises on a real conflict
                        del staged[name]
        for name in names:
            try:
                self._step("publish", name)
                if self.catalog.auto_publish:
                    self._committers[name].publish()
            except Exception:  # committed already: a later publish finishes the job
                log.exception("publishing %s failed; run `catalog publish` later", name)
        self.committed = {name: self._txns[name].finish_commit() for name in names}
        return self.committed

    @contextmanager
    def collecting(self) -> Iterator[MultiTableTransaction]:
        """Within the block, commits of this catalog's catalog-managed tables made anywhere in
        the process (an engine's writes and DML) join this transaction instead of
        committing alone, each with its own operation: one per table. Other tables commit
        as usual. Leaving the block commits them all atomically; an exception commits none."""
        previous = set_commit_collector(self._collect)
        if previous is not None:
            set_commit_collector(previous)
            raise DeltaUnsupportedOperationException(
                "another multi-table transaction is collecting this process's commits"
            )
        try:
            yield self
        finally:
            set_commit_collector(None)
        if self._txns and self.committed is None:
            self.commit()

    def _collect(
        self,
        txn: Transaction,
        operation: str,
        parameters: Mapping[str, Any] | None,
        metrics: Mapping[str, Any] | None,
        user_metadata: str | None,
    ) -> bool:
        committer = txn.log.coordinator
        if not isinstance(committer, CatalogCommitter) or committer.backend is not (
            self.catalog.backend
        ):
            return False  # not this catalog's: commits alone, outside the atomic set
        name = committer.entry.name
        if txn.snapshot is None:
            raise DeltaUnsupportedOperationException(
                f"creating {name} inside a multi-table transaction: create it first"
            )
        if name in self._txns:
            raise DeltaUnsupportedOperationException(
                f"{operation} on {name}: the multi-table transaction already writes it (one "
                "operation per table, which reads the table as it was before the transaction)"
            )
        params = {**(parameters or {}), "multiTableTransaction": self.id}
        txn.prepare_commit(operation, params, metrics, user_metadata)
        self._txns[name] = txn
        self._committers[name] = committer
        self._prepared.add(name)
        return True

    def __enter__(self) -> MultiTableTransaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and self.committed is None:
            self.commit()
