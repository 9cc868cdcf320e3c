"""Commit files read column-wise (PROTOCOL.md "Delta Log Entries", "Action Reconciliation").

``parse_commits`` reads the add and remove lines of consecutive commits with Arrow's
JSON reader into one ``CommitBatch`` (several times faster than ``json.loads`` per line,
and no Python object per action); every other line, and any input it cannot vouch for,
goes through ``commit_actions.parse_actions``: same results, same errors.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from delta_pyspark.core.log.arrow_buffers import (
    all_false,
    combined,
    empty_table,
    int64_array,
    int64_scalar,
    string_array,
    utf8_scalar,
)
from delta_pyspark.core.log.commit_actions import (
    CommitActions,
    check_not_empty,
    parse_actions,
    parse_line,
)
from delta_pyspark.core.log.logical_files import KEY_COLUMN, with_keys
from delta_pyspark.core.protocol.actions import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    REQUIRED_FIELDS,
    STRING_MAP,
)
from delta_pyspark.exceptions import CorruptLogError

_NUL = utf8_scalar("\x00")

# Lines that start like this are read by Arrow's JSON reader; all others by ``parse_line``.
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
        check_not_empty(data, source)
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
                parse_line(out, line, source, lineno)
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
    index = pc.cast(int64_array(commits), pa.string())
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
            simple = all_false(n)
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
        string_array(out_keys),
        string_array(out_values),
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
        value_array = pa.concat_arrays(children).take(int64_array(order))
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
        return all_false(len(lines.starts))
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
