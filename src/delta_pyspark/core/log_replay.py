"""Action reconciliation (PROTOCOL.md "Action Reconciliation").

The state of version ``v`` is the checkpoint's state plus the commits after it,
where the newest action for each logical file ``(path, deletionVector.uniqueId)``
wins. The checkpoint side stays columnar: its file list is filtered with one
``is_in`` against the keys the later commits touch, never walked row by row.
"""

from __future__ import annotations

import json
import struct
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from delta_pyspark.core.actions import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    REQUIRED_FIELDS,
    STRING_MAP,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
    check_file_action,
    file_actions_to_arrow,
)
from delta_pyspark.exceptions import CorruptLogError

KEY_COLUMN = "_key"

# Building Arrow data from Python objects (``pa.array``, ``pa.scalar``, ``from_pylist``, a
# Python literal passed to a compute function) makes pyarrow import pandas on first use,
# which takes longer and more memory than loading a 100,000-file snapshot. Snapshot
# loading therefore builds its Arrow data from buffers, Parquet or JSON only.


def utf8_scalar(value: str) -> pa.StringScalar:
    """A string scalar built from buffers (see above)."""
    data = value.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


_EMPTY = utf8_scalar("")
_NUL = utf8_scalar("\x00")
_AT = utf8_scalar("@")


