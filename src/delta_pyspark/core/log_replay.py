"""Action reconciliation (PROTOCOL.md "Action Reconciliation").

The state of version ``v`` is the checkpoint's state plus the commits after it,
where the newest action for each logical file ``(path, deletionVector.uniqueId)``
wins. The checkpoint side stays columnar: its file list is filtered with one
``is_in`` against the keys the later commits touch, never walked row by row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.actions import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
    file_actions_to_arrow,
)
from delta_pyspark.exceptions import CorruptLogError

KEY_COLUMN = "_key"


@dataclass
class CommitActions:
    """The actions of one commit (or compaction / JSON checkpoint) in file order."""

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    commit_info: dict[str, Any] | None = None
    txns: list[SetTransaction] = field(default_factory=list)
    domains: list[DomainMetadata] = field(default_factory=list)
    adds: list[dict[str, Any]] = field(default_factory=list)
    removes: list[dict[str, Any]] = field(default_factory=list)
    cdcs: list[dict[str, Any]] = field(default_factory=list)
    checkpoint_metadata: dict[str, Any] | None = None
    sidecars: list[dict[str, Any]] = field(default_factory=list)


def parse_compaction(data: bytes, source: str) -> CommitActions:
    """A log compaction file as one commit in which the *first* action per key wins.

    Spec-compliant compactions are already reconciled (one action per key), so for
    them this changes nothing; some writers instead concatenate the commits newest
    first, which first-wins also reads correctly.
    """
    out = CommitActions()
    files: set[str] = set()
    apps: set[str] = set()
    domains: set[str] = set()
    for lineno, line in enumerate(data.splitlines(), 1):
        one = CommitActions()
        _parse_line(one, line, source, lineno)
        out.protocol = out.protocol or one.protocol
        out.metadata = out.metadata or one.metadata
        for items, target in ((one.adds, out.adds), (one.removes, out.removes)):
            for action in items:
                if (key := action_key(action)) not in files:
                    files.add(key)
                    target.append(action)
        out.txns += [t for t in one.txns if t.app_id not in apps and not apps.add(t.app_id)]
        out.domains += [
            d for d in one.domains if d.domain not in domains and not domains.add(d.domain)
        ]
    return out


def parse_actions(data: bytes, source: str) -> CommitActions:
    """Parse newline-delimited JSON actions; unknown action types are ignored (spec)."""
    out = CommitActions()
    for lineno, line in enumerate(data.splitlines(), 1):
        _parse_line(out, line, source, lineno)
    return out


def _parse_line(out: CommitActions, line: bytes, source: str, lineno: int) -> None:
    if not line.strip():
        return
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise CorruptLogError(f"{source}:{lineno}: not valid JSON ({e})") from e
    if not isinstance(obj, dict):
        raise CorruptLogError(f"{source}:{lineno}: an action must be a JSON object")
    for kind, body in obj.items():
        _apply_action(out, kind, body, source, lineno)


def _apply_action(out: CommitActions, kind: str, body: Any, source: str, lineno: int) -> None:
    if body is None:
        return
    if not isinstance(body, dict):
        raise CorruptLogError(f"{source}:{lineno}: action {kind!r} must be an object")
    try:
        if kind == "add":
            out.adds.append(body)
        elif kind == "remove":
            out.removes.append(body)
        elif kind == "metaData":
            if out.metadata is not None:
                raise CorruptLogError(f"{source}: more than one metaData action")
            out.metadata = Metadata.from_dict(body)
        elif kind == "protocol":
            if out.protocol is not None:
                raise CorruptLogError(f"{source}: more than one protocol action")
            out.protocol = Protocol.from_dict(body)
        elif kind == "txn":
            out.txns.append(SetTransaction.from_dict(body))
        elif kind == "domainMetadata":
            out.domains.append(DomainMetadata.from_dict(body))
        elif kind == "commitInfo":
            out.commit_info = body
        elif kind == "cdc":
            out.cdcs.append(body)
        elif kind == "checkpointMetadata":
            out.checkpoint_metadata = body
        elif kind == "sidecar":
            out.sidecars.append(body)
    except CorruptLogError as e:
        raise CorruptLogError(f"{source}:{lineno}: {e}") from None
    except (ValueError, TypeError) as e:
        raise CorruptLogError(f"{source}:{lineno}: malformed {kind} action ({e})") from e
    if kind in ("add", "remove") and not isinstance(body.get("path"), str):
        raise CorruptLogError(f"{source}:{lineno}: {kind} action without a path")


def canonical_path(path: str) -> str:
    """Paths compare without a ``file:`` scheme (``file:///a`` and ``/a`` are one file)."""
    if path.startswith("file://"):
        return path[7:]
    if path.startswith("file:"):
        return path[5:]
    return path


def dv_unique_id(dv: Mapping[str, Any] | None) -> str:
    if not dv:
        return ""
    uid = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    offset = dv.get("offset")
    return f"{uid}@{offset}" if offset is not None else uid


def action_key(action: Mapping[str, Any]) -> str:
    """Logical file key of an add/remove dict: canonical path, NUL, DV unique id."""
    return f"{canonical_path(action['path'])}\x00{dv_unique_id(action.get('deletionVector'))}"


def file_keys(table: pa.Table) -> pa.Array:
    """Vectorised ``action_key`` over a file-action table."""
    path = pc.replace_substring_regex(table.column("path"), r"^file:(//)?", "")
    dv = table.column("deletionVector")
    storage = pc.fill_null(pc.struct_field(dv, "storageType"), "")
    inline = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), "")
    offset = pc.cast(pc.struct_field(dv, "offset"), pa.string())
    with_at = pc.fill_null(pc.binary_join_element_wise("@", offset, ""), "")
    dv_id = pc.binary_join_element_wise(storage, inline, with_at, "")
    return pc.binary_join_element_wise(path, dv_id, "\x00").combine_chunks()


