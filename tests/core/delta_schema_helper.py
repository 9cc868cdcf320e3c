"""Test-only: Delta schema JSON -> Arrow schema with physical names (independent of the core's
schema module, which the stats tests must not depend on)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

_PRIMITIVES = {
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, str):
        m = re.match(r"decimal\((\d+),\s*(\d+)\)", t)
        return pa.decimal128(int(m.group(1)), int(m.group(2))) if m else _PRIMITIVES[t]
    if t["type"] == "struct":
        return pa.struct([arrow_field(f) for f in t["fields"]])
    if t["type"] == "array":
        return pa.list_(arrow_type(t["elementType"]))
    return pa.map_(arrow_type(t["keyType"]), arrow_type(t["valueType"]))


def arrow_field(f: dict[str, Any]) -> pa.Field:
    name = f.get("metadata", {}).get("delta.columnMapping.physicalName", f["name"])
    return pa.field(name, arrow_type(f["type"]))


def read_log(table: Path) -> tuple[pa.Schema, dict[str, str | None]]:
    """(physical Arrow schema of the latest metaData, {path: stats} of all add actions)."""
    schema = None
    stats: dict[str, str | None] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                fields = json.loads(action["metaData"]["schemaString"])["fields"]
                schema = pa.schema([arrow_field(f) for f in fields])
            if "add" in action:
                stats[action["add"]["path"]] = action["add"].get("stats")
    assert schema is not None
    return schema, stats
