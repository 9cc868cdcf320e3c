"""Version checksum files ``NNN.crc`` (PROTOCOL.md "Version Checksum File").

Written after each commit from the post-commit state; when present they are
checked against the replayed state. They are optional: a malformed one is ignored
(with a warning in the log), but one that disagrees with the replayed log means the
log or the checksum is damaged, and neither can be trusted over the other: loading
that version raises ``ChecksumMismatchError`` naming both values, as delta-spark's
``DELTA_TXN_LOG_FAILED_INTEGRITY`` does by default. A user who has checked that the
commits are right deletes the ``.crc`` file (checksums are optional) to read on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pyarrow.compute as pc

from delta_pyspark.core.log.replay import TableState
from delta_pyspark.core.log.segment import checksum_name
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.exceptions import ChecksumMismatchError, FileAlreadyExistsError

log = logging.getLogger(__name__)


def table_size(state: TableState) -> int:
    size = state.files.column("size")
    return int(pc.sum(size).as_py() or 0) if len(size) else 0


def checksum_of(
    state: TableState, txn_id: str | None = None, ict: int | None = None
) -> dict[str, Any]:
    assert state.metadata is not None and state.protocol is not None
    out: dict[str, Any] = {
        "tableSizeBytes": table_size(state),
        "numFiles": state.files.num_rows,
        "numMetadata": 1,
        "numProtocol": 1,
        "metadata": state.metadata.to_dict(),
        "protocol": state.protocol.to_dict(),
        "setTransactions": [t.to_dict() for t in state.txns.values()],
        "domainMetadata": [d.to_dict() for d in state.domains.values()],
    }
    if txn_id:
        out["txnId"] = txn_id
    if ict is not None:
        out["inCommitTimestampOpt"] = ict
    return out


def write_checksum(store: LogStore, log_dir: str, state: TableState, **kw: Any) -> None:
    data = json.dumps(checksum_of(state, **kw), separators=(",", ":")).encode()
    try:
        store.write_if_absent(f"{log_dir}/{checksum_name(state.version)}", data, durable=False)
    except FileAlreadyExistsError:
        log.warning("checksum for version %d already exists; left as is", state.version)


def read_checksum(store: LogStore, log_dir: str, version: int) -> dict[str, Any] | None:
    """The parsed checksum, or None when absent or malformed (with a warning)."""
    path = f"{log_dir}/{checksum_name(version)}"
    try:
        raw = store.read(path)
    except FileNotFoundError:
        return None
    try:
        crc = json.loads(raw)
        int(crc["numFiles"])
        int(crc["tableSizeBytes"])
    except (ValueError, KeyError, TypeError) as e:
        log.warning("ignoring malformed version checksum %s: %s", path, e)
        return None
    return crc


def _protocol_key(p: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        p.get("minReaderVersion"),
        p.get("minWriterVersion"),
        frozenset(p.get("readerFeatures") or ()),
        frozenset(p.get("writerFeatures") or ()),
    )


def _schema(schema_string: Any) -> Any:
    try:
        return json.loads(schema_string)
    except (TypeError, ValueError):
        return schema_string


def disagreements(state: TableState, crc: dict[str, Any]) -> list[str]:
    """How a checksum differs from the replayed state: file count, table size, and the
    metadata (id, schema, partitioning, configuration) and protocol it records, if any.

    Engines spell the same metadata differently (field order, empty feature lists), so
    only values the protocol defines are compared, schemas as parsed JSON.
    """
    problems = []
    if int(crc["numFiles"]) != state.files.num_rows:
        problems.append(f"numFiles {crc['numFiles']} != {state.files.num_rows}")
    if int(crc["tableSizeBytes"]) != table_size(state):
        problems.append(f"tableSizeBytes {crc['tableSizeBytes']} != {table_size(state)}")
    meta = crc.get("metadata")
    if isinstance(meta, dict) and state.metadata is not None:
        mine = state.metadata.to_dict()
        for key in ("id", "partitionColumns", "configuration", "schemaString"):
            theirs, ours = meta.get(key), mine.get(key)
            if key == "schemaString":
                theirs, ours = _schema(theirs), _schema(ours)
            if key in meta and theirs != ours:
                problems.append(f"metadata {key} differs")
    proto = crc.get("protocol")
    ours = state.protocol.to_dict() if state.protocol is not None else None
    if isinstance(proto, dict) and ours is not None and _protocol_key(proto) != _protocol_key(ours):
        problems.append(f"protocol {proto} != {ours}")
    return problems


def validate(state: TableState, crc: dict[str, Any], path: str) -> None:
    """Raise ``ChecksumMismatchError`` if the replayed state and its checksum disagree."""
    problems = disagreements(state, crc)
    if problems:
        raise ChecksumMismatchError(
            f"[DELTA_TXN_LOG_FAILED_INTEGRITY] version checksum {path} disagrees with the log "
            f"replayed to version {state.version}: {'; '.join(problems)}. The log or the "
            "checksum is damaged; if the commits are known to be right, delete the .crc file "
            "(checksums are optional) to read the table as its commits say."
        )
