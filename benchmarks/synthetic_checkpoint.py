"""A synthetic checkpointed table of any size, built in seconds (for ``snapshot_load``).

The checkpoint is written straight from vectorised columns with pyarrow, in the layout
delta-spark writes for a table of this size: one classic single-file checkpoint
(``<v>.checkpoint.parquet``; delta-spark splits a checkpoint into parts only when
``spark.databricks.delta.checkpoint.partSize`` is set, and writes v2 checkpoints only for
tables with the ``v2Checkpoint`` feature), with ``stats`` as JSON and, as delta-spark
does by default (``delta.checkpoint.writeStatsAsStruct``), ``stats_parsed`` and
``partitionValues_parsed`` beside it. Rows: protocol, metaData, then one per live file,
in row groups of ``ROW_GROUP_ROWS``. A few JSON commits follow the checkpoint (adds and
removes of checkpointed files), as in any live table.

No data files are written: loading a snapshot reads only the log.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.snapshot_load import SCHEMA
from delta_pyspark.core.log.checkpoint import (
    CHECKPOINT_METADATA_TYPE,
    CHECKPOINT_REMOVE_FIELDS,
    METADATA_TYPE,
    PROTOCOL_TYPE,
    TXN_TYPE,
)
from delta_pyspark.core.protocol.actions import ADD_SCHEMA, REMOVE_SCHEMA

PARTITIONS = 100
ROW_GROUP_ROWS = 262_144
BASE_MS = 1_700_000_000_000
CHECKPOINT_VERSION = 10
SIDECAR_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", pa.map_(pa.string(), pa.string())),
    ]
)
COMMITS_AFTER = 5
ADDS_PER_COMMIT = 100
REMOVES_PER_COMMIT = 20


def _strings(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values), pa.string())


def _join(*parts: pa.Array | str) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _uuids(rng: np.random.Generator, n: int) -> list[str]:
    text = rng.bytes(16 * n).hex()
    return [
        f"{text[i : i + 8]}-{text[i + 8 : i + 12]}-{text[i + 12 : i + 16]}-"
        f"{text[i + 16 : i + 20]}-{text[i + 20 : i + 32]}"
        for i in range(0, 32 * n, 32)
    ]


def _columns(rng: np.random.Generator, first: int, n: int, version: int) -> dict[str, Any]:
    """The numbers and strings of ``n`` realistic files (indexes ``first``...)."""
    index = np.arange(first, first + n, dtype=np.int64)
    part = _join("p", _strings(index % PARTITIONS))
    path = _join(
        "part=",
        part,
        "/part-",
        pc.utf8_lpad(_strings(index % 1000), 5, "0"),
        "-",
        pa.array(_uuids(rng, n), pa.string()),
        ".c000.snappy.parquet",
    )
    low = rng.integers(0, 10**9, n)
    rows = rng.integers(1_000, 100_000, n)
    ts_lo = BASE_MS + rng.integers(0, 10**9, n)
    return {
        "index": index,
        "part": part,
        "path": path,
        "size": rng.integers(100_000, 128 * 1024 * 1024, n),
        "modificationTime": np.full(n, BASE_MS + version * 1000, dtype=np.int64),
        "numRecords": rows,
        "min": (low, np.round(rng.random(n), 6), low % 9973, ts_lo),
        "max": (low + rows, np.round(1 + rng.random(n), 6), (low + rows) % 9973, ts_lo + 3_600_000),
        "nulls": (np.zeros(n, np.int64), rng.integers(0, 10, n), rng.integers(0, 10, n)),
    }


def _bounds_json(bounds: tuple[np.ndarray, ...]) -> list[pa.Array | str]:
    ident, value, name, ts = bounds
    stamp = np.datetime_as_string(ts.astype("datetime64[ms]"), unit="ms")
    return [
        '{"id":',
        _strings(ident),
        ',"value":',
        _strings(value),
        ',"name":"name-',
        pc.utf8_lpad(_strings(name), 5, "0"),
        '","ts":"',
        pa.array(stamp, pa.string()),
        'Z"}',
    ]


def _stats_json(c: dict[str, Any]) -> pa.Array:
    zero, value_nulls, name_nulls = (_strings(x) for x in c["nulls"])
    return _join(
        '{"numRecords":',
        _strings(c["numRecords"]),
        ',"minValues":',
        *_bounds_json(c["min"]),
        ',"maxValues":',
        *_bounds_json(c["max"]),
        ',"nullCount":{"id":',
        zero,
        ',"value":',
        value_nulls,
        ',"name":',
        name_nulls,
        ',"ts":',
        zero,
        "}}",
    )


def _bounds_struct(bounds: tuple[np.ndarray, ...]) -> pa.StructArray:
    ident, value, name, ts = bounds
    names = _join("name-", pc.utf8_lpad(_strings(name), 5, "0"))
    stamps = pa.array(ts * 1000, pa.int64()).cast(pa.timestamp("us", "UTC"))
    return pa.StructArray.from_arrays(
        [pa.array(ident), pa.array(value), names, stamps], names=["id", "value", "name", "ts"]
    )


def _stats_struct(c: dict[str, Any]) -> pa.StructArray:
    zero, value_nulls, name_nulls = (pa.array(x) for x in c["nulls"])
    nulls = pa.StructArray.from_arrays(
        [zero, value_nulls, name_nulls, zero], names=["id", "value", "name", "ts"]
    )
    return pa.StructArray.from_arrays(
        [pa.array(c["numRecords"]), _bounds_struct(c["min"]), _bounds_struct(c["max"]), nulls],
        names=["numRecords", "minValues", "maxValues", "nullCount"],
    )


def _partition_values(part: pa.Array) -> pa.MapArray:
    n = len(part)
    offsets = pa.array(np.arange(n + 1, dtype=np.int32))
    keys = pa.array(np.full(n, "part", dtype=object), pa.string())
    return pa.MapArray.from_arrays(offsets, keys, part)


def _add_column(c: dict[str, Any]) -> pa.StructArray:
    n = len(c["path"])
    part_values = _partition_values(c["part"])
    children = {
        "path": c["path"],
        "partitionValues": part_values,
        "size": pa.array(c["size"]),
        "modificationTime": pa.array(c["modificationTime"]),
        "dataChange": pa.array(np.zeros(n, dtype=bool)),
        "stats": _stats_json(c),
    }
    arrays = [children.get(f.name, pa.nulls(n, f.type)) for f in ADD_SCHEMA]
    fields = list(ADD_SCHEMA)
    stats_parsed = _stats_struct(c)
    parts_parsed = pa.StructArray.from_arrays([c["part"]], names=["part"])
    arrays += [stats_parsed, parts_parsed]
    fields += [
        pa.field("stats_parsed", stats_parsed.type),
        pa.field("partitionValues_parsed", parts_parsed.type),
    ]
    return pa.StructArray.from_arrays(arrays, fields=fields)


def _single(typ: pa.DataType, row: dict[str, Any]) -> pa.Array:
    fixed = {k: (list(v.items()) if isinstance(v, dict) else v) for k, v in row.items()}
    return pa.array([fixed], typ)


def _protocol_and_metadata(seed: int, v2: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    protocol: dict[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
    if v2:
        protocol = {"minReaderVersion": 3, "minWriterVersion": 7}
        protocol |= {"readerFeatures": ["v2Checkpoint"], "writerFeatures": ["v2Checkpoint"]}
    metadata = {
        "id": str(uuid.UUID(int=seed)),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": ["part"],
        "configuration": {"delta.checkpoint.writeStatsAsStruct": "true"},
        "createdTime": BASE_MS,
    }
    return protocol, metadata


def _write_file_actions(
    path: Path,
    rng: np.random.Generator,
    first: int,
    files: int,
    version: int,
    head: dict[str, pa.Array] | None = None,
) -> None:
    """Files ``first`` ... ``first + files - 1`` as ``add`` rows of a Parquet file (a
    sidecar's columns: ``add``, ``remove``), in row groups of ``ROW_GROUP_ROWS``. ``head``:
    a classic checkpoint's other actions, by column: their rows come first, and the file
    gets their columns too."""
    remove_type = pa.struct([REMOVE_SCHEMA.field(n) for n in CHECKPOINT_REMOVE_FIELDS])
    head_rows = len(next(iter(head.values()))) if head else 0
    writer: pq.ParquetWriter | None = None
    try:
        for start in range(first, first + files, ROW_GROUP_ROWS):
            n = min(ROW_GROUP_ROWS, first + files - start)
            add = _add_column(_columns(rng, start, n, version))
            columns = {"add": add, "remove": pa.nulls(n, remove_type)}
            columns |= {c: pa.nulls(n, rows.type) for c, rows in (head or {}).items()}
            if head is not None and start == first:
                before = {c: head.get(c, pa.nulls(head_rows, a.type)) for c, a in columns.items()}
                columns = {c: pa.concat_arrays([before[c], a]) for c, a in columns.items()}
            table = pa.table(columns)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS + 2)
    finally:
        if writer is not None:
            writer.close()


def _write_checkpoint(log_dir: Path, version: int, files: int, seed: int, sidecars: int) -> Path:
    """The checkpoint: classic, or with ``sidecars`` > 0 a v2 checkpoint whose files are in
    that many sidecars. Returns the first file holding ``add`` rows."""
    rng = np.random.default_rng(seed)
    protocol, metadata = _protocol_and_metadata(seed, sidecars > 0)
    actions = [_single(PROTOCOL_TYPE, protocol), _single(METADATA_TYPE, metadata)]
    if sidecars == 0:
        path = log_dir / f"{version:020d}.checkpoint.parquet"
        head = {
            "txn": pa.nulls(2, TXN_TYPE),
            "metaData": pa.concat_arrays([pa.nulls(1, METADATA_TYPE), actions[1]]),
            "protocol": pa.concat_arrays([actions[0], pa.nulls(1, PROTOCOL_TYPE)]),
        }
        _write_file_actions(path, rng, 0, files, version, head)
        size, rows, adds_file = path.stat().st_size, files + 2, path
    else:
        (log_dir / "_sidecars").mkdir()
        rows_of = [files // sidecars + (i < files % sidecars) for i in range(sidecars)]
        parts = []
        for i, n in enumerate(rows_of):
            part = log_dir / "_sidecars" / f"{uuid.UUID(int=seed + i + 1)}.parquet"
            _write_file_actions(part, rng, sum(rows_of[:i]), n, version)
            parts.append(part)
        sidecar_rows = [
            {"path": p.name, "sizeInBytes": p.stat().st_size, "modificationTime": BASE_MS}
            for p in parts
        ]
        k = len(sidecar_rows)
        top = pa.table(
            {
                "protocol": pa.concat_arrays([actions[0], pa.nulls(k + 2, PROTOCOL_TYPE)]),
                "metaData": pa.concat_arrays(
                    [pa.nulls(1, METADATA_TYPE), actions[1], pa.nulls(k + 1, METADATA_TYPE)]
                ),
                "checkpointMetadata": pa.concat_arrays(
                    [
                        pa.nulls(2, CHECKPOINT_METADATA_TYPE),
                        _single(CHECKPOINT_METADATA_TYPE, {"version": version}),
                        pa.nulls(k, CHECKPOINT_METADATA_TYPE),
                    ]
                ),
                "sidecar": pa.concat_arrays(
                    [pa.nulls(3, SIDECAR_TYPE), pa.array(sidecar_rows, SIDECAR_TYPE)]
                ),
            }
        )
        path = log_dir / f"{version:020d}.checkpoint.{uuid.UUID(int=seed)}.parquet"
        pq.write_table(top, path, compression="snappy")
        size, rows, adds_file = sum(p.stat().st_size for p in [path, *parts]), k + 3, parts[0]
    hint = {"version": version, "size": rows, "sizeInBytes": size, "numOfAddFiles": files}
    (log_dir / "_last_checkpoint").write_text(json.dumps(hint))
    return adds_file


def _commit(log_dir: Path, version: int, files: int, seed: int, adds_file: Path) -> None:
    """Adds of new files and removes of checkpointed ones (from ``adds_file``: the first rows
    of each of its row groups)."""
    rng = np.random.default_rng(seed + version)
    k = version - CHECKPOINT_VERSION  # 1, 2, ...
    c = _columns(rng, files + (k - 1) * ADDS_PER_COMMIT, ADDS_PER_COMMIT, version)
    stats = _stats_json(c).to_pylist()
    info = {"timestamp": BASE_MS + version * 1000, "operation": "WRITE", "readVersion": version - 1}
    lines: list[dict[str, Any]] = [{"commitInfo": info}]
    for i, path in enumerate(c["path"].to_pylist()):
        part = path.split("/", 1)[0].split("=", 1)[1]
        add = {
            "path": path,
            "partitionValues": {"part": part},
            "size": int(c["size"][i]),
            "modificationTime": int(c["modificationTime"][i]),
            "dataChange": True,
            "stats": stats[i],
        }
        lines.append({"add": add})
    checkpoint = pq.ParquetFile(adds_file)
    group = checkpoint.read_row_group(k % checkpoint.num_row_groups, columns=["add.path"])
    victims = [p for p in pc.struct_field(group.column("add"), "path").to_pylist() if p][
        (k - 1) * REMOVES_PER_COMMIT : k * REMOVES_PER_COMMIT
    ]
    for path in victims:
        remove = {"path": path, "deletionTimestamp": BASE_MS + version * 1000, "dataChange": True}
        lines.append({"remove": remove})
    text = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    (log_dir / f"{version:020d}.json").write_text(text)


def build_checkpointed_table(
    root: Path, files: int, seed: int = 42, sidecars: int = 0
) -> dict[str, Any]:
    """A checkpoint of ``files`` adds at ``CHECKPOINT_VERSION``, then ``COMMITS_AFTER``
    commits of ``ADDS_PER_COMMIT`` adds and ``REMOVES_PER_COMMIT`` removes each. With
    ``sidecars`` > 0 the table has the ``v2Checkpoint`` feature and its checkpoint is a
    v2 checkpoint whose files are in that many sidecar files.

    The commits up to the checkpoint are gone, as after metadata cleanup: readers
    start from the checkpoint.
    """
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True)
    adds_file = _write_checkpoint(log_dir, CHECKPOINT_VERSION, files, seed, sidecars)
    last = CHECKPOINT_VERSION + COMMITS_AFTER
    for version in range(CHECKPOINT_VERSION + 1, last + 1):
        _commit(log_dir, version, files, seed, adds_file)
    size = sum(p.stat().st_size for p in log_dir.rglob("*") if p.is_file())
    return {
        "version": last,
        "files": files + COMMITS_AFTER * (ADDS_PER_COMMIT - REMOVES_PER_COMMIT),
        "log_bytes": size,
    }