def combined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``column`` as one array, copying only when it has several chunks (and, unlike
    ``combine_chunks``, without Python objects when it has none: see above)."""
    if isinstance(column, pa.Array):
        return column
    if column.num_chunks == 1:
        return column.chunk(0)
    if column.num_chunks == 0:
        return pa.nulls(0, column.type)
    return column.combine_chunks()


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()`` without going through Python objects (see above)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def _int64_array(values: Sequence[int]) -> pa.Array:
    """An int64 array built from a buffer (see above)."""
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(array("q", values))])


def int64_scalar(value: int) -> pa.Int64Scalar:
    return _int64_array([value])[0]


def _all_false(n: int) -> pa.Array:
    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bytes((n + 7) // 8))])


def _validity(flags: list[bool]) -> pa.Buffer:
    bits = int("".join("1" if f else "0" for f in reversed(flags)) or "0", 2)
    return pa.py_buffer(bits.to_bytes((len(flags) + 7) // 8, "little"))


def _string_array(values: Sequence[str | None]) -> pa.Array:
    """A string array built from buffers (see above)."""
    data = [b"" if v is None else v.encode() for v in values]
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, data)))  # OverflowError past 2 GiB
    nulls = values.count(None)
    validity = _validity([v is not None for v in values]) if nulls else None
    return pa.Array.from_buffers(
        pa.string(),
        len(values),
        [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
        null_count=nulls,
    )


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
    _check_not_empty(data, source)
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
        out.txns += [t for t in one.txns if t.app_id not in apps and not apps.add(t.app_id)]  # type: ignore[func-returns-value]
        out.domains += [
            d
            for d in one.domains
            if d.domain not in domains and not domains.add(d.domain)  # type: ignore[func-returns-value]
        ]
    return out


def parse_actions(data: bytes, source: str) -> CommitActions:
    """Parse newline-delimited JSON actions; unknown action types are ignored (spec)."""
    _check_not_empty(data, source)
    out = CommitActions()
    for lineno, line in enumerate(data.splitlines(), 1):
        _parse_line(out, line, source, lineno)
    if out.adds and out.removes:
        both = {action_key(a) for a in out.adds} & {action_key(r) for r in out.removes}
        if both:
            path = min(both).split("\x00")[0]
            raise CorruptLogError(
                f"{source}: adds and removes the same file {path!r} (with the same deletion "
                "vector) in one commit, which the protocol forbids: a line was lost or altered"
            )
    return out


def _check_not_empty(data: bytes, source: str) -> None:
    """A commit (or JSON checkpoint) holds at least one action: an empty file is damage
    (e.g. a crashed copy), never an empty commit, or replay would skip its changes."""
    if not data.strip():
        raise CorruptLogError(f"{source}: the log file is empty (it must hold actions)")


def _parse_line(out: CommitActions, line: bytes, source: str, lineno: int) -> None:
    if not line.strip():
        return
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise CorruptLogError(f"{source}:{lineno}: not valid JSON ({e})") from e
    except RecursionError:
        raise CorruptLogError(f"{source}:{lineno}: JSON nested too deeply to read") from None
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
    if kind in ("add", "remove", "cdc"):
        try:
            check_file_action(kind, body)
        except CorruptLogError as e:
            raise CorruptLogError(f"{source}:{lineno}: {e}") from None


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
    return combined(_file_keys(table))


def _file_keys(table: pa.Table) -> pa.Array | pa.ChunkedArray:
    """``file_keys``, chunked like ``table``."""
    path = table.column("path")
    if pc.any(pc.starts_with(path, "file:")).as_py():
        path = pc.replace_substring_regex(path, r"^file:(//)?", "")
    dv = table.column("deletionVector")
    if dv.null_count == len(dv):
        # No deletion vectors (the common case): the key is the path and a NUL.
        return pc.binary_join_element_wise(path, _EMPTY, _NUL)
    storage = pc.fill_null(pc.struct_field(dv, "storageType"), _EMPTY)
    inline = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), _EMPTY)
    offset = pc.cast(pc.struct_field(dv, "offset"), pa.string())
    with_at = pc.fill_null(pc.binary_join_element_wise(_AT, offset, _EMPTY), _EMPTY)
    dv_id = pc.binary_join_element_wise(storage, inline, with_at, _EMPTY)
    return pc.binary_join_element_wise(path, dv_id, _NUL)


def with_keys(table: pa.Table) -> pa.Table:
    if KEY_COLUMN in table.column_names:
        return table
    return table.append_column(KEY_COLUMN, _file_keys(table))


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
    # Rows the last ``apply`` appended at the end of ``files`` and ``tombstones``: the
    # rest was in the state it was applied to (incremental validation checks only these).
    appended: tuple[int, int] = field(default=(0, 0), compare=False)

    def apply(self, version: int, commits: Iterable[CommitActions] | CommitBatch) -> TableState:
        """The state after ``commits`` (in order): newest action per logical file wins."""
        if isinstance(commits, CommitBatch):
            return self._apply_batch(version, commits)
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
            (protocol, metadata, txns, domains, commit_info),
            new_files,
            new_tombstones,
            touched,
        )

    def _apply_batch(self, version: int, batch: CommitBatch) -> TableState:
        """``apply`` for commits parsed column-wise: the same reconciliation, run over the
        keys only, picks the rows of ``batch.adds``/``batch.removes`` that survive."""
        protocol, metadata = self.protocol, self.metadata
        txns, domains = dict(self.txns), dict(self.domains)
        commit_info = None
        for c in batch.commits:
            protocol = c.protocol or protocol
            metadata = c.metadata or metadata
            for t in c.txns:
                txns[t.app_id] = t
            for d in c.domains:
                domains[d.domain] = d
            commit_info = c.commit_info
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
            (protocol, metadata, txns, domains, commit_info),
            new_files,
            new_tombstones,
            touched,
        )

    def _with(
        self,
        version: int,
        others: tuple[
            Protocol | None,
            Metadata | None,
            dict[str, SetTransaction],
            dict[str, DomainMetadata],
            dict[str, Any] | None,
        ],
        new_files: pa.Table | None,
        new_tombstones: pa.Table | None,
        touched: pa.Array,
    ) -> TableState:
        """This state with ``others`` replaced, the ``touched`` keys' old rows dropped and
        the new rows appended."""
        protocol, metadata, txns, domains, commit_info = others
        files = _drop_keys(self.files, touched)
        tombstones = _drop_keys(self.tombstones, touched)
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
        )


def _take_rows(table: pa.Table, rows: list[int]) -> pa.Table:
    if rows == list(range(table.num_rows)):
        return table
    return table.take(_int64_array(rows))


def _drop_keys(table: pa.Table, keys: pa.Array) -> pa.Table:
    if len(keys) == 0 or table.num_rows == 0:
        return table
    hit = pc.is_in(table.column(KEY_COLUMN), value_set=keys)
    if not pc.any(hit).as_py():
        return table  # e.g. commits that only add new files: no copy of the file list
    return table.filter(pc.invert(hit))


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


# ---------------------------------------------------------------- column-wise commit parsing

# Lines that start like this are read by Arrow's JSON reader; all others by ``_parse_line``.
_FILE_LINES = ((b'{"add":{', "add", ADD_SCHEMA), (b'{"remove":{', "remove", REMOVE_SCHEMA))
_MAP_FIELDS = frozenset(("partitionValues", "tags"))


class _NotColumnar(Exception):
    """The column-wise parse cannot vouch for giving exactly what ``parse_actions`` gives."""


@dataclass
class CommitBatch:
    """Consecutive commits parsed together by ``parse_commits``.

    ``commits`` holds each commit's other actions (their ``adds``/``removes`` are empty);
    ``adds``/``removes`` hold all file actions in file order, with a ``_key`` column, and
    ``add_commits``/``remove_commits`` the index in ``commits`` of each row's commit.
    """

    commits: list[CommitActions]
    adds: pa.Table
    add_commits: Sequence[int]
    removes: pa.Table
    remove_commits: Sequence[int]


def parse_commits(
    read: Callable[[], Iterable[tuple[bytes, str]]],
) -> CommitBatch | list[CommitActions]:
    """Parse consecutive commit files for replay; ``read()`` yields ``(data, source)`` in
    version order (it may be called twice).

    Add and remove lines are read column-wise with Arrow's JSON reader (several times
    faster than ``json.loads`` per line, and no Python object per action); every other
    line goes through ``parse_actions``' own line parser. Whenever the input holds
    something for which that cannot be shown to give exactly what ``parse_actions``
    gives (malformed or unusually written lines, ambiguous partition values), the
    commits are parsed with ``parse_actions`` instead: same results, same errors.
    """
    try:
        return _parse_columnar(read())
    except (
        _NotColumnar,
        CorruptLogError,
        pa.ArrowException,
        ValueError,
        TypeError,
        OverflowError,
        RecursionError,
    ):
        return [parse_actions(data, source) for data, source in read()]


@dataclass
class _Lines:
    """The add (or remove) lines of a batch, newline-terminated, back to back."""

    data: bytearray = field(default_factory=bytearray)
    starts: array[int] = field(default_factory=lambda: array("q"))
    commits: array[int] = field(default_factory=lambda: array("q"))
    longest: int = 0

    def extend(self, lines: list[bytes], commit: int) -> None:
        if not lines:
            return
        self.starts.extend(
            accumulate((len(line) + 1 for line in lines[:-1]), initial=len(self.data))
        )
        self.commits.extend(array("q", [commit]) * len(lines))
        self.data += b"\n".join(lines)
        self.data += b"\n"
        self.longest = max(self.longest, *map(len, lines))

    def line(self, i: int) -> bytes:
        end = self.starts[i + 1] if i + 1 < len(self.starts) else len(self.data)
        return bytes(self.data[self.starts[i] : end])

    def as_array(self) -> pa.Array:
        """One string per line (with its newline), sharing the buffer."""
        offsets = array("q", self.starts)
        offsets.append(len(self.data))
        return pa.Array.from_buffers(
            pa.large_string(),
            len(self.starts),
            [None, pa.py_buffer(offsets), pa.py_buffer(self.data)],
        )


def _parse_columnar(items: Iterable[tuple[bytes, str]]) -> CommitBatch:
    commits: list[CommitActions] = []
    lines = {kind: _Lines() for _, kind, _ in _FILE_LINES}
    prefixes = tuple(prefix for prefix, _, _ in _FILE_LINES)
    # Keys of partitionValues/tags seen on the first lines, to read their values as
    # strings: left to inference, a value like "2024-01-31" would become a timestamp.
    map_keys: dict[str, dict[str, dict[str, None]]] = {
        kind: {name: {} for name in _MAP_FIELDS} for _, kind, _ in _FILE_LINES
    }
    for index, (data, source) in enumerate(items):
        _check_not_empty(data, source)
        out = CommitActions()
        split = data.splitlines()
        for prefix, kind, _ in _FILE_LINES:
            found = [line for line in split if line.startswith(prefix)]
            if found:
                body = json.loads(found[0])[kind]
                for name, keys in map_keys[kind].items():
                    value = body.get(name) if isinstance(body, dict) else None
                    if isinstance(value, dict):
                        keys.update(dict.fromkeys(value))
            lines[kind].extend(found, index)
        for lineno, line in enumerate(split, 1):
            if not line.startswith(prefixes):
                _parse_line(out, line, source, lineno)
        if out.adds or out.removes:
            raise _NotColumnar("a file action written differently: keep the file order exact")
        commits.append(out)
    adds, removes = (
        _file_action_table(lines[kind], kind, schema, map_keys[kind])
        for _, kind, schema in _FILE_LINES
    )
    if adds.num_rows and removes.num_rows:
        both = pc.is_in(
            _in_commit(removes, lines["remove"].commits),
            value_set=_in_commit(adds, lines["add"].commits),
        )
        if pc.any(both).as_py():
            raise _NotColumnar("a commit adds and removes one file: let the line parser name it")
    return CommitBatch(commits, adds, lines["add"].commits, removes, lines["remove"].commits)


def _in_commit(table: pa.Table, commits: Sequence[int]) -> pa.Array:
    """Each row's key prefixed with the index of its commit (keys compared per commit)."""
    index = pc.cast(_int64_array(commits), pa.string())
    return pc.binary_join_element_wise(index, combined(table.column(KEY_COLUMN)), _NUL)


