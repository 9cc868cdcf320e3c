"""The shallow clone registry: ``_delta_clones/<uuid>.json`` in a clone's *source* table.

CLONE records every shallow clone there (``{"clonePath": ..., "sourceVersion": ...,
"createdAt": ...}``) before its commit, so that VACUUM of the source keeps the files the
clone references (see ``vacuum``). The directory starts with ``_``, so Delta readers and
VACUUM ignore its files.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

from delta_pyspark.core.storage.locations import join, normalise
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.exceptions import DeltaError

CLONE_REGISTRY_DIR = "_delta_clones"


@dataclass(frozen=True)
class CloneEntry:
    """One registered shallow clone of a table."""

    registry_file: str
    clone_path: str
    source_version: int | None
    registered_ms: int


def register_shallow_clone(source_root: str, clone_root: str, source_version: int) -> str:
    """Record ``clone_root`` in the source's clone registry; returns the entry's path."""
    directory = join(normalise(source_root), CLONE_REGISTRY_DIR)
    path = join(directory, f"{uuid.uuid4()}.json")
    body = {
        "clonePath": normalise(clone_root),
        "sourceVersion": source_version,
        "createdAt": int(time.time() * 1000),
    }
    log_store_for(path).write(path, json.dumps(body).encode())
    return path


def registered_clones(table_root: str) -> list[CloneEntry]:
    """The shallow clones registered in ``table_root`` (malformed entries are errors)."""
    directory = join(normalise(table_root), CLONE_REGISTRY_DIR)
    store = log_store_for(directory)
    out = []
    for status in store.list_from(directory):
        if not status.name.endswith(".json"):
            continue
        path = status.path
        try:
            body = json.loads(store.read(path))
            mtime = status.modification_time
            clone_path = str(body["clonePath"])
        except FileNotFoundError:
            continue
        except (ValueError, KeyError, TypeError) as e:
            raise DeltaError(
                f"shallow clone registry entry {path} is malformed ({e}); fix or delete it "
                "before running VACUUM"
            ) from None
        version = body.get("sourceVersion")
        out.append(
            CloneEntry(path, clone_path, int(version) if version is not None else None, mtime)
        )
    return out
