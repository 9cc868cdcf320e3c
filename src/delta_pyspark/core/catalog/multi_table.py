"""Multi-table, multi-statement transactions on catalog-managed tables of one catalog.

Reading: the transaction reads every table at ONE catalog state, taken at its first read,
and each later statement sees what earlier statements of the transaction wrote: a table's
log handle, asked for its latest snapshot inside the transaction (``transaction_scope``),
gets that state plus the transaction's pending changes (``DeltaLog.with_pending``).

Writing: each statement's commit is prepared, not committed (its data and deletion-vector
files are written, nothing in the log). At commit a table's statements become ONE commit
(``Transaction.absorb``: a file added then removed within the transaction is in neither
list), every table's commit is staged, and the catalog ratifies all of them in ONE
database transaction, or none. When another writer won a table's version, that table
alone runs its conflict checks against the winners, with everything its statements read,
at its isolation level; a conflict aborts the whole transaction with the typed conflict.

Scope: only the opener joins (its Python thread, or with Spark the JVM thread named by
the engine's probe); other threads and streaming queries commit alone as before. The
opener's commit to a table outside the catalog is refused, unless allowed to commit alone. A table
only read is not committed, so reads of it are repeatable but not checked for conflicts.
A table with change data feed takes one statement per transaction: the change data of a
combined commit would leave out the statements that wrote none.

Durability: a crash before ratification leaves only staged files nobody reads; a crash
after it leaves the commit visible through the catalog and ``Catalog.publish`` (or the
next commit) copies it to ``<v>.json``. A rollback deletes the data files its statements
wrote.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from delta_pyspark.core.catalog.catalog_state import CatalogState
from delta_pyspark.core.catalog.database import CommitConflictError, Ratification
from delta_pyspark.core.catalog.managed_tables import Catalog, CatalogCommitter
from delta_pyspark.core.changes.change_data import cdf_enabled
from delta_pyspark.core.log.commit_actions import parse_actions
from delta_pyspark.core.log.logical_files import action_key, file_keys
from delta_pyspark.core.log.table_paths import data_file_path, dv_file_path
from delta_pyspark.core.snapshot import transaction_scope
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import DeltaError, DeltaUnsupportedOperationException

log = logging.getLogger(__name__)

StepHook = Callable[[str, str | None], None]
"""Called with ``(step, table)`` before each step: ``stage`` (per table), ``ratify``,
``publish`` (per table). Tests use it to inject failures and crashes."""

# The operation of a commit that holds several statements; they are listed in its parameters.
COMBINED_OPERATION = "TRANSACTION"


class MultiTableTransaction:
    """``with catalog.transaction() as tx: tx.table("a").add_files(...)`` commits on exit
    without an exception; ``with catalog.transaction().collecting():`` takes in the commits
    of the block's statements; ``commit()`` and ``rollback()`` can be called explicitly."""

    def __init__(
        self, catalog: Catalog, on_step: StepHook | None = None, others_alone: bool = False
    ) -> None:
        """``others_alone``: a statement's commit to a table that is not one of the catalog's
        goes ahead alone, at once (by default it is refused: it could not be rolled back)."""
        self.catalog = catalog
        self.others_alone = others_alone
        self.id = str(uuid.uuid4())
        self._on_step = on_step
        self._state = CatalogState(catalog)  # what the transaction read its tables at
        self._paths: dict[str, set[str]] = {}
        self._txns: dict[str, Transaction] = {}  # handed out by ``tables``
        self._statements: dict[str, list[Transaction]] = {}  # collected, prepared
        self._operations: dict[str, list[str]] = {}  # the statements' operations
        self._views: dict[str, Snapshot] = {}  # tables as the statements now see them
        self.committed: dict[str, Snapshot] | None = None
        self.rolled_back = False
        self._ratified = False  # from here on the commit stands, whatever fails after
        self._outcome_unknown = False  # the catalog failed to say whether it ratified

    # ------------------------------------------------------------ reading

    def _committer(self, lg: DeltaLog) -> CatalogCommitter | None:
        return self._state.committer(lg)

    def _base(self, name: str, lg: DeltaLog | None = None) -> Snapshot:
        return self._state.snapshot(name, lg)

    def _base_paths(self, name: str) -> set[str]:
        """The paths of the files ``name`` had at the transaction's state (built once)."""
        if name not in self._paths:
            self._paths[name] = set(self._base(name).files.column("path").to_pylist())
        return self._paths[name]

    def view(self, lg: DeltaLog) -> Snapshot | None:
        """The table of ``lg`` as the transaction reads it (None: not this catalog's)."""
        committer = self._committer(lg)
        if committer is None or self._done:
            return None
        name = committer.entry.name
        return self._views.get(name) or self._base(name, lg)

    @property
    def _done(self) -> bool:
        return self._ratified or self.rolled_back

    def tables(self, *names: str) -> list[Transaction]:
        """Transactions of ``names`` on the transaction's catalog state, to fill and commit."""
        for name in names:
            if name not in self._txns:
                base = self._base(name)
                self._txns[name] = Transaction(self._state.logs[name], base)
        return [self._txns[n] for n in names]

    def table(self, name: str) -> Transaction:
        return self.tables(name)[0]

    # ------------------------------------------------------------ collecting statements

    def collect(
        self,
        txn: Transaction,
        operation: str,
        parameters: Mapping[str, Any] | None,
        metrics: Mapping[str, Any] | None,
        user_metadata: str | None,
    ) -> Snapshot | None:
        """Take a statement's commit in (``transaction_scope``): prepared now, committed with
        the transaction; returns its table as the transaction now reads it."""
        committer = self._committer(txn.log)
        if self._done:
            return None
        if committer is None:
            if self.others_alone:
                return None  # commits alone, outside the transaction
            raise DeltaUnsupportedOperationException(
                f"{operation} on {txn.log.table_root} inside a multi-table transaction: it is "
                "not a catalog-managed table of the transaction's catalog, so it would commit "
                "alone and stay if the transaction rolled back (allow that explicitly)"
            )
        name = committer.entry.name
        if txn.snapshot is None:
            raise DeltaUnsupportedOperationException(
                f"creating {name} inside a multi-table transaction: create it first"
            )
        seen = self._views.get(name) or self._base(name, txn.log)
        if txn.snapshot.version != seen.version:
            raise DeltaUnsupportedOperationException(
                f"{operation} on {name} read version {txn.snapshot.version}, not the "
                f"transaction's {seen.version}: run the whole statement inside the transaction"
            )
        statements = self._statements.setdefault(name, [])
        if statements and cdf_enabled(seen.configuration):
            raise DeltaUnsupportedOperationException(
                f"{operation} on {name}: a table with change data feed "
                "(delta.enableChangeDataFeed) takes one statement per transaction"
            )
        params = {**(parameters or {}), "multiTableTransaction": self.id}
        txn.prepare_commit(operation, params, metrics, user_metadata)
        statements.append(txn)
        self._operations.setdefault(name, []).append(operation)
        combined = self._combined(name)
        pending = parse_actions(combined.next_attempt(), f"{name}: the pending commit")
        self._views[name] = txn.log.with_pending(self._base(name), pending)
        return self._views[name]

    def _combined(
        self, name: str, operation: str = "WRITE", parameters: Mapping[str, Any] | None = None
    ) -> Transaction:
        """The one prepared commit of ``name``'s statements (and of its ``tables``
        transaction, prepared with ``operation`` and ``parameters``)."""
        parts = list(self._statements.get(name, []))
        operations = list(self._operations.get(name, []))
        own = self._txns.get(name)
        if own is not None:
            own.prepare_commit(operation, parameters)
            parts.append(own)
            operations.append(operation)
        if len(parts) == 1:
            return parts[0]
        base = self._base(name)
        combined = Transaction(self._state.logs[name], base)
        for part in parts:
            combined.absorb(part, self._base_paths(name))
        combined.prepare_commit(
            COMBINED_OPERATION,
            {**(parameters or {}), "statements": json.dumps(operations, separators=(",", ":"))},
        )
        return combined

    # ------------------------------------------------------------ committing

    def _step(self, step: str, table: str | None) -> None:
        if self._on_step is not None:
            self._on_step(step, table)

    def commit(
        self, operation: str = "WRITE", parameters: Mapping[str, Any] | None = None
    ) -> dict[str, Snapshot]:
        """Commit every changed table atomically; the new snapshots by table name.

        A conflict with a concurrent commit raises the table's typed
        ``DeltaConcurrentModificationException`` and nothing is committed anywhere.
        """
        if self._done:
            raise DeltaError("multi-table transaction already committed or rolled back")
        self._ratified = not (self._statements or self._txns)
        names = sorted(
            {*self._statements, *self._txns},
            key=lambda n: self._committer(self._state.logs[n]).table_id,  # type: ignore[union-attr]
        )
        params = {"multiTableTransaction": self.id, "tables": sorted(names), **(parameters or {})}
        finals = {name: self._combined(name, operation, params) for name in names}
        staged: dict[str, Ratification] = {}
        while names:
            for name in names:
                if name not in staged:
                    self._step("stage", name)
                    txn = finals[name]
                    committer = self._committer(txn.log)
                    assert committer is not None
                    version = txn.pending_version
                    file = committer.stage(version, txn.next_attempt())
                    staged[name] = Ratification(committer.table_id, version, file)
            self._step("ratify", None)
            self._outcome_unknown = True  # until the catalog answers either way
            try:
                self.catalog.backend.ratify([staged[n] for n in names])
                self._ratified = True
                break
            except CommitConflictError as e:
                self._outcome_unknown = False
                for name in names:
                    if staged[name].table_id in e.latest:
                        finals[name].rebase_past_winners()  # raises on a real conflict
                        del staged[name]
        for name in names:
            try:
                self._step("publish", name)
                if self.catalog.auto_publish:
                    self._committer(finals[name].log).publish()  # type: ignore[union-attr]
            except Exception:  # committed already: a later publish finishes the job
                log.exception("publishing %s failed; run `catalog publish` later", name)
        self.committed = {name: finals[name].finish_commit() for name in names}
        self._delete_unused(finals)
        return self.committed

    def _delete_unused(self, finals: Mapping[str, Transaction]) -> None:
        """Delete the data files a statement wrote and a later one replaced: no committed
        version names them."""
        for name, statements in self._statements.items():
            base, store = self._base(name), self._state.logs[name].store
            kept = {a["path"] for a in finals[name].added_files} | self._base_paths(name)
            for add in (a for s in statements for a in s.added_files):
                if add["path"] not in kept:
                    store.delete(data_file_path(base.table_root, add["path"]))

    def rollback(self) -> None:
        """Forget every statement; delete the data and deletion-vector files they wrote
        (kept when the catalog failed while ratifying: the commit may stand)."""
        if self._done:
            return
        self.rolled_back = True
        if self._outcome_unknown:
            return
        for name, statements in self._statements.items():
            base = self._base(name)
            paths = self._base_paths(name)
            keys = set(file_keys(base.files).to_pylist())
            root, store = base.table_root, self._state.logs[name].store
            for add in (a for s in statements for a in s.added_files):
                if add["path"] not in paths:
                    store.delete(data_file_path(root, add["path"]))
                vector = dv_file_path(root, add.get("deletionVector"))
                if vector is not None and action_key(add) not in keys:
                    store.delete(vector)

    def join(self, this_thread: bool = True) -> None:
        """From now on the commits of this catalog's tables made by this thread (an
        engine's writes and DML) join the transaction and its reads see the transaction's
        state (see the module docstring). ``this_thread``: see ``transaction_scope``."""
        transaction_scope.open_transaction(self, this_thread)

    def finish(self, commit: bool) -> None:
        """Leave the thread's scope, then commit (``commit``) or roll back; a commit that
        fails before its ratification is rolled back. Nothing to do when already done."""
        transaction_scope.close_transaction(self)
        if self._done:
            return
        try:
            if commit:
                self.commit()
            else:
                self.rollback()
        except BaseException:
            self.rollback()
            raise

    @contextmanager
    def collecting(self) -> Iterator[MultiTableTransaction]:
        """``join`` for the block: leaving it commits; an exception rolls back."""
        self.join()
        try:
            yield self
        except BaseException:
            self.finish(commit=False)
            raise
        self.finish(commit=True)

    def __enter__(self) -> MultiTableTransaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and not self._done:
            self.commit()