def _file_action_table(
    lines: _Lines, kind: str, schema: pa.Schema, map_keys: dict[str, dict[str, None]]
) -> pa.Table:
    """The ``kind`` actions of ``lines`` as ``schema`` plus ``_key``, as ``parse_actions``
    followed by ``file_actions_to_arrow`` would give them, or ``_NotColumnar``."""
    n = len(lines.starts)
    if n == 0:
        return with_keys(empty_table(schema))
    # Python's json.loads rejects invalid UTF-8; Arrow's JSON reader does not check.
    lines.as_array().validate(full=True)
    # Declared fields keep their types (anything else in the JSON is an error); other
    # fields are inferred. Maps are read as objects (string values for the keys known
    # in advance) and rebuilt below.
    declared = pa.struct(
        [
            pa.field(f.name, pa.struct([(k, pa.string()) for k in map_keys[f.name]]))
            if f.name in _MAP_FIELDS
            else f
            for f in schema
            if f.name not in _MAP_FIELDS or map_keys[f.name]
        ]
    )
    parsed = pa_json.read_json(
        pa.BufferReader(pa.py_buffer(lines.data)),
        read_options=pa_json.ReadOptions(block_size=max(1 << 22, 2 * lines.longest + 2)),
        parse_options=pa_json.ParseOptions(
            explicit_schema=pa.schema([(kind, declared)]), unexpected_field_behavior="infer"
        ),
    )
    if parsed.num_rows != n or parsed.column_names != [kind]:
        raise _NotColumnar("extra values or actions on a line")
    column = parsed.column(kind)
    if column.null_count:
        raise _NotColumnar("null action")
    present = {column.type.field(i).name for i in range(column.type.num_fields)}
    columns = []
    for f in schema:
        if f.name in _MAP_FIELDS:
            columns.append(
                _map_column(column, kind, f.name, lines)
                if f.name in present
                else pa.nulls(n, f.type)
            )
            continue
        child = pc.struct_field(column, f.name)
        if child.type != f.type:
            child = _declared_fields(child, f.type)
        columns.append(child)
    table = pa.Table.from_arrays(columns, schema=schema)
    if any(table.column(name).null_count for name in REQUIRED_FIELDS[kind]):
        raise _NotColumnar("a required field is missing: let the line parser name it")
    dv = table.column("deletionVector")
    if dv.null_count < n:
        # ``dv_unique_id`` spells an explicit null "None"; Arrow cannot tell it from absent.
        unnamed = pc.or_(
            pc.is_null(pc.struct_field(dv, "storageType")),
            pc.is_null(pc.struct_field(dv, "pathOrInlineDv")),
        )
        if pc.any(pc.and_(pc.is_valid(dv), unnamed)).as_py():
            raise _NotColumnar("deletion vector without storage type or path")
    return with_keys(table)


