"""The Delta client side of catalog-managed tables (PROTOCOL.md "Catalog-managed tables").

``Catalog`` resolves table names to locations and hands out ``DeltaLog`` handles whose
commits go through ``CatalogCommitter``: the commit is written to
``_delta_log/_staged_commits/<v>.<uuid>.json``, the catalog ratifies it (the commit
point), then it is published to ``<v>.json`` in version order. Readers ask the catalog
for the ratified commits it still stores and list published files only up to its latest
version. Path-based access to such a table is refused by the ``catalogManaged`` feature.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from delta_pyspark.core.catalog.database import (
    CatalogBackend,
    CommitConflictError,
    Ratification,
    TableAlreadyExistsError,
    TableEntry,
    open_backend,
)
from delta_pyspark.core.log.segment import commit_name, log_dir_of
from delta_pyspark.core.protocol.schema import parse_schema_string
from delta_pyspark.core.protocol.table_features import protocol_for, with_features
from delta_pyspark.core.protocol.table_properties import is_protocol_key
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.commit_coordinator import (
    STAGED_COMMITS_DIR,
    CommitCoordinator,
    RatifiedCommits,
    staged_commit_name,
)
from delta_pyspark.core.storage.locations import normalise, parent
from delta_pyspark.core.storage.log_store import LogStore, log_store_for
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
    FileAlreadyExistsError,
    UnsupportedTableFeatureError,
)

if TYPE_CHECKING:
    from delta_pyspark.core.catalog.multi_table import MultiTableTransaction

log = logging.getLogger(__name__)

CATALOG_MANAGED = "catalogManaged"
ICT_PROPERTY = "delta.enableInCommitTimestamps"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _require_catalog_fields(data: bytes) -> None:
    """Writers of catalog-managed tables must record ``inCommitTimestamp`` and ``txnId``
    in ``commitInfo`` (the first action): refuse a commit without them."""
    first = json.loads(data.split(b"\n", 1)[0] or b"{}")
    info = first.get("commitInfo") if isinstance(first, dict) else None
    if not isinstance(info, dict) or "inCommitTimestamp" not in info or "txnId" not in info:
        raise DeltaAnalysisException(
            "a commit to a catalog-managed table needs commitInfo.inCommitTimestamp and "
            f"commitInfo.txnId (in-commit timestamps must stay enabled: {ICT_PROPERTY}=true)"
        )


class CatalogCommitter(CommitCoordinator):
    """Commits of one catalog-managed table: stage, ratify in the catalog, publish.

    ``registering``: the table is new; ratifying version 0 also registers its name, in
    the same database transaction.
    """

    def __init__(
        self,
        backend: CatalogBackend,
        entry: TableEntry,
        store: LogStore,
        auto_publish: bool = True,
        registering: bool = False,
        permits_maintenance: bool = False,
    ) -> None:
        self.backend = backend
        self.entry = entry
        self.store = store
        self.auto_publish = auto_publish
        self.permits_maintenance = permits_maintenance
        self.log_dir = log_dir_of(entry.location)
        self.staged_dir = f"{self.log_dir}/{STAGED_COMMITS_DIR}"
        self._registering = registering

    @property
    def table_id(self) -> str:
        return self.entry.table_id

    def ratified_commits(self, start: int = 0, end: int | None = None) -> RatifiedCommits:
        if self._registering:
            return RatifiedCommits(-1, ())
        latest, stored = self.backend.ratified_commits(self.table_id, start, end)
        if not stored:
            return RatifiedCommits(latest, ())
        listed = {
            s.name: s for s in self.store.list_from(self.staged_dir, f"{stored[0].version:020d}")
        }
        out = []
        for c in stored:
            status = listed.get(c.staged_name)
            if status is None:
                raise CorruptLogError(
                    f"{self.staged_dir}/{c.staged_name}: the catalog's ratified commit "
                    f"{c.version} of {self.entry.name!r} is missing"
                )
            out.append((c.version, status))
        return RatifiedCommits(latest, tuple(out))

    def stage(self, version: int, data: bytes) -> str:
        """Write a proposed commit; its existence alone means nothing (until ratified)."""
        _require_catalog_fields(data)
        name = staged_commit_name(version, str(uuid.uuid4()))
        self.store.write_if_absent(f"{self.staged_dir}/{name}", data)
        return name

    def commit(self, version: int, data: bytes) -> None:
        ratification = Ratification(self.table_id, version, self.stage(version, data))
        try:
            if self._registering:
                if version != 0:
                    raise DeltaIllegalArgumentException("a new table starts at version 0")
                self.backend.register(self.entry, ratification)
                self._registering = False
            else:
                self.backend.ratify([ratification])
        except CommitConflictError as e:
            raise FileAlreadyExistsError(str(e)) from None
        if self.auto_publish:
            self.publish_quietly()

    def publish(self) -> list[int]:
        """Copy every ratified, unpublished commit to ``<v>.json``, in version order, and
        record each in the catalog; safe to repeat and to run concurrently."""
        _, stored = self.backend.ratified_commits(self.table_id)
        done = []
        for c in stored:
            data = self.store.read(f"{self.staged_dir}/{c.staged_name}")
            target = f"{self.log_dir}/{commit_name(c.version)}"
            try:
                self.store.write_if_absent(target, data)
            except FileAlreadyExistsError:
                if self.store.read(target) != data:
                    raise CorruptLogError(
                        f"{target} exists but differs from the ratified commit "
                        f"{c.staged_name}: a filesystem writer bypassed the catalog"
                    ) from None
            self.backend.mark_published(self.table_id, c.version)
            done.append(c.version)
        return done

    def publish_quietly(self) -> None:
        """Publish after a commit; a failure leaves the commit ratified (readers get it
        from the catalog) and a later ``publish`` finishes the job."""
        try:
            self.publish()
        except Exception:
            log.exception("publishing %s failed; run `catalog publish` later", self.entry.name)


class Catalog:
    """Tables by name on one catalog database (``Catalog.open(url)``).

    ``warehouse``: where managed tables live (default: next to a SQLite catalog file).
    ``store``: the log store for every table (default: by location scheme).
    ``auto_publish``: publish each commit right after it is ratified.
    ``allow_maintenance``: this client may VACUUM, OPTIMIZE and REORG the catalog's tables
    (the protocol prohibits it unless the catalog permits it).
    """

    def __init__(
        self,
        backend: CatalogBackend,
        warehouse: str | None = None,
        store: LogStore | None = None,
        auto_publish: bool = True,
        allow_maintenance: bool = False,
    ) -> None:
        self.backend = backend
        self.warehouse = warehouse
        self.store = store
        self.auto_publish = auto_publish
        self.allow_maintenance = allow_maintenance

    @classmethod
    def open(
        cls,
        url: str,
        warehouse: str | None = None,
        store: LogStore | None = None,
        auto_publish: bool = True,
        allow_maintenance: bool = False,
    ) -> Catalog:
        backend = open_backend(url)
        if warehouse is None and hasattr(backend, "path"):
            warehouse = parent(str(backend.path))  # beside the SQLite file
        return cls(backend, warehouse, store, auto_publish, allow_maintenance)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _store_for(self, location: str) -> LogStore:
        return self.store or log_store_for(location)

    # ------------------------------------------------------------ registry

    def table(self, name: str) -> TableEntry:
        return self.backend.get(name)

    def tables(self) -> list[TableEntry]:
        return self.backend.list_tables()

    def _has(self, name: str) -> bool:
        try:
            self.backend.get(name)
        except DeltaTableNotFoundError:
            return False
        return True

    def create_table(
        self,
        name: str,
        schema_string: str,
        partition_columns: list[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        location: str | None = None,
        catalog_managed: bool = True,
        description: str | None = None,
    ) -> Snapshot:
        """Create and register a table (managed when ``location`` is None).

        A catalog-managed table gets reader 3 / writer 7 with ``catalogManaged`` and
        ``inCommitTimestamp``; its version 0 is ratified together with its registration.
        """
        if not _NAME.match(name):
            raise DeltaIllegalArgumentException(
                f"invalid table name {name!r}: use letters, digits and underscores, "
                "optionally dotted (schema.table)"
            )
        if self._has(name):  # checked before anything is written (registration re-checks)
            raise TableAlreadyExistsError(f"the catalog already has a table named {name!r}")
        managed = location is None
        if location is None:
            if self.warehouse is None:
                raise DeltaIllegalArgumentException(
                    f"catalog {self.backend.url} has no warehouse directory: give the table a "
                    "location or open the catalog with warehouse=..."
                )
            location = f"{self.warehouse.rstrip('/')}/{name}"
        store = self._store_for(location)
        if store.is_dir(log_dir_of(location)):
            raise TableAlreadyExistsError(f"{location} already holds a Delta log")
        conf = dict(configuration or {})
        if not catalog_managed:
            snapshot = create_table(
                DeltaLog(location, store),
                schema_string,
                partition_columns,
                conf,
                None,
                name,
                description,
            )
            self.backend.register(TableEntry.new(name, location, managed, False))
            return snapshot
        if conf.get(ICT_PROPERTY, "true").lower() != "true":
            raise DeltaIllegalArgumentException(
                f"a catalog-managed table needs in-commit timestamps: {ICT_PROPERTY} cannot "
                f"be {conf[ICT_PROPERTY]!r}"
            )
        conf[ICT_PROPERTY] = "true"
        schema = parse_schema_string(schema_string)
        protocol = with_features(protocol_for(schema, conf), {CATALOG_MANAGED, "inCommitTimestamp"})
        # feature requests and protocol versions shape the protocol, never the configuration
        conf = {k: v for k, v in conf.items() if not is_protocol_key(k)}
        entry = TableEntry.new(name, location, managed, True)
        committer = CatalogCommitter(
            self.backend, entry, store, self.auto_publish, registering=True
        )
        return create_table(
            DeltaLog(location, store, committer),
            schema_string,
            partition_columns,
            conf,
            protocol,
            name,
            description,
        )

    def register_table(self, name: str, location: str) -> TableEntry:
        """Register an existing filesystem table by name (external, not catalog-managed)."""
        try:
            snapshot = DeltaLog(location, self._store_for(location)).snapshot()
        except UnsupportedTableFeatureError as e:
            if CATALOG_MANAGED not in e.features:
                raise
            raise DeltaUnsupportedOperationException(
                f"{location} is a catalog-managed table (of its own catalog): it cannot be "
                "registered as a filesystem table"
            ) from None
        entry = TableEntry.new(name, snapshot.table_root, False, False)
        self.backend.register(entry)
        return entry

    def drop_table(self, name: str) -> TableEntry:
        """Remove ``name`` from the catalog; the files stay (purge them separately)."""
        return self.backend.unregister(name)

    # ------------------------------------------------------------ reading and writing

    def committer(self, name: str) -> CatalogCommitter:
        entry = self.table(name)
        if not entry.catalog_managed:
            raise DeltaUnsupportedOperationException(
                f"table {name!r} is not catalog-managed: its commits are not the catalog's"
            )
        return CatalogCommitter(
            self.backend,
            entry,
            self._store_for(entry.location),
            self.auto_publish,
            permits_maintenance=self.allow_maintenance,
        )

    def coordinator_for(self, location: str) -> CatalogCommitter | None:
        """The committer of the catalog-managed table at ``location`` (None: none there), for
        ``delta_log.set_coordinator_resolver``."""
        root = normalise(location)
        for entry in self.tables():
            if entry.catalog_managed and normalise(entry.location) == root:
                return self.committer(entry.name)
        return None

    def delta_log(self, name: str) -> DeltaLog:
        """The table's log handle; catalog-managed tables commit and read via the catalog."""
        entry = self.table(name)
        store = self._store_for(entry.location)
        if not entry.catalog_managed:
            return DeltaLog(entry.location, store)
        return DeltaLog(entry.location, store, self.committer(name))

    def snapshot(self, name: str, version: int | None = None) -> Snapshot:
        return self.delta_log(name).snapshot(version)

    def snapshots(self, names: Sequence[str]) -> dict[str, Snapshot]:
        """Snapshots of several tables at ONE catalog state: a multi-table commit is in all
        of them or in none."""
        return self.snapshots_of({n: self.delta_log(n) for n in names})

    def snapshots_of(self, logs: Mapping[str, DeltaLog]) -> dict[str, Snapshot]:
        """``snapshots`` for handles already open (of this catalog's tables)."""
        committers = {
            n: lg.coordinator
            for n, lg in logs.items()
            if isinstance(lg.coordinator, CatalogCommitter)
        }
        latest = self.backend.latest_versions([c.table_id for c in committers.values()])
        return {
            n: lg.snapshot(latest[committers[n].table_id] if n in committers else None)
            for n, lg in logs.items()
        }

    def begin(self, name: str) -> Transaction:
        """A transaction on the table's latest snapshot."""
        lg = self.delta_log(name)
        return Transaction(lg, lg.snapshot())

    def publish(self, name: str) -> list[int]:
        """Publish the table's ratified commits (recovers after a crash); the versions."""
        return self.committer(name).publish()

    def transaction(
        self, on_step: Callable[[str, str | None], None] | None = None, others_alone: bool = False
    ) -> MultiTableTransaction:
        """An atomic transaction over several catalog-managed tables of this catalog
        (``others_alone``: see ``MultiTableTransaction``)."""
        from delta_pyspark.core.catalog.multi_table import MultiTableTransaction

        return MultiTableTransaction(self, on_step, others_alone)
