"""Expired log cleanup (PROTOCOL.md "Metadata Cleanup").

Deletes commits, checksums and checkpoints older than the newest checkpoint that
is itself older than the log retention, so every version still in the retention
window stays reconstructable; compaction files starting at or before that
checkpoint go too, and sidecars no remaining checkpoint references.

Checkpoint protection (protocol_rfcs/checkpoint-protection.md): on a table whose protocol
has ``checkpointProtection``, no checkpoint before ``protect_before`` is deleted unless the
whole history before that version goes in the same cleanup; commits are deleted before
checkpoints, so a crash midway never leaves commits without the checkpoint below them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from delta_pyspark.core.log.segment import COMPACTION_PATTERN, SIDECAR_DIR, scan_log
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.core.storage.log_store import LogStore

_DAY_MS = 86_400_000
CHECKPOINT_PROTECTION = "checkpointProtection"
PROTECTION_VERSION_KEY = "delta.requireCheckpointProtectionBeforeVersion"


def protected_before(protocol: Protocol, configuration: Mapping[str, str]) -> int:
    """The version before which checkpoints are protected (0: none)."""
    if not supports(protocol, CHECKPOINT_PROTECTION):
        return 0
    try:
        return max(0, int(configuration.get(PROTECTION_VERSION_KEY, "0")))
    except ValueError:
        return 0


def cleanup_expired_logs(
    store: LogStore,
    log_dir: str,
    retention_ms: int,
    now_ms: int | None = None,
    *,
    granularity_ms: int = _DAY_MS,
    protect_before: int = 0,
) -> list[str]:
    """Delete expired log files; returns the deleted paths (commits first, then checkpoints).

    ``granularity_ms``: the cutoff is truncated to it (midnight UTC, as the spec says;
    DROP FEATURE ... TRUNCATE HISTORY truncates to the minute).
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = (now_ms - retention_ms) // granularity_ms * granularity_ms
    listing = scan_log(store, log_dir, 0)
    old_commits = [v for v, s in listing.commits.items() if s.modification_time <= cutoff]
    if not old_commits:
        return []
    cutoff_commit = max(old_commits)
    candidates = [v for v in listing.checkpoints if v <= cutoff_commit]
    if not candidates:
        return []
    keep_from = max(candidates)
    if keep_from < protect_before:
        return []  # protected checkpoints go only with all the history before them
    expired = []
    for status in store.list_from(log_dir):
        name = status.name
        version = int(name[:20]) if name[:20].isdigit() else None
        if version is None:
            continue
        # Everything below the kept checkpoint goes; compactions go by start version.
        if version < keep_from or (COMPACTION_PATTERN.match(name) and version <= keep_from):
            expired.append(status)
    deleted: list[str] = []
    for status in sorted(expired, key=lambda s: (".checkpoint." in s.name, s.name)):
        store.delete(status.path)
        deleted.append(status.path)
    deleted += _cleanup_sidecars(store, log_dir, now_ms)
    return deleted


def _cleanup_sidecars(store: LogStore, log_dir: str, now_ms: int) -> list[str]:
    from delta_pyspark.core.log.checkpoint import referenced_sidecars

    sidecar_dir = f"{log_dir}/{SIDECAR_DIR}"
    files = list(store.list_from(sidecar_dir))
    if not files:
        return []
    referenced = referenced_sidecars(store, log_dir)
    young = now_ms // _DAY_MS * _DAY_MS - _DAY_MS
    deleted = []
    for status in files:
        if status.name not in referenced and status.modification_time < young:
            store.delete(status.path)
            deleted.append(status.path)
    return deleted