def _declared_fields(column: pa.ChunkedArray, typ: pa.DataType) -> pa.ChunkedArray:
    """A struct column with fields inferred beyond ``typ``'s reduced to ``typ``'s (the
    unknown fields ``file_actions_to_arrow`` drops)."""
    chunks = [
        pa.StructArray.from_arrays(
            [chunk.field(f.name) for f in typ],
            fields=list(typ),
            mask=pc.is_null(chunk) if chunk.null_count else None,
        )
        for chunk in column.chunks
    ]
    return pa.chunked_array(chunks, typ)


def _map_column(column: pa.ChunkedArray, kind: str, name: str, lines: _Lines) -> pa.Array:
    """Field ``name`` of each action, a JSON object of strings, as a ``STRING_MAP`` with
    the entries of ``dict.items()`` on the parsed object: same keys, order and nulls.

    The reader gives a struct whose fields are all keys seen, in order of appearance.
    Where a row has a null (the key may be absent or null) or several keys (the row may
    list them in another order), the struct cannot tell, so such a row is taken from
    ``json.loads`` of its line unless the line shows the keys in the struct's order.
    """
    obj = pc.struct_field(column, name)
    typ = obj.type
    n = len(obj)
    if pa.types.is_null(typ):
        return pa.nulls(n, STRING_MAP)
    if not pa.types.is_struct(typ):
        raise _NotColumnar(f"{name} is not an object")
    keys = [typ.field(i).name for i in range(typ.num_fields)]
    valid = combined(pc.is_valid(obj))
    n_valid = pc.sum(valid).as_py() or 0
    if n_valid == 0:
        return pa.nulls(n, STRING_MAP)
    mask = combined(pc.invert(valid)) if n_valid < n else None
    children = [combined(pc.struct_field(obj, k)) for k in keys]
    # A row is read off the struct if it has every key, with a string value (a key the
    # reader inferred another type for, e.g. a timestamp, may hide the exact string),
    # in the struct's order.
    simple = valid
    for child in children:
        if not pa.types.is_string(child.type):
            simple = _all_false(n)
            break
        simple = pc.and_(simple, pc.is_valid(child))
    if len(keys) > 1:
        simple = pc.and_(simple, _in_key_order(lines, keys))
    if (pc.sum(simple).as_py() or 0) == n_valid:
        return _uniform_map(keys, children, valid, n_valid, mask)
    out_keys: list[str] = []
    out_values: list[str | None] = []
    offsets = array("i", [0])
    rows = simple.to_pylist()
    values = [child.to_pylist() if pa.types.is_string(child.type) else [] for child in children]
    for i, is_valid in enumerate(valid.to_pylist()):
        if rows[i]:
            out_keys += keys
            out_values += [v[i] for v in values]
        elif is_valid:
            for k, v in json.loads(lines.line(i))[kind][name].items():
                if v is not None and not isinstance(v, str):
                    raise _NotColumnar(f"{name} holds a {type(v).__name__}")
                out_keys.append(k)
                out_values.append(v)
        offsets.append(len(out_keys))
    return pa.MapArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(offsets)]),
        _string_array(out_keys),
        _string_array(out_values),
        type=STRING_MAP,
        mask=mask,
    )


