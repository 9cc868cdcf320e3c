"""Typed readers for the ``delta.*`` table properties the log layer obeys."""

from __future__ import annotations

import re
from collections.abc import Mapping

from delta_pyspark.exceptions import DeltaIllegalArgumentException

CHECKPOINT_INTERVAL = "delta.checkpointInterval"
LOG_RETENTION = "delta.logRetentionDuration"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
CHECKPOINT_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
CHECKPOINT_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
ISOLATION_LEVEL = "delta.isolationLevel"
APPEND_ONLY = "delta.appendOnly"

_UNIT_MS = {
    "microsecond": 0.001,
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 7 * 86_400_000,
}
_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+)\s*([a-z]+?)s?\s*$", re.IGNORECASE)


def parse_interval_ms(text: str) -> int:
    """``interval 7 days`` / ``30 days`` / ``1 hour`` to milliseconds."""
    m = _INTERVAL.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNIT_MS:
        raise DeltaIllegalArgumentException(
            f"invalid interval {text!r}: expected e.g. 'interval 7 days'"
        )
    return int(int(m.group(1)) * _UNIT_MS[unit])


def _bool(conf: Mapping[str, str], key: str, default: bool) -> bool:
    value = conf.get(key)
    return default if value is None else value.strip().lower() == "true"


def checkpoint_interval(conf: Mapping[str, str]) -> int:
    value = int(conf.get(CHECKPOINT_INTERVAL, "10"))
    if value <= 0:
        raise DeltaIllegalArgumentException(f"{CHECKPOINT_INTERVAL} must be positive, got {value}")
    return value


def log_retention_ms(conf: Mapping[str, str]) -> int:
    return parse_interval_ms(conf.get(LOG_RETENTION, "interval 30 days"))


def deleted_file_retention_ms(conf: Mapping[str, str]) -> int:
    return parse_interval_ms(conf.get(DELETED_FILE_RETENTION, "interval 1 week"))


def expired_log_cleanup(conf: Mapping[str, str]) -> bool:
    return _bool(conf, EXPIRED_LOG_CLEANUP, True)


def checkpoint_stats_as_json(conf: Mapping[str, str]) -> bool:
    return _bool(conf, CHECKPOINT_STATS_AS_JSON, True)


def checkpoint_stats_as_struct(conf: Mapping[str, str]) -> bool:
    return _bool(conf, CHECKPOINT_STATS_AS_STRUCT, False)


def in_commit_timestamps(conf: Mapping[str, str]) -> bool:
    return _bool(conf, IN_COMMIT_TIMESTAMPS, False)


def append_only(conf: Mapping[str, str]) -> bool:
    return _bool(conf, APPEND_ONLY, False)
