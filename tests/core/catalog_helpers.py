"""Small helpers shared by the catalog tests (the PostgreSQL server is ``postgres_server``)."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)


def add(path: str, **extra: Any) -> dict[str, Any]:
    """An add action for a (log-only) data file."""
    return {
        "path": path,
        "partitionValues": {},
        "size": 10,
        "modificationTime": 1,
        "dataChange": True,
        **extra,
    }