def with_keys(table: pa.Table) -> pa.Table:
    if KEY_COLUMN in table.column_names:
        return table
    return table.append_column(KEY_COLUMN, file_keys(table))


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
    commit_info: dict[str, Any] | None = None

    def apply(self, version: int, commits: Iterable[CommitActions]) -> TableState:
        """The state after ``commits`` (in order): newest action per logical file wins."""
        adds: dict[str, dict[str, Any]] = {}
        removes: dict[str, dict[str, Any]] = {}
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
            commit_info = c.commit_info
        touched = pa.array(list(adds.keys() | removes.keys()), pa.string())
        files = _drop_keys(self.files, touched)
        tombstones = _drop_keys(self.tombstones, touched)
        if adds:
            new = file_actions_to_arrow(list(adds.values()), ADD_SCHEMA)
            new = new.append_column(KEY_COLUMN, pa.array(list(adds.keys()), pa.string()))
            files = pa.concat_tables([files, new.cast(files.schema)])
        if removes:
            new = file_actions_to_arrow(list(removes.values()), REMOVE_SCHEMA)
            new = new.append_column(KEY_COLUMN, pa.array(list(removes.keys()), pa.string()))
            tombstones = pa.concat_tables([tombstones, new.cast(tombstones.schema)])
        return TableState(
            version,
            protocol,
            metadata,
            txns,
            {k: d for k, d in domains.items() if not d.removed},
            files,
            tombstones,
            commit_info,
        )


def _drop_keys(table: pa.Table, keys: pa.Array) -> pa.Table:
    if len(keys) == 0 or table.num_rows == 0:
        return table
    return table.filter(pc.invert(pc.is_in(table.column(KEY_COLUMN), value_set=keys)))


def empty_state() -> TableState:
    return TableState(
        -1,
        None,
        None,
        {},
        {},
        with_keys(ADD_SCHEMA.empty_table()),
        with_keys(REMOVE_SCHEMA.empty_table()),
    )
