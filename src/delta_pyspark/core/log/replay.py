"""Action reconciliation (PROTOCOL.md "Action Reconciliation").

The state of version ``v`` is the checkpoint's state plus the commits after it,
where the newest action for each logical file ``(path, deletionVector.uniqueId)``
wins. The checkpoint side stays columnar: its file list is filtered with one
``is_in`` against the keys the later commits touch, never walked row by row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.log.arrow_buffers import combined, empty_table, int64_array
from delta_pyspark.core.log.commit_actions import CommitActions
from delta_pyspark.core.log.commit_batch import CommitBatch
from delta_pyspark.core.log.logical_files import KEY_COLUMN, action_key, with_keys
from delta_pyspark.core.protocol.actions import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    file_actions_to_arrow,
)

# What a state holds besides its files: protocol, metadata, transactions, domains, commitInfo.
_Others = tuple[
    Protocol | None,
    Metadata | None,
    dict[str, SetTransaction],
    dict[str, DomainMetadata],
    CommitInfo | None,
]


@dataclass
class TableState:
    """Reconciled state of one version; ``files``/``tombstones`` carry a ``_key`` column."""

    version: int
    protocol: Protocol | None
    metadata: Metadata | None
    txns: dict[str, SetTransaction]
    domains: dict[str, DomainMetadata]
    files: pa.Table
    tombstones: pa.Table
    commit_info: CommitInfo | None = None
    # Rows the last ``apply`` appended at the end of ``files`` and ``tombstones``: the
    # rest was in the state it was applied to (incremental validation checks only these).
    appended: tuple[int, int] = field(default=(0, 0), compare=False)
    # The rows of the previous state's ``files`` the last ``apply`` dropped (a mask over
    # them; None: none): ``files`` is the rest of them, in order, then the appended rows.
    dropped: pa.BooleanArray | None = field(default=None, compare=False)

    def apply(self, version: int, commits: Iterable[CommitActions] | CommitBatch) -> TableState:
        """The state after ``commits`` (in order): newest action per logical file wins."""
        if isinstance(commits, CommitBatch):
            return self._apply_batch(version, commits)
        commits = list(commits)
        others = self._other_actions(commits)
        adds: dict[str, AddFile] = {}
        removes: dict[str, RemoveFile] = {}
        for c in commits:
            # Within one commit an add and a remove of the same key cannot both be valid;
            # across commits the later one wins, so removes go first, then adds.
            for r in c.removes:
                k = action_key(r)
                adds.pop(k, None)
                removes[k] = r
            for a in c.adds:
                k = action_key(a)
                removes.pop(k, None)
                adds[k] = a
        touched = pa.array(list(adds.keys() | removes.keys()), pa.string())
        new_files = new_tombstones = None
        if adds:
            new_files = file_actions_to_arrow(list(adds.values()), ADD_SCHEMA)
            new_files = new_files.append_column(
                KEY_COLUMN, pa.array(list(adds.keys()), pa.string())
            )
        if removes:
            new_tombstones = file_actions_to_arrow(list(removes.values()), REMOVE_SCHEMA)
            new_tombstones = new_tombstones.append_column(
                KEY_COLUMN, pa.array(list(removes.keys()), pa.string())
            )
        return self._with(
            version,
            others,
            new_files,
            new_tombstones,
            touched,
        )

    def _apply_batch(self, version: int, batch: CommitBatch) -> TableState:
        """``apply`` for commits parsed column-wise: the same reconciliation, run over the
        keys only, picks the rows of ``batch.adds``/``batch.removes`` that survive."""
        others = self._other_actions(batch.commits)
        add_keys = batch.adds.column(KEY_COLUMN).to_pylist()
        remove_keys = batch.removes.column(KEY_COLUMN).to_pylist()
        adds: dict[str, int] = {}
        removes: dict[str, int] = {}
        if not remove_keys:
            # Same order and winners as the loop below: a repeated key keeps its first
            # position and takes its last row.
            adds = dict(zip(add_keys, range(len(add_keys)), strict=True))
        else:
            a = r = 0
            add_commits, remove_commits = batch.add_commits, batch.remove_commits
            for index in range(len(batch.commits)):
                # Removes first, then adds, as in ``apply``.
                while r < len(remove_keys) and remove_commits[r] == index:
                    k = remove_keys[r]
                    adds.pop(k, None)
                    removes[k] = r
                    r += 1
                while a < len(add_keys) and add_commits[a] == index:
                    k = add_keys[a]
                    removes.pop(k, None)
                    adds[k] = a
                    a += 1
        new_files = _take_rows(batch.adds, list(adds.values()))
        new_tombstones = _take_rows(batch.removes, list(removes.values()))
        touched = pa.concat_arrays(
            [
                combined(new_files.column(KEY_COLUMN)),
                combined(new_tombstones.column(KEY_COLUMN)),
            ]
        )
        return self._with(
            version,
            others,
            new_files,
            new_tombstones,
            touched,
        )

    def _other_actions(self, commits: Iterable[CommitActions]) -> _Others:
        """Protocol, metadata, transactions, domains and the last ``commitInfo`` after
        ``commits``: each newest one wins."""
        protocol, metadata = self.protocol, self.metadata
        txns, domains = dict(self.txns), dict(self.domains)
        commit_info = None
        for c in commits:
            protocol = c.protocol or protocol
            metadata = c.metadata or metadata
            for t in c.txns:
                txns[t.app_id] = t
            for d in c.domains:
                domains[d.domain] = d
            commit_info = c.commit_info
        return protocol, metadata, txns, domains, commit_info

    def _with(
        self,
        version: int,
        others: _Others,
        new_files: pa.Table | None,
        new_tombstones: pa.Table | None,
        touched: pa.Array,
    ) -> TableState:
        """This state with ``others`` replaced, the ``touched`` keys' old rows dropped and
        the new rows appended."""
        protocol, metadata, txns, domains, commit_info = others
        files, dropped = _drop_keys(self.files, touched)
        tombstones, _ = _drop_keys(self.tombstones, touched)
        added_files = new_files.num_rows if new_files is not None else 0
        added_tombstones = new_tombstones.num_rows if new_tombstones is not None else 0
        if new_files is not None and added_files:
            files = pa.concat_tables([files, new_files.cast(files.schema)])
        if new_tombstones is not None and added_tombstones:
            tombstones = pa.concat_tables([tombstones, new_tombstones.cast(tombstones.schema)])
        return TableState(
            version,
            protocol,
            metadata,
            txns,
            {k: d for k, d in domains.items() if not d.removed},
            files,
            tombstones,
            commit_info,
            (added_files, added_tombstones),
            dropped,
        )


def _take_rows(table: pa.Table, rows: list[int]) -> pa.Table:
    if rows == list(range(table.num_rows)):
        return table
    return table.take(int64_array(rows))


# Dropping a few rows keeps the rest in place as slices (one more chunk per dropped row)
# while the file list stays within this many chunks; past it rows are copied out.
_MAX_CHUNKS = 2048


def _drop_keys(table: pa.Table, keys: pa.Array) -> tuple[pa.Table, pa.BooleanArray | None]:
    """``table`` without the rows of ``keys``, and the mask of the rows dropped (None: none)."""
    if len(keys) == 0 or table.num_rows == 0:
        return table, None
    hit = pc.is_in(table.column(KEY_COLUMN), value_set=keys)
    hits = pc.sum(hit).as_py() or 0
    if hits == 0:
        return table, None  # e.g. commits that only add new files: no copy of the file list
    hit = combined(hit)
    if table.column(KEY_COLUMN).num_chunks + hits > _MAX_CHUNKS:
        return table.filter(pc.invert(hit)), hit
    # A commit removing a few of a million files: no copy of the million (the file list
    # is mostly strings, and a copy of it costs as much time as reading the checkpoint).
    pieces, start = [], 0
    for row in pc.indices_nonzero(hit).to_pylist():
        if row > start:
            pieces.append(table.slice(start, row - start))
        start = row + 1
    if start < table.num_rows or not pieces:
        pieces.append(table.slice(start))
    return pa.concat_tables(pieces), hit


def empty_state() -> TableState:
    return TableState(
        -1,
        None,
        None,
        {},
        {},
        with_keys(empty_table(ADD_SCHEMA)),
        with_keys(empty_table(REMOVE_SCHEMA)),
    )
