"""Several tables of one catalog read at ONE catalog state.

The catalog ratifies a multi-table commit in one database transaction, so reading every
table's latest ratified version in one statement (``latest_versions``) gives a state in
which each such commit is wholly present or wholly absent. The state is taken at the first
read and kept: later reads of any of the catalog's tables see that state too (a table
created since is read as it is when first asked for). A multi-table transaction reads
through one; the Spark engine gives each query execution one.
"""

from __future__ import annotations

from delta_pyspark.core.catalog.managed_tables import Catalog, CatalogCommitter
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot


class CatalogState:
    """The catalog's tables at one state, each loaded once."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._versions: dict[str, int] | None = None  # table id -> latest ratified version
        self.logs: dict[str, DeltaLog] = {}  # by table name: the handle first read through
        self._snapshots: dict[str, Snapshot] = {}

    def committer(self, lg: DeltaLog) -> CatalogCommitter | None:
        """``lg``'s committer if it is a table of this catalog (None: it is not)."""
        c = lg.coordinator
        return c if isinstance(c, CatalogCommitter) and c.backend is self.catalog.backend else None

    def view(self, lg: DeltaLog) -> Snapshot | None:
        """``lg``'s table at the state (None: not one of this catalog's tables)."""
        committer = self.committer(lg)
        return None if committer is None else self.snapshot(committer.entry.name, lg)

    def snapshot(self, name: str, lg: DeltaLog | None = None) -> Snapshot:
        """Table ``name`` at the state, read through ``lg`` (default: a handle of its own;
        a table that is not catalog-managed is refused by name)."""
        if name not in self._snapshots:
            committer = self.catalog.committer(name) if lg is None else self.committer(lg)
            assert committer is not None
            if lg is None:
                lg = DeltaLog(committer.entry.location, committer.store, committer)
            backend = self.catalog.backend
            if self._versions is None:
                ids = [e.table_id for e in self.catalog.tables() if e.catalog_managed]
                self._versions = backend.latest_versions(ids)
            if committer.table_id not in self._versions:
                self._versions |= backend.latest_versions([committer.table_id])
            self.logs[name] = lg
            self._snapshots[name] = lg.snapshot(self._versions[committer.table_id])
        return self._snapshots[name]
