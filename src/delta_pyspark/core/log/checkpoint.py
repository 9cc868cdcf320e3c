"""Reading and writing checkpoints (PROTOCOL.md "Checkpoints", "Checkpoint Schema").

Classic and multi-part checkpoints are Parquet files with one column per action
type; v2 (UUID-named) checkpoints may be JSON or Parquet and may move their file
actions into ``_delta_log/_sidecars``. All of them load into a ``TableState``
whose file list stays an Arrow table end to end.

Reading and writing stay in one module (a little over 500 lines) because both are
defined by the same column layout (the ``*_TYPE`` structs and ``CHECKPOINT_REMOVE_FIELDS``
above them): what one writes, the other must read back.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_pyspark.core.log.arrow_buffers import combined, empty_table
from delta_pyspark.core.log.commit_actions import parse_actions
from delta_pyspark.core.log.logical_files import KEY_COLUMN, with_keys
from delta_pyspark.core.log.replay import TableState, empty_state
from delta_pyspark.core.log.segment import (
    LAST_CHECKPOINT,
    SIDECAR_DIR,
    Checkpoint,
    CheckpointKind,
    classic_checkpoint_name,
    scan_log,
    uuid_checkpoint_name,
)
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    STRING_MAP,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
    Sidecar,
    file_actions_to_arrow,
)
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.exceptions import CorruptLogError

PROTOCOL_TYPE = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("createdTime", pa.int64()),
        ("configuration", STRING_MAP),
    ]
)
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
DOMAIN_TYPE = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", STRING_MAP)])
CHECKPOINT_REMOVE_FIELDS = [
    "path",
    "deletionTimestamp",
    "dataChange",
    "extendedFileMetadata",
    "partitionValues",
    "size",
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
]
_BATCH_ROWS = 16384
_NON_FILE_COLUMNS = (
    "protocol",
    "metaData",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)


# ---------------------------------------------------------------- reading


def _conform(array: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array:
    """Reshape a struct column read from any writer to ``target`` (missing fields null)."""
    array = combined(array)
    if array.type == target:
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(array.type):
        present = {array.type.field(i).name for i in range(array.type.num_fields)}
        children = []
        for f in target:
            if f.name in present:
                children.append(_conform(pc.struct_field(array, f.name), f.type))
            else:
                children.append(pa.nulls(len(array), f.type))
        return pa.StructArray.from_arrays(
            children, fields=list(target), mask=pc.invert(pc.is_valid(array))
        )
    return array.cast(target)


def _struct_table(column: pa.Array | pa.ChunkedArray, schema: pa.Schema) -> pa.Table:
    """A struct column (without null rows) as a table, chunk by chunk: no copies."""
    target = pa.struct(list(schema))
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [_conform(chunk, target).flatten() for chunk in chunks if len(chunk)]
    if not parts:
        return empty_table(schema)
    return pa.Table.from_arrays(
        [pa.chunked_array([p[i] for p in parts], f.type) for i, f in enumerate(schema)],
        schema=schema,
    )


def _rows(column: pa.Array | pa.ChunkedArray) -> list[dict[str, Any]]:
    valid = column.filter(pc.is_valid(column))
    return [_maps_to_dicts(r) for r in valid.to_pylist()]


def _maps_to_dicts(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _maps_to_dicts(v) for k, v in value.items() if v is not None}
    if (
        isinstance(value, list)
        and value
        and all(isinstance(x, tuple) and len(x) == 2 for x in value)
    ):
        return dict(value)
    return value


def _open_parquet(store: LogStore, path: str) -> pq.ParquetFile:
    # ``ParquetFile`` rather than ``pq.read_table``: the latter goes through
    # ``pyarrow.dataset``, whose import alone (it pulls in pandas) costs more time and
    # memory than reading a 100,000-file checkpoint. No pre-buffering: it would fetch
    # every column chunk read (all row groups) before decoding the first batch, about
    # the size of the file on top of the decoded columns.
    try:
        return pq.ParquetFile(store.open_input(path), pre_buffer=False)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as e:
        raise CorruptLogError(f"cannot read checkpoint file {path}: {e}") from e


def _read_columns(parquet: pq.ParquetFile, path: str, columns: list[str] | None) -> pa.Table:
    """``columns`` (top-level names or dotted paths to struct fields) of an open file.

    Read in batches of ``_BATCH_ROWS``: decoding a whole row group at once grows each
    column's buffers by doubling, which for a large checkpoint's ``stats`` and ``path``
    leaves a peak (and, with mimalloc, a resident size) of about twice the data.
    """
    try:
        batches = list(parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns))
        if not batches:
            return parquet.read(columns=columns)
        return pa.Table.from_batches(batches)
    except (pa.ArrowException, OSError) as e:
        raise CorruptLogError(f"cannot read checkpoint file {path}: {e}") from e


def _checkpoint_columns(schema: pa.Schema) -> list[str]:
    """The columns replay needs: every action column, but of ``add``/``remove`` only the
    fields of ``ADD_SCHEMA``/``REMOVE_SCHEMA`` (not ``stats_parsed``, which is read only
    when some JSON stats are missing, nor ``partitionValues_parsed``)."""
    columns = []
    for name, wanted in (
        *((c, None) for c in _NON_FILE_COLUMNS),
        ("add", ADD_SCHEMA),
        ("remove", REMOVE_SCHEMA),
    ):
        if schema.get_field_index(name) < 0:
            continue
        typ = schema.field(name).type
        fields = (
            [f"{name}.{f.name}" for f in wanted if typ.get_field_index(f.name) >= 0]
            if wanted is not None and pa.types.is_struct(typ)
            else []
        )
        columns += fields or [name]
    return columns


def _stats_json(value: Any) -> str:
    """A stats value as delta-spark writes it in JSON (timestamps ISO-8601 UTC, ms).

    Decimals are written as exact number literals: a float would round wide decimals,
    and a rounded min/max lets data skipping drop a file that holds the value.
    """
    import datetime as dt
    from decimal import Decimal

    if isinstance(value, dict):
        items = (f"{json.dumps(k)}:{_stats_json(v)}" for k, v in value.items() if v is not None)
        return "{" + ",".join(items) + "}"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
            return json.dumps(value.isoformat(timespec="milliseconds") + "Z")
        return json.dumps(value.isoformat(timespec="milliseconds"))
    if isinstance(value, dt.date):
        return json.dumps(value.isoformat())
    return json.dumps(value)


def _stats_from_struct(parquet: pq.ParquetFile, path: str, adds: pa.Table) -> pa.Table:
    """Fill ``stats`` from ``stats_parsed`` where a checkpoint stored only the struct form.

    Only rows lacking JSON stats are converted (checkpoints written with
    ``delta.checkpoint.writeStatsAsJson=false``), and ``stats_parsed`` is read from the
    file only then, so the common case costs nothing.
    """
    add_type = parquet.schema_arrow.field("add").type
    if not pa.types.is_struct(add_type) or add_type.get_field_index("stats_parsed") < 0:
        return adds
    missing = pc.is_null(adds.column("stats"))
    if not pc.any(missing).as_py():
        return adds
    column = _valid_rows(_read_columns(parquet, path, ["add.stats_parsed"]).column("add"))
    parsed = pc.struct_field(column, "stats_parsed")
    texts = [
        None if s is None or not m else _stats_json(s)
        for s, m in zip(parsed.to_pylist(), missing.to_pylist(), strict=True)
    ]
    stats = pc.coalesce(adds.column("stats"), pa.array(texts, pa.string()))
    return adds.set_column(adds.schema.get_field_index("stats"), "stats", stats)


def _valid_rows(column: pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The non-null rows of an action column; a zero-copy slice when they are contiguous
    (checkpoints written here group each action type), a filtered copy otherwise."""
    count = len(column) - column.null_count
    if count == 0:
        return column.slice(0, 0)
    valid = pc.is_valid(column)
    positions = pc.indices_nonzero(valid)
    first = positions[0].as_py()
    if positions[count - 1].as_py() == first + count - 1:
        return column.slice(first, count)
    return column.filter(valid)


