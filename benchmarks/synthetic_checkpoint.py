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


def _write_checkpoint(log_dir: Path, version: int, files: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    protocol = {"minReaderVersion": 1, "minWriterVersion": 2}
    metadata = {
        "id": str(uuid.UUID(int=seed)),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": ["part"],
        "configuration": {"delta.checkpoint.writeStatsAsStruct": "true"},
        "createdTime": BASE_MS,
    }
    remove_type = pa.struct([REMOVE_SCHEMA.field(n) for n in CHECKPOINT_REMOVE_FIELDS])
    writer: pq.ParquetWriter | None = None
    path = log_dir / f"{version:020d}.checkpoint.parquet"
    try:
        for first in range(0, files, ROW_GROUP_ROWS):
            n = min(ROW_GROUP_ROWS, files - first)
            add = _add_column(_columns(rng, first, n, version))
            columns = {
                "txn": pa.nulls(n, TXN_TYPE),
                "add": add,
                "remove": pa.nulls(n, remove_type),
                "metaData": pa.nulls(n, METADATA_TYPE),
                "protocol": pa.nulls(n, PROTOCOL_TYPE),
            }
            if first == 0:
                head = {c: pa.nulls(2, a.type) for c, a in columns.items()}
                head["protocol"] = pa.concat_arrays(
                    [_single(PROTOCOL_TYPE, protocol), pa.nulls(1, PROTOCOL_TYPE)]
                )
                head["metaData"] = pa.concat_arrays(
                    [pa.nulls(1, METADATA_TYPE), _single(METADATA_TYPE, metadata)]
                )
                columns = {c: pa.concat_arrays([head[c], a]) for c, a in columns.items()}
            table = pa.table(columns)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS + 2)
    finally:
        if writer is not None:
            writer.close()
    hint = {"version": version, "size": files + 2, "sizeInBytes": path.stat().st_size}
    (log_dir / "_last_checkpoint").write_text(json.dumps(hint | {"numOfAddFiles": files}))
    return path.stat().st_size


def _commit(log_dir: Path, version: int, files: int, seed: int) -> None:
    """Adds of new files and removes of checkpointed ones (the first rows of each row group)."""
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
    checkpoint = pq.ParquetFile(log_dir / f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet")
    group = checkpoint.read_row_group(k % checkpoint.num_row_groups, columns=["add.path"])
    victims = [p for p in pc.struct_field(group.column("add"), "path").to_pylist() if p][
        (k - 1) * REMOVES_PER_COMMIT : k * REMOVES_PER_COMMIT
    ]
    for path in victims:
        remove = {"path": path, "deletionTimestamp": BASE_MS + version * 1000, "dataChange": True}
        lines.append({"remove": remove})
    text = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    (log_dir / f"{version:020d}.json").write_text(text)


def build_checkpointed_table(root: Path, files: int, seed: int = 42) -> dict[str, Any]:
    """A checkpoint of ``files`` adds at ``CHECKPOINT_VERSION``, then ``COMMITS_AFTER``
    commits of ``ADDS_PER_COMMIT`` adds and ``REMOVES_PER_COMMIT`` removes each.

    The commits up to the checkpoint are gone, as after metadata cleanup: readers
    start from the checkpoint.
    """
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True)
    checkpoint_bytes = _write_checkpoint(log_dir, CHECKPOINT_VERSION, files, seed)
    last = CHECKPOINT_VERSION + COMMITS_AFTER
    for version in range(CHECKPOINT_VERSION + 1, last + 1):
        _commit(log_dir, version, files, seed)
    size = sum(p.stat().st_size for p in log_dir.iterdir())
    return {
        "version": last,
        "files": files + COMMITS_AFTER * (ADDS_PER_COMMIT - REMOVES_PER_COMMIT),
        "checkpoint_bytes": checkpoint_bytes,
        "log_bytes": size,
    }