def _uniform_map(
    keys: list[str],
    children: list[pa.Array],
    valid: pa.Array,
    n_valid: int,
    mask: pa.Array | None,
) -> pa.Array:
    """Maps that hold ``keys`` in order with the (non-null) values of ``children`` in
    every ``valid`` row, built column-wise; ``mask`` is ``valid`` inverted, or None."""
    m = len(keys)
    n = len(valid)
    if mask is None:
        offsets = array("i", range(0, (n + 1) * m, m) if m else [0] * (n + 1))
    else:
        offsets = array("i", accumulate((m if v else 0 for v in valid.to_pylist()), initial=0))
        children = [child.filter(valid) for child in children]
    encoded = [k.encode() for k in keys]
    key_offsets = array("i", accumulate(list(map(len, encoded)) * n_valid, initial=0))
    key_array = pa.Array.from_buffers(
        pa.string(),
        n_valid * m,
        [None, pa.py_buffer(key_offsets), pa.py_buffer(b"".join(encoded) * n_valid)],
    )
    if m == 0:
        value_array = pa.nulls(0, pa.string())
    elif m == 1:
        value_array = children[0]
    else:
        order = [j * n_valid + i for i in range(n_valid) for j in range(m)]
        value_array = pa.concat_arrays(children).take(_int64_array(order))
    return pa.MapArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(offsets)]),
        key_array,
        value_array,
        type=STRING_MAP,
        mask=mask,
    )


def _in_key_order(lines: _Lines, keys: list[str]) -> pa.Array:
    """Per line: does each key's JSON string occur exactly once, in ``keys``' order?

    For a row whose object has all ``keys``, that proves the object lists them in this
    order: with no ``\\u`` escape on the line, and no ``/`` (which may be written ``\\/``)
    in a key, a key can only be spelled one way, and its one occurrence is in the object.
    """
    if any("/" in k for k in keys):
        return _all_false(len(lines.starts))
    text = lines.as_array()
    zero, one = int64_scalar(0), int64_scalar(1)
    ok = pc.equal(pc.count_substring(text, "\\u"), zero)
    previous = None
    for key in keys:
        token = json.dumps(key, ensure_ascii=False)
        ok = pc.and_(ok, pc.equal(pc.count_substring(text, token), one))
        position = pc.find_substring(text, token)
        if previous is not None:
            ok = pc.and_(ok, pc.greater(position, previous))
        previous = position
    return ok
