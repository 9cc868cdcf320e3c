"""Typed readers for the ``delta.*`` table properties the log layer obeys, and the
registry of known properties with their value checks (``validate_property``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaUnsupportedOperationException,
)

CHECKPOINT_INTERVAL = "delta.checkpointInterval"
LOG_RETENTION = "delta.logRetentionDuration"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
CHECKPOINT_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
CHECKPOINT_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
ISOLATION_LEVEL = "delta.isolationLevel"
APPEND_ONLY = "delta.appendOnly"
TYPE_WIDENING = "delta.enableTypeWidening"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION = "delta.rowTracking.materializedRowCommitVersionColumnName"

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


def check_constraints(conf: Mapping[str, str]) -> dict[str, str]:
    """The table's CHECK constraints (``delta.constraints.<name>``, the prefix in any case):
    name -> SQL expression."""
    prefix = CONSTRAINT_PREFIX.lower()
    return {k[len(prefix) :]: v for k, v in conf.items() if k.lower().startswith(prefix)}


def type_widening(conf: Mapping[str, str]) -> bool:
    return _bool(conf, TYPE_WIDENING, False)


def append_only(conf: Mapping[str, str]) -> bool:
    return _bool(conf, APPEND_ONLY, False)


# ---------------------------------------------------------------------- registry
#
# The ``delta.*`` properties a user may set (ALTER TABLE SET TBLPROPERTIES, table
# creation), each with the check delta-spark applies to its value. Keys are matched
# case-insensitively and stored in the spelling below; anything else under ``delta.``
# is refused, so a typo never silently does nothing.

SYMLINK_MANIFEST = "delta.compatibility.symlinkFormatManifest.enabled"
ENABLE_DELETION_VECTORS = "delta.enableDeletionVectors"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
CONSTRAINT_PREFIX = "delta.constraints."
FEATURE_PREFIX = "delta.feature."
MIN_READER_VERSION = "delta.minReaderVersion"
MIN_WRITER_VERSION = "delta.minWriterVersion"
ICEBERG_COMPAT_V1 = "delta.enableIcebergCompatV1"
ICEBERG_COMPAT_V2 = "delta.enableIcebergCompatV2"
ENABLED_FORMATS = "delta.universalFormat.enabledFormats"

# Every feature name PROTOCOL.md (and delta-spark) knows; whether this implementation
# can write a table with it is checked when the commit's protocol is validated.
KNOWN_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "generatedColumns",
        "allowColumnDefaults",
        "changeDataFeed",
        "columnMapping",
        "identityColumns",
        "deletionVectors",
        "rowTracking",
        "timestampNtz",
        "domainMetadata",
        "v2Checkpoint",
        "catalogManaged",
        "icebergCompatV1",
        "icebergCompatV2",
        "clustering",
        "vacuumProtocolCheck",
        "inCommitTimestamp",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
        "checkpointProtection",
        "collations-preview",
    }
)


def _bad(key: str, value: str, expected: str) -> DeltaIllegalArgumentException:
    return DeltaIllegalArgumentException(f"invalid value {value!r} for {key}: {expected}")


def _check_bool(key: str, value: str) -> str:
    if value.strip().lower() not in ("true", "false"):
        raise _bad(key, value, "needs to be a boolean (true or false)")
    return value.strip().lower()


def _check_int(low: int, high: int | None = None) -> Callable[[str, str], str]:
    def check(key: str, value: str) -> str:
        text = value.strip()
        if (
            not re.fullmatch(r"[+-]?\d+", text)
            or int(text) < low
            or (high is not None and int(text) > high)
        ):
            bound = f"between {low} and {high}" if high is not None else f">= {low}"
            raise _bad(key, value, f"needs to be an integer {bound}")
        return str(int(text))

    return check


def _check_interval(key: str, value: str) -> str:
    try:
        if parse_interval_ms(value) <= 0:
            raise _bad(key, value, "needs to be a positive interval")
    except DeltaIllegalArgumentException:
        raise _bad(
            key, value, "needs to be a calendar interval such as 'interval 7 days' (no months)"
        ) from None
    return value.strip()


def _check_choice(*choices: str) -> Callable[[str, str], str]:
    by_lower = {c.lower(): c for c in choices}

    def check(key: str, value: str) -> str:
        found = by_lower.get(value.strip().lower())
        if found is None:
            raise _bad(key, value, f"must be one of {', '.join(choices)}")
        return found

    return check


_SIZE = re.compile(r"^\s*(\d+)\s*(b|k|kb|m|mb|g|gb|t|tb)?\s*$", re.IGNORECASE)


def _check_size(key: str, value: str) -> str:
    m = _SIZE.match(value)
    if not m or int(m.group(1)) <= 0:
        raise _bad(key, value, "needs to be a positive size in bytes, e.g. 134217728 or 128mb")
    return value.strip()


def _check_parquet_version(key: str, value: str) -> str:
    if not re.fullmatch(r"1\.0\.0|2\.\d+\.\d+", value.strip()):
        raise _bad(key, value, "must be 1.0.0 or 2.<minor>.<patch>")
    return value.strip()


def _check_column_list(key: str, value: str) -> str:
    names = split_column_list(value)
    if not names or any(not n for n in names):
        raise _bad(key, value, "needs to be a comma-separated list of column names")
    return value.strip()


def split_column_list(value: str) -> list[str]:
    """``a, `b c`, s.x`` to column paths (backticks quote names with commas or spaces)."""
    out, current, quoted = [], [], False
    for ch in value:
        if ch == "`":
            quoted = not quoted
            current.append(ch)
        elif ch == "," and not quoted:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out.append("".join(current).strip())
    return [n for n in out if n] if value.strip() else []


def _check_enabled_formats(key: str, value: str) -> str:
    """The property's check when a user sets it: only ``iceberg`` is written here."""
    formats = [f.strip().lower() for f in value.split(",") if f.strip()]
    unknown = [f for f in formats if f != "iceberg"]
    if unknown:
        raise DeltaUnsupportedOperationException(
            f"[DELTA_UNIVERSAL_FORMAT_VIOLATION] {key} = {value!r}: delta-pyspark writes "
            f"only Iceberg metadata (UniForm), not {', '.join(unknown)}"
        )
    return ",".join(formats)