def _split_parquet(
    parquet: pq.ParquetFile, path: str
) -> tuple[dict[str, list[dict[str, Any]]], pa.Table, pa.Table]:
    """Non-file actions as dicts; adds and removes as conformed Arrow tables."""
    table = _read_columns(parquet, path, _checkpoint_columns(parquet.schema_arrow))
    others = {c: _rows(table.column(c)) for c in _NON_FILE_COLUMNS if c in table.column_names}
    adds, removes = empty_table(ADD_SCHEMA), empty_table(REMOVE_SCHEMA)
    if "add" in table.column_names:
        adds = _struct_table(_valid_rows(table.column("add")), ADD_SCHEMA)
        adds = _stats_from_struct(parquet, path, adds)
    if "remove" in table.column_names:
        removes = _struct_table(_valid_rows(table.column("remove")), REMOVE_SCHEMA)
    if adds.num_rows and pc.any(pc.is_null(adds.column("path"))).as_py():
        raise CorruptLogError(f"{path}: add action without a path")
    return others, adds, removes


def read_checkpoint(store: LogStore, checkpoint: Checkpoint, log_dir: str) -> TableState:
    """Load a checkpoint of any kind into a ``TableState`` at its version."""
    # each action's JSON form (``to_dict``, or the dict parsed or read)
    protocols: list[Mapping[str, Any]] = []
    metadatas: list[Mapping[str, Any]] = []
    txns: list[Mapping[str, Any]] = []
    domains: list[Mapping[str, Any]] = []
    sidecars: list[Mapping[str, Any]] = []
    add_parts: list[pa.Table] = []
    remove_parts: list[pa.Table] = []
    for status in checkpoint.files:
        if checkpoint.is_json:
            actions = parse_actions(store.read(status.path), status.path)
            protocols += [actions.protocol.to_dict()] if actions.protocol else []
            metadatas += [actions.metadata.to_dict()] if actions.metadata else []
            txns += [t.to_dict() for t in actions.txns]
            domains += [d.to_dict() for d in actions.domains]
            sidecars += actions.sidecars
            add_parts.append(file_actions_to_arrow(actions.adds, ADD_SCHEMA))
            remove_parts.append(file_actions_to_arrow(actions.removes, REMOVE_SCHEMA))
            continue
        others, adds, removes = _split_parquet(_open_parquet(store, status.path), status.path)
        protocols += others.get("protocol", [])
        metadatas += others.get("metaData", [])
        txns += others.get("txn", [])
        domains += others.get("domainMetadata", [])
        sidecars += others.get("sidecar", [])
        add_parts.append(adds)
        remove_parts.append(removes)
    for sc in sidecars:
        sidecar = Sidecar.from_dict(sc)
        name = sidecar.path.rsplit("/", 1)[-1]
        path = sidecar.path if "/" in sidecar.path else f"{log_dir}/{SIDECAR_DIR}/{name}"
        try:
            parquet = _open_parquet(store, path)
        except FileNotFoundError:
            raise CorruptLogError(
                f"checkpoint {checkpoint.version} references missing sidecar {path}"
            ) from None
        _, adds, removes = _split_parquet(parquet, path)
        add_parts.append(adds)
        remove_parts.append(removes)
    where = f"checkpoint at version {checkpoint.version}"
    if len(protocols) != 1 or len(metadatas) != 1:
        raise CorruptLogError(
            f"{where} must hold exactly one protocol and one metaData action "
            f"(found {len(protocols)} and {len(metadatas)})"
        )
    return TableState(
        version=checkpoint.version,
        protocol=Protocol.from_dict(protocols[0]),
        metadata=Metadata.from_dict(metadatas[0]),
        txns={t.app_id: t for t in map(SetTransaction.from_dict, txns)},
        domains={d.domain: d for d in map(DomainMetadata.from_dict, domains) if not d.removed},
        files=with_keys(pa.concat_tables(add_parts)),
        tombstones=with_keys(pa.concat_tables(remove_parts)),
    )


