"""Table features (PROTOCOL.md "Table Features", "Valid Feature Names").

Reading needs every reader feature; writing needs every writer feature (and,
since writers read, every reader feature). Legacy protocol versions imply
feature sets; explicit lists come with reader version 3 / writer version 7.
"""

from __future__ import annotations

from delta_pyspark.core.protocol.actions import Metadata, Protocol
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode
from delta_pyspark.core.protocol.identity_columns import is_identity
from delta_pyspark.core.protocol.table_properties import features_for_properties
from delta_pyspark.exceptions import UnsupportedTableFeatureError

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

SUPPORTED_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
    }
)
SUPPORTED_WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "clustering",
        "columnMapping",
        "deletionVectors",
        "generatedColumns",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "domainMetadata",
        "rowTracking",
        "inCommitTimestamp",
        "identityColumns",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "checkpointProtection",  # metadata_cleanup keeps its protected checkpoints
        "icebergCompatV2",  # core.uniform.compat checks its rules on every commit
    }
)

# Features implied by legacy writer versions (each version includes the previous).
_LEGACY_WRITER = {
    2: {"appendOnly", "invariants"},
    3: {"checkConstraints"},
    4: {"changeDataFeed", "generatedColumns"},
    5: {"columnMapping"},
    6: {"identityColumns"},
}
# Reader-writer features: every reader feature we support, plus ones we do not.
READER_WRITER_FEATURES = SUPPORTED_READER_FEATURES | {
    "catalogManaged",
    "variantShredding",
    "variantShredding-preview",
    "geospatial",
}


# Features that need others (PROTOCOL.md: row tracking keeps its high-water mark in a domain).
_REQUIRED_FEATURES = {"rowTracking": frozenset({"domainMetadata"})}

# Writer features whose obligations apply to the columns that use them, and to nothing else.
_COLUMN_FEATURES = frozenset({"generatedColumns", "identityColumns"})


def features_in_use(metadata: Metadata) -> frozenset[str]:
    """Features this table's metadata actually uses, of those a protocol may support idle."""
    used = set()
    text = metadata.schema_string
    if "delta.generationExpression" in text:
        used.add("generatedColumns")
    if "delta.identity." in text:
        used.add("identityColumns")
    if metadata.configuration.get("delta.enableChangeDataFeed", "").lower() == "true":
        used.add("changeDataFeed")
    if column_mapping_mode(metadata.configuration) != "none":
        used.add("columnMapping")
    return frozenset(used)


def implied_writer_features(protocol: Protocol) -> frozenset[str]:
    """Writer features a protocol supports, explicit (v7) or implied (v2..v6)."""
    if protocol.min_writer_version >= 7:
        return protocol.writer_features or frozenset()
    out: set[str] = set()
    for version, features in _LEGACY_WRITER.items():
        if protocol.min_writer_version >= version:
            out |= features
    return frozenset(out)


def reader_features(protocol: Protocol) -> frozenset[str]:
    if protocol.min_reader_version >= 3:
        return protocol.reader_features or frozenset()
    return frozenset({"columnMapping"}) if protocol.min_reader_version == 2 else frozenset()


def check_readable(
    protocol: Protocol, table: str, access_features: frozenset[str] = frozenset()
) -> None:
    """Refuse, by feature name, a table this implementation cannot read correctly.

    ``access_features``: features the caller's access path implements on top of the
    core (``catalogManaged`` when the table is reached through its catalog).
    """
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedTableFeatureError(
            f"table {table} requires reader version {protocol.min_reader_version}; "
            f"delta-pyspark supports up to {MAX_READER_VERSION}",
            [f"readerVersion{protocol.min_reader_version}"],
        )
    missing = sorted(reader_features(protocol) - SUPPORTED_READER_FEATURES - access_features)
    if missing:
        raise UnsupportedTableFeatureError(
            f"table {table} requires reader feature(s) {', '.join(missing)} "
            f"which delta-pyspark does not support{_catalog_hint(missing)}",
            missing,
        )


def check_writable(
    protocol: Protocol,
    table: str,
    used_legacy_features: frozenset[str] = frozenset(),
    access_features: frozenset[str] = frozenset(),
) -> None:
    """Refuse to write a table needing a writer feature we lack.

    For legacy protocols only features actually in use count (``used_legacy_features``,
    e.g. generated columns found in the schema); explicit v7 lists count in full, except
    features whose rules bind only the columns that carry them (a table that supports
    generated columns but has none is written like any other).
    """
    check_readable(protocol, table, access_features)
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedTableFeatureError(
            f"table {table} requires writer version {protocol.min_writer_version}; "
            f"delta-pyspark supports up to {MAX_WRITER_VERSION}",
            [f"writerVersion{protocol.min_writer_version}"],
        )
    needed = (
        implied_writer_features(protocol) - (_COLUMN_FEATURES - used_legacy_features)
        if protocol.min_writer_version >= 7
        else implied_writer_features(protocol) & used_legacy_features
    )
    missing = sorted(needed - SUPPORTED_WRITER_FEATURES - access_features)
    if missing:
        raise UnsupportedTableFeatureError(
            f"table {table} requires writer feature(s) {', '.join(missing)} "
            f"which delta-pyspark does not support for writing{_catalog_hint(missing)}",
            missing,
        )


