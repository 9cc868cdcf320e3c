"""Reading large checkpoints: the file is decoded in row batches and only the columns
replay needs are read, so rows spread over many batches, action types interleaved, and
``stats_parsed`` read only for rows without JSON stats must all come back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyspark.core.log.checkpoint import _BATCH_ROWS
from delta_pyspark.core.protocol.actions import DELETION_VECTOR_TYPE, STRING_MAP
from delta_pyspark.core.snapshot.delta_log import DeltaLog

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
STATS_PARSED = pa.struct(
    [("numRecords", pa.int64()), ("minValues", pa.struct([("id", pa.int64())]))]
)
ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DELETION_VECTOR_TYPE),
        ("stats_parsed", STATS_PARSED),
        ("partitionValues_parsed", pa.struct([("part", pa.string())])),
    ]
)
REMOVE = pa.struct(
    [("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_())]
)
PROTOCOL = pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())])
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STRING_MAP),
    ]
)


def test_large_interleaved_checkpoint_with_struct_only_stats(tmp_path: Path) -> None:
    n = 2 * _BATCH_ROWS + 123
    adds, removes = [], []
    for i in range(n):
        part = f"p{i % 3}"
        json_stats = i % 7 != 0  # every 7th add keeps only stats_parsed
        adds.append(
            {
                "path": f"part={part}/f{i}.parquet",
                "partitionValues": [("part", part)],
                "size": i,
                "modificationTime": 1000 + i,
                "dataChange": False,
                "stats": json.dumps({"numRecords": i}) if json_stats else None,
                "tags": [("t", str(i))] if i % 5 == 0 else None,
                "stats_parsed": {"numRecords": i, "minValues": {"id": -i}},
                "partitionValues_parsed": {"part": part},
            }
        )
        if i % 1000 == 999:
            removes.append(
                {"path": f"gone{i}.parquet", "deletionTimestamp": 2**50, "dataChange": True}
            )
    rows: list[dict] = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": []},
                "schemaString": SCHEMA,
                "partitionColumns": ["part"],
                "configuration": [],
            }
        },
    ]
    # Removes in between adds: the add rows are not contiguous.
    for i, a in enumerate(adds):
        rows.append({"add": a})
        if i % 1000 == 999:
            rows.append({"remove": removes[i // 1000]})
    columns = {"protocol": PROTOCOL, "metaData": METADATA, "add": ADD, "remove": REMOVE}
    table = pa.table(
        {name: pa.array([r.get(name) for r in rows], typ) for name, typ in columns.items()}
    )
    log = tmp_path / "_delta_log"
    log.mkdir()
    pq.write_table(table, log / f"{5:020d}.checkpoint.parquet", row_group_size=10_000)
    (log / "_last_checkpoint").write_text(json.dumps({"version": 5, "size": len(rows)}))

    snap = DeltaLog(str(tmp_path)).snapshot()
    assert snap.version == 5 and snap.num_files == n
    files = snap.files
    assert files.column("path").to_pylist() == [a["path"] for a in adds]
    assert files.column("size").to_pylist() == list(range(n))
    stats = files.column("stats").to_pylist()
    assert stats == [
        a["stats"] or json.dumps(a["stats_parsed"], separators=(",", ":")) for a in adds
    ]
    assert files.column("tags").to_pylist() == [a["tags"] for a in adds]
    assert files.column("partitionValues").to_pylist() == [a["partitionValues"] for a in adds]
    assert "stats_parsed" not in files.column_names
    assert snap.tombstones.column("path").to_pylist() == [r["path"] for r in removes]
    keys = snap.files_with_keys.column("_key").to_pylist()
    assert keys == [a["path"] + "\x00" for a in adds]