# ---------------------------------------------------------------- writing


def _column(values: Sequence[Mapping[str, Any]] | None, typ: pa.DataType, n: int) -> pa.Array:
    if not values:
        return pa.nulls(n, typ)
    fixed = [
        {k: (list(v.items()) if isinstance(v, dict) else v) for k, v in row.items()}
        for row in values
    ]
    return pa.array(fixed, typ)


def _parsed_columns(state: TableState, files: pa.Table) -> list[tuple[pa.Field, pa.Array]]:
    """``stats_parsed`` and ``partitionValues_parsed`` (physical names, typed values) for
    tables with ``delta.checkpoint.writeStatsAsStruct=true``."""
    from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, to_physical_schema
    from delta_pyspark.core.protocol.partition_values import partition_column_to_arrow
    from delta_pyspark.core.protocol.schema import StructType, parse_schema_string
    from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
    from delta_pyspark.core.stats.parsing import parse_stats

    assert state.metadata is not None
    schema = parse_schema_string(state.metadata.schema_string)
    physical = to_physical_schema(schema, column_mapping_mode(state.metadata.configuration))
    logical_parts = set(state.metadata.partition_columns)
    pairs = list(zip(schema.fields, physical.fields, strict=True))
    data = StructType(tuple(p for lf, p in pairs if lf.name not in logical_parts))
    stats = parse_stats(files.column("stats"), to_arrow_schema(data), adjust_bounds=False)
    out = [(pa.field("stats_parsed", stats.type), stats)]
    parts = [p for lf, p in pairs if lf.name in logical_parts]
    if parts:
        values = files.column("partitionValues").combine_chunks()
        children = [
            partition_column_to_arrow(pc.map_lookup(values, p.name, "first"), p.type) for p in parts
        ]
        names = [p.name for p in parts]
        parsed = pa.StructArray.from_arrays(children, names=names)
        out.append((pa.field("partitionValues_parsed", parsed.type), parsed))
    return out