@dataclass(frozen=True)
class PropertySpec:
    """A known table property: its canonical key, value check and what it needs.

    ``feature``: the table feature the property needs when its value is ``true``;
    ``settable``: False for properties the engine maintains itself.
    """

    key: str
    check: Callable[[str, str], str]
    feature: str | None = None
    settable: bool = True
    why_not: str = ""


_SPECS = [
    PropertySpec(APPEND_ONLY, _check_bool, "appendOnly"),
    PropertySpec(CHECKPOINT_INTERVAL, _check_int(1)),
    PropertySpec(LOG_RETENTION, _check_interval),
    PropertySpec(DELETED_FILE_RETENTION, _check_interval),
    PropertySpec("delta.setTransactionRetentionDuration", _check_interval),
    PropertySpec("delta.checkpointRetentionDuration", _check_interval),
    PropertySpec(EXPIRED_LOG_CLEANUP, _check_bool),
    PropertySpec("delta.dropFeatureTruncateHistory.retentionDuration", _check_interval),
    PropertySpec(
        "delta.requireCheckpointProtectionBeforeVersion",
        _check_int(0),
        settable=False,
        why_not="DROP FEATURE sets it when it protects checkpoints",
    ),
    PropertySpec(CHECKPOINT_STATS_AS_JSON, _check_bool),
    PropertySpec(CHECKPOINT_STATS_AS_STRUCT, _check_bool),
    PropertySpec("delta.checkpointPolicy", _check_choice("classic", "v2")),
    PropertySpec(IN_COMMIT_TIMESTAMPS, _check_bool, "inCommitTimestamp"),
    PropertySpec(ISOLATION_LEVEL, _check_choice("Serializable", "WriteSerializable")),
    PropertySpec(COLUMN_MAPPING_MODE, _check_choice("none", "name", "id")),
    PropertySpec(ENABLE_DELETION_VECTORS, _check_bool, "deletionVectors"),
    PropertySpec("delta.enableChangeDataFeed", _check_bool, "changeDataFeed"),
    PropertySpec(TYPE_WIDENING, _check_bool, "typeWidening"),
    PropertySpec(SYMLINK_MANIFEST, _check_bool),
    PropertySpec("delta.dataSkippingNumIndexedCols", _check_int(-1)),
    PropertySpec(STATS_COLUMNS, _check_column_list),
    PropertySpec("delta.targetFileSize", _check_size),
    PropertySpec("delta.tuneFileSizesForRewrites", _check_bool),
    PropertySpec("delta.autoOptimize.optimizeWrite", _check_bool),
    PropertySpec(
        "delta.autoOptimize.autoCompact", _check_choice("true", "false", "auto", "legacy")
    ),
    PropertySpec("delta.randomizeFilePrefixes", _check_bool),
    PropertySpec("delta.randomPrefixLength", _check_int(1)),
    PropertySpec(
        "delta.parquet.compression.codec",
        _check_choice("uncompressed", "none", "snappy", "gzip", "lz4", "lz4_raw", "zstd"),
    ),
    PropertySpec("delta.parquet.format.version", _check_parquet_version),
    PropertySpec(MIN_READER_VERSION, _check_int(1, 3)),
    PropertySpec(MIN_WRITER_VERSION, _check_int(1, 7)),
    PropertySpec(
        "delta.columnMapping.maxColumnId",
        _check_int(0),
        settable=False,
        why_not="it is maintained by the column mapping machinery",
    ),
    PropertySpec(
        ICT_ENABLEMENT_VERSION,
        _check_int(0),
        settable=False,
        why_not="it is set when in-commit timestamps are enabled",
    ),
    PropertySpec(
        ICT_ENABLEMENT_TIMESTAMP,
        _check_int(0),
        settable=False,
        why_not="it is set when in-commit timestamps are enabled",
    ),
    PropertySpec(ENABLE_ROW_TRACKING, _check_bool, "rowTracking"),
    PropertySpec(
        "delta.rowTrackingSuspended",
        _check_bool,
        settable=False,
        why_not="delta-pyspark does not suspend row tracking",
    ),
    PropertySpec(
        MATERIALIZED_ROW_ID,
        lambda _key, value: value,
        settable=False,
        why_not="it is assigned when row tracking is supported",
    ),
    PropertySpec(
        MATERIALIZED_ROW_COMMIT_VERSION,
        lambda _key, value: value,
        settable=False,
        why_not="it is assigned when row tracking is supported",
    ),
    PropertySpec(ENABLED_FORMATS, _check_enabled_formats),
    PropertySpec(ICEBERG_COMPAT_V2, _check_bool, "icebergCompatV2"),
    PropertySpec(
        ICEBERG_COMPAT_V1,
        _check_bool,
        settable=False,
        why_not="delta-pyspark writes IcebergCompatV2 tables (delta.enableIcebergCompatV2)",
    ),
]
REGISTRY: dict[str, PropertySpec] = {s.key.lower(): s for s in _SPECS}


