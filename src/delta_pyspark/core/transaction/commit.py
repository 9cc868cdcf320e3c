"""Writing versions: the commit file's content and what follows the commit.

The commit point itself is ``DeltaLog.write_commit``. ``post_commit`` runs the hooks that are
never part of the commit's atomicity: the version checksum, a checkpoint every
``delta.checkpointInterval`` versions, expired-log cleanup after a checkpoint,
symlink manifests when ``delta.compatibility.symlinkFormatManifest.enabled``, and Iceberg
metadata (UniForm) when ``delta.universalFormat.enabledFormats`` has ``iceberg``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from delta_pyspark._version import __version__
from delta_pyspark.core.log import checksum
from delta_pyspark.core.log.checkpoint import write_checkpoint
from delta_pyspark.core.log.metadata_cleanup import cleanup_expired_logs, protected_before
from delta_pyspark.core.log.segment import commit_name
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import CommitInfo, encode_action
from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.core.uniform.compat import iceberg_enabled
from delta_pyspark.exceptions import DeltaUnsupportedOperationException

logger = logging.getLogger(__name__)

ENGINE_INFO = f"delta-pyspark/{__version__}"


def encode_commit(actions: Iterable[tuple[str, Mapping[str, Any]]]) -> bytes:
    return ("\n".join(encode_action(kind, body) for kind, body in actions) + "\n").encode()


def commit_info(
    operation: str,
    parameters: Mapping[str, Any],
    read_version: int | None,
    isolation_level: str | None,
    is_blind_append: bool,
    metrics: Mapping[str, Any] | None = None,
    user_metadata: str | None = None,
    txn_id: str | None = None,
    in_commit_timestamp: int | None = None,
) -> CommitInfo:
    """The ``commitInfo`` delta-spark writes, so DESCRIBE HISTORY shows the same fields."""
    info: CommitInfo = {}
    now = int(time.time() * 1000)
    if in_commit_timestamp is not None:
        info["inCommitTimestamp"] = in_commit_timestamp
    info["timestamp"] = now
    info["operation"] = operation
    # a parameter without a value is JSON null, as delta-spark writes it (not the text "null")
    info["operationParameters"] = {
        k: (v if isinstance(v, str) or v is None else _json_text(v)) for k, v in parameters.items()
    }
    if read_version is not None and read_version >= 0:
        info["readVersion"] = read_version
    if isolation_level:
        info["isolationLevel"] = isolation_level
    info["isBlindAppend"] = is_blind_append
    if metrics:
        info["operationMetrics"] = {k: str(v) for k, v in metrics.items()}
    if user_metadata is not None:
        info["userMetadata"] = user_metadata
    info["engineInfo"] = ENGINE_INFO
    if txn_id:
        info["txnId"] = txn_id
    return info


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def checkpoint_now(store: LogStore, snapshot: Snapshot) -> None:
    """Write a checkpoint of ``snapshot`` (v2 when the table has the feature).

    A catalog-managed table is checkpointed only at published versions (a checkpoint
    past ``<v>.json`` would let filesystem listings skip commits the catalog still holds).
    """
    if not is_published(store, snapshot):
        raise DeltaUnsupportedOperationException(
            f"cannot checkpoint version {snapshot.version} of catalog-managed table "
            f"{snapshot.table_root}: it is not published yet (publish it first)"
        )
    v2 = supports(snapshot.protocol, "v2Checkpoint")
    write_checkpoint(store, snapshot.segment.log_dir, snapshot.state, v2=v2)


def is_published(store: LogStore, snapshot: Snapshot) -> bool:
    """Whether ``snapshot``'s version exists as ``<v>.json`` (always, unless catalog-managed)."""
    if not supports(snapshot.protocol, "catalogManaged"):
        return True
    return store.exists(f"{snapshot.segment.log_dir}/{commit_name(snapshot.version)}")


def post_commit(log: DeltaLog, snapshot: Snapshot, txn_id: str | None = None) -> None:
    """Hooks after a successful commit; failures here never undo the commit."""
    store = log.store
    conf = snapshot.configuration
    try:
        ict = None
        if props.in_commit_timestamps(conf) and snapshot.commit_info:
            ict = snapshot.commit_info.get("inCommitTimestamp")
        checksum.write_checksum(
            store, snapshot.segment.log_dir, snapshot.state, txn_id=txn_id, ict=ict
        )
        due = snapshot.version > 0 and snapshot.version % props.checkpoint_interval(conf) == 0
        if due and is_published(store, snapshot):
            checkpoint_now(store, snapshot)
            # the catalog owns a catalog-managed table's log: no cleanup unless it allows
            if props.expired_log_cleanup(conf) and not supports(
                snapshot.protocol, "catalogManaged"
            ):
                cleanup_expired_logs(
                    store,
                    snapshot.segment.log_dir,
                    props.log_retention_ms(conf),
                    protect_before=protected_before(snapshot.protocol, conf),
                )
    except Exception:  # a hook failure must not turn a committed write into an error
        logger.exception("post-commit hook failed for version %d", snapshot.version)
    if props.symlink_manifest_enabled(conf):
        try:
            from delta_pyspark.core.transaction.manifest import post_commit_update

            post_commit_update(store, snapshot)
        except Exception:  # the commit stands; `generate` rebuilds the manifests
            logger.exception("symlink manifest update failed for version %d", snapshot.version)
    if iceberg_enabled(conf):
        try:
            from delta_pyspark.core.uniform.conversion import convert

            convert(log, snapshot)
        except Exception:  # the commit stands; the next commit converts every version since
            logger.exception("Iceberg metadata for version %d failed", snapshot.version)