def checkpoint_table(state: TableState, now_ms: int | None = None, v2: bool = False) -> pa.Table:
    """The checkpoint rows for ``state``: non-file actions, live adds, unexpired tombstones."""
    assert state.protocol is not None and state.metadata is not None
    conf = state.metadata.configuration
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now_ms - props.deleted_file_retention_ms(conf)
    tomb = state.tombstones
    if tomb.num_rows:
        ts = pc.fill_null(tomb.column("deletionTimestamp"), 0)
        tomb = tomb.filter(pc.greater(ts, cutoff))
    files = state.files.drop_columns([KEY_COLUMN])
    if not props.checkpoint_stats_as_json(conf):
        files = files.set_column(
            files.schema.get_field_index("stats"), "stats", pa.nulls(files.num_rows, pa.string())
        )
    add_fields = list(ADD_SCHEMA)
    add_children = [files.column(f.name).combine_chunks() for f in ADD_SCHEMA]
    if props.checkpoint_stats_as_struct(conf):
        for f, child in _parsed_columns(state, state.files):
            add_fields.append(f)
            add_children.append(child)
    add_type = pa.struct(add_fields)
    remove_fields = [REMOVE_SCHEMA.field(n) for n in CHECKPOINT_REMOVE_FIELDS]
    remove_type = pa.struct(remove_fields)

    singles: list[tuple[str, pa.DataType, Sequence[Mapping[str, Any]]]] = [
        ("protocol", PROTOCOL_TYPE, [state.protocol.to_dict()]),
        ("metaData", METADATA_TYPE, [state.metadata.to_dict()]),
        ("txn", TXN_TYPE, [t.to_dict() for t in state.txns.values()]),
        ("domainMetadata", DOMAIN_TYPE, [d.to_dict() for d in state.domains.values()]),
    ]
    if v2:
        singles.append(
            ("checkpointMetadata", CHECKPOINT_METADATA_TYPE, [{"version": state.version}])
        )
    columns: dict[str, pa.DataType] = {name: typ for name, typ, _ in singles}
    columns["add"] = add_type
    columns["remove"] = remove_type
    parts = []
    for name, _typ, rows in singles:
        if rows:
            parts.append(
                pa.table(
                    {
                        c: _column(rows if c == name else None, t, len(rows))
                        for c, t in columns.items()
                    }
                )
            )
    n_add, n_rem = files.num_rows, tomb.num_rows
    add_arr = pa.StructArray.from_arrays(add_children, fields=add_fields)
    parts.append(
        pa.table({c: (add_arr if c == "add" else pa.nulls(n_add, t)) for c, t in columns.items()})
    )
    rem_arr = pa.StructArray.from_arrays(
        [tomb.column(f.name).combine_chunks() for f in remove_fields], fields=remove_fields
    )
    parts.append(
        pa.table(
            {c: (rem_arr if c == "remove" else pa.nulls(n_rem, t)) for c, t in columns.items()}
        )
    )
    return pa.concat_tables(parts)