def is_delta_key(key: str) -> bool:
    return key.lower().startswith("delta.")


def canonical_key(key: str) -> str:
    """The stored spelling of a ``delta.*`` key (other keys are returned unchanged)."""
    lower = key.lower()
    if lower in REGISTRY:
        return REGISTRY[lower].key
    if lower.startswith(FEATURE_PREFIX.lower()):
        name = key[len(FEATURE_PREFIX) :]
        known = {f.lower(): f for f in KNOWN_FEATURES}
        return FEATURE_PREFIX + known.get(name.lower(), name)
    if lower.startswith(CONSTRAINT_PREFIX.lower()):
        return CONSTRAINT_PREFIX + key[len(CONSTRAINT_PREFIX) :].lower()
    return key


def validate_property(key: str, value: str) -> tuple[str, str]:
    """Check a property a user sets: ``(canonical key, normalised value)``.

    Non-``delta.`` keys are free-form user properties. Unknown ``delta.`` keys, bad
    values and engine-maintained keys raise DeltaIllegalArgumentException naming the key;
    ``delta.constraints.*`` raise DeltaAnalysisException (constraints have their own API).
    """
    if not is_delta_key(key):
        return key, value
    lower = key.lower()
    if lower.startswith(CONSTRAINT_PREFIX.lower()):
        raise DeltaAnalysisException(
            f"cannot set {key} as a table property: use DeltaTable.addConstraint "
            "(ALTER TABLE ADD CONSTRAINT) to add CHECK constraints"
        )
    if lower.startswith(FEATURE_PREFIX.lower()):
        canonical = canonical_key(key)
        name = canonical[len(FEATURE_PREFIX) :]
        if name not in KNOWN_FEATURES:
            raise DeltaIllegalArgumentException(
                f"unknown table feature {name!r} in {key}; known features: "
                f"{', '.join(sorted(KNOWN_FEATURES))}"
            )
        if value.strip().lower() not in ("supported", "enabled"):
            raise _bad(key, value, "table features can only be set to 'supported'")
        return canonical, "supported"
    spec = REGISTRY.get(lower)
    if spec is None:
        raise DeltaIllegalArgumentException(
            f"unknown configuration {key!r}: not a delta.* table property delta-pyspark "
            "knows (check the spelling; user properties must not start with 'delta.')"
        )
    if not spec.settable:
        raise DeltaIllegalArgumentException(f"cannot set {spec.key}: {spec.why_not}")
    return spec.key, spec.check(spec.key, str(value))