def _catalog_hint(missing: list[str]) -> str:
    if "catalogManaged" in missing:
        return " by path: a catalog-managed table is read and written through its catalog"
    return ""


def supports(protocol: Protocol, feature: str) -> bool:
    """Whether ``feature`` is supported (listed or implied) by the table's protocol."""
    return feature in implied_writer_features(protocol) or feature in reader_features(protocol)


def with_features(protocol: Protocol, features: set[str]) -> Protocol:
    """The protocol upgraded to table features (3, 7) with ``features`` added.

    Legacy implied features are kept explicitly so nothing the table relied on is lost.
    """
    features = set(features).union(*(_REQUIRED_FEATURES.get(f, frozenset()) for f in features))
    writer = set(implied_writer_features(protocol)) | features
    reader = set(reader_features(protocol)) | {f for f in features if f in READER_WRITER_FEATURES}
    needs_reader_v3 = bool(reader - {"columnMapping"}) or protocol.min_reader_version >= 3
    if needs_reader_v3:
        return Protocol(3, 7, frozenset(reader), frozenset(writer))
    reader_version = 2 if reader else max(protocol.min_reader_version, 1)  # columnMapping
    return Protocol(reader_version, 7, None, frozenset(writer))


def _legacy_form(protocol: Protocol) -> Protocol:
    """The protocol in its weakest form, as delta-spark writes it: a legacy version when
    the features are exactly those one implies, else table features."""
    if protocol.min_writer_version < 7 or reader_features(protocol) - {"columnMapping"}:
        return protocol
    features = implied_writer_features(protocol)
    for version in range(1, 7):
        legacy = Protocol(2 if "columnMapping" in features else 1, version)
        if implied_writer_features(legacy) == features:
            return legacy
    return protocol


def _type_names(dt: object) -> set[str]:
    from delta_pyspark.core.protocol.schema import ArrayType, MapType, PrimitiveType, StructType

    if isinstance(dt, PrimitiveType):
        return {dt.name}
    if isinstance(dt, StructType):
        return set().union(*(_type_names(f.type) for f in dt.fields)) if dt.fields else set()
    if isinstance(dt, ArrayType):
        return _type_names(dt.element_type)
    if isinstance(dt, MapType):
        return _type_names(dt.key_type) | _type_names(dt.value_type)
    return set()


def _has_generated_column(schema: object) -> bool:
    from delta_pyspark.core.protocol.schema import StructType

    return isinstance(schema, StructType) and any(
        "delta.generationExpression" in f.metadata for f in schema.fields
    )


def features_required(schema: object, configuration: dict[str, str]) -> set[str]:
    """Table features a schema and a set of table properties need (for new tables
    and property changes), including explicit ``delta.feature.<name>=supported``."""
    conf = {k: str(v) for k, v in configuration.items()}
    needed: set[str] = set()
    if _has_generated_column(schema):
        needed.add("generatedColumns")
    types = _type_names(schema)
    if "timestamp_ntz" in types:
        needed.add("timestampNtz")
    if "variant" in types:
        needed.add("variantType")
    if any(is_identity(f) for f in getattr(schema, "fields", ())):
        needed.add("identityColumns")
    needed |= features_for_properties(conf)  # the boolean properties that enable a feature
    if (
        conf.get("delta.columnMapping.mode", "none").lower() != "none"
        or "icebergCompatV2" in needed
    ):
        needed.add("columnMapping")  # IcebergCompatV2's column ids are column mapping's
    if any(k.startswith("delta.constraints.") for k in conf):
        needed.add("checkConstraints")
    if conf.get("delta.checkpointPolicy", "").lower() == "v2":
        needed.add("v2Checkpoint")
    needed |= {
        k[len("delta.feature.") :]
        for k, v in conf.items()
        if k.startswith("delta.feature.") and v.lower() in ("supported", "enabled")
    }
    return needed


def protocol_for(
    schema: object, configuration: dict[str, str], current: Protocol | None = None
) -> Protocol:
    """The protocol a table needs: ``current`` (or the (1, 2) default) plus any
    features the schema and properties require. A legacy version only where it implies
    exactly the features the table has (delta-spark's normalisation): enabling the change
    data feed on a (1, 2) table gives (1, 7) with appendOnly, invariants and changeDataFeed,
    not (1, 4), which would also claim checkConstraints and generatedColumns."""
    base = current or Protocol(1, 2)
    conf = {k: str(v) for k, v in configuration.items()}
    changed = False
    if "delta.minReaderVersion" in conf or "delta.minWriterVersion" in conf:
        asked = Protocol(
            int(conf.get("delta.minReaderVersion", 1)), int(conf.get("delta.minWriterVersion", 2))
        )
        if base.min_writer_version >= 7 and asked.min_writer_version < 7:
            # versions asked of a table-features protocol: the features they imply
            base = with_features(base, set(implied_writer_features(asked) | reader_features(asked)))
            changed = True
        else:
            base = Protocol(
                max(base.min_reader_version, asked.min_reader_version),
                max(base.min_writer_version, asked.min_writer_version),
                base.reader_features,
                base.writer_features,
            )
    needed = features_required(schema, conf)
    missing = {f for f in needed if not supports(base, f)}
    if not missing and not changed:
        return base
    return _legacy_form(with_features(base, missing))