def write_checkpoint(
    store: LogStore, log_dir: str, state: TableState, v2: bool = False
) -> dict[str, Any]:
    """Write a checkpoint for ``state`` and point ``_last_checkpoint`` at it.

    Tables with the ``v2Checkpoint`` feature get a UUID-named v2 Parquet checkpoint
    (all actions inline); others a classic single-file checkpoint.
    """
    table = checkpoint_table(state, v2=v2)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    data = sink.getvalue().to_pybytes()
    if v2:
        name = uuid_checkpoint_name(state.version, str(uuid.uuid4()), "parquet")
        store.write_if_absent(f"{log_dir}/{name}", data)
    else:
        # Racing writers of the same classic checkpoint write identical content (spec).
        store.write(f"{log_dir}/{classic_checkpoint_name(state.version)}", data)
    hint = {
        "version": state.version,
        "size": table.num_rows,
        "sizeInBytes": len(data),
        "numOfAddFiles": state.files.num_rows,
    }
    store.write(f"{log_dir}/{LAST_CHECKPOINT}", json.dumps(hint).encode(), durable=False)
    return hint


def referenced_sidecars(store: LogStore, log_dir: str) -> set[str]:
    """Names of sidecar files that any v2 checkpoint in the log still references."""
    names: set[str] = set()
    for checkpoints in scan_log(store, log_dir, 0).checkpoints.values():
        for cp in checkpoints:
            if cp.kind is CheckpointKind.MULTIPART:
                continue
            status = cp.files[0]
            if cp.is_json:
                rows = parse_actions(store.read(status.path), status.path).sidecars
            else:
                parquet = _open_parquet(store, status.path)
                has_sidecars = parquet.schema_arrow.get_field_index("sidecar") >= 0
                table = _read_columns(parquet, status.path, ["sidecar"]) if has_sidecars else None
                rows = _rows(table.column("sidecar")) if table is not None else []
            names |= {str(r["path"]).rsplit("/", 1)[-1] for r in rows}
    return names


# What decoding damaged checkpoint bytes can raise past Parquet's own checks (a flipped
# byte may leave a valid file whose strings are not UTF-8, or whose values overflow).
_DECODING_ERRORS = (pa.ArrowException, ValueError, TypeError, KeyError, OverflowError)


def load_state(store: LogStore, checkpoint: Checkpoint | None, log_dir: str) -> TableState:
    if checkpoint is None:
        return empty_state()
    try:
        return read_checkpoint(store, checkpoint, log_dir)
    except CorruptLogError:
        raise
    except _DECODING_ERRORS as e:
        raise CorruptLogError(
            f"cannot read the checkpoint at version {checkpoint.version} "
            f"({checkpoint.files[0].path}): {type(e).__name__}: {e}"
        ) from e