def validate_properties(properties: Mapping[str, str], creating: bool = False) -> dict[str, str]:
    """User-given properties checked one by one (``validate_property``), in their stored
    spelling; one key given twice (any case) with different values is refused. ``creating``:
    a new table may also be given CHECK constraints (``delta.constraints.<name>``), as
    delta-spark accepts them at creation."""
    out: dict[str, str] = {}
    for key, value in properties.items():
        if creating and key.lower().startswith(CONSTRAINT_PREFIX.lower()):
            out[CONSTRAINT_PREFIX + key[len(CONSTRAINT_PREFIX) :].lower()] = str(value)
            continue
        canonical, normalised = validate_property(key, str(value))
        if canonical in out and out[canonical] != normalised:
            raise DeltaIllegalArgumentException(
                f"property {canonical} given twice with different values"
            )
        out[canonical] = normalised
    return out


def is_protocol_key(key: str) -> bool:
    """Keys that ask for a protocol change instead of being stored in the configuration
    (``delta.feature.<name>``, ``delta.min{Reader,Writer}Version``), as in delta-spark."""
    return key.startswith(FEATURE_PREFIX) or key in (MIN_READER_VERSION, MIN_WRITER_VERSION)


def features_for_properties(configuration: Mapping[str, str]) -> set[str]:
    """Table features the registry says ``configuration``'s values need."""
    needed = set()
    for key, value in configuration.items():
        spec = REGISTRY.get(key.lower())
        if spec and spec.feature and str(value).strip().lower() == "true":
            needed.add(spec.feature)
    return needed


def symlink_manifest_enabled(conf: Mapping[str, str]) -> bool:
    return _bool(conf, SYMLINK_MANIFEST, False)


def deletion_vectors_enabled(conf: Mapping[str, str]) -> bool:
    return _bool(conf, ENABLE_DELETION_VECTORS, False)
