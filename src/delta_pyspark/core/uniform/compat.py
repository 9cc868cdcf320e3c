"""IcebergCompatV2 and UniForm's table properties: what a table must satisfy so that its
data files are also an Iceberg table's (PROTOCOL.md "Iceberg Compatibility V2").

Checked on every commit of a table with ``delta.enableIcebergCompatV2=true`` (the commit
is refused, by the rule it breaks, before anything is visible): column mapping on, deletion
vectors off and none live, every added file with ``numRecords``, only types Iceberg has.
``delta.universalFormat.enabledFormats=iceberg`` needs IcebergCompatV2, and the Iceberg
metadata it promises needs pyiceberg. What the data files must hold (Parquet field ids,
the partition values too, delta-spark's ``ICEBERG_COMPAT_VERSION`` tag on their adds) is the
writer's part (``spark/files/write.py``). This module decides; it writes nothing and
imports no Iceberg library.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Mapping
from typing import Any

from delta_pyspark.core.protocol.actions import AddFile, Metadata
from delta_pyspark.core.protocol.column_mapping import COLUMN_MAPPING_MODE_KEY, column_mapping_mode
from delta_pyspark.core.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructType,
    parse_schema_string,
    type_name,
)
from delta_pyspark.core.protocol.table_properties import ENABLED_FORMATS, ICEBERG_COMPAT_V2
from delta_pyspark.exceptions import DeltaUnsupportedOperationException, IcebergCompatViolationError

#: the add tag delta-spark gives files written under an IcebergCompat version
ICEBERG_COMPAT_TAG = "ICEBERG_COMPAT_VERSION"

#: Delta's primitive types that Iceberg has (``byte``/``short`` read as Iceberg ``int``)
_ICEBERG_PRIMITIVES = frozenset(
    {"boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary",
     "date", "timestamp", "timestamp_ntz"}
)  # fmt: skip


def compat_v2_enabled(conf: Mapping[str, str]) -> bool:
    return str(conf.get(ICEBERG_COMPAT_V2, "false")).strip().lower() == "true"


def enabled_formats(conf: Mapping[str, str]) -> list[str]:
    """The formats ``delta.universalFormat.enabledFormats`` names, lower case."""
    value = str(conf.get(ENABLED_FORMATS, ""))
    return [f.strip().lower() for f in value.split(",") if f.strip()]


def iceberg_enabled(conf: Mapping[str, str]) -> bool:
    """Whether commits must also write Iceberg metadata."""
    return "iceberg" in enabled_formats(conf)


def creation_defaults(conf: Mapping[str, str]) -> dict[str, str]:
    """A new table's properties with what IcebergCompatV2 implies filled in: column mapping
    ``name`` when no mode is given (as delta-spark does on creation)."""
    out = dict(conf)
    if compat_v2_enabled(out) and COLUMN_MAPPING_MODE_KEY not in out:
        out[COLUMN_MAPPING_MODE_KEY] = "name"
    return out


def check_commit(
    metadata: Metadata,
    adds: Iterable[AddFile],
    previous: Metadata | None,
    live_deletion_vectors: int,
) -> None:
    """Refuse a commit that would leave the table breaking IcebergCompatV2 or UniForm.

    ``previous``: the metadata before the commit (None for a new table);
    ``live_deletion_vectors``: files of the table with a deletion vector before the commit.
    """
    conf = metadata.configuration
    if iceberg_enabled(conf):
        if not compat_v2_enabled(conf):
            raise IcebergCompatViolationError(
                f"[DELTA_UNIVERSAL_FORMAT_VIOLATION] {ENABLED_FORMATS} = iceberg needs "
                f"{ICEBERG_COMPAT_V2} = true (IcebergCompatV2)"
            )
        if importlib.util.find_spec("pyiceberg") is None:
            raise DeltaUnsupportedOperationException(
                "writing Iceberg metadata (UniForm) needs pyiceberg: "
                "pip install 'delta-pyspark[uniform]'"
            )
    if not compat_v2_enabled(conf):
        return
    mode = column_mapping_mode(conf)
    if mode == "none":
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.WRONG_REQUIRED_TABLE_PROPERTY] IcebergCompatV2 "
            f"needs column mapping: {COLUMN_MAPPING_MODE_KEY} must be 'name' or 'id', not 'none'"
        )
    if str(conf.get("delta.enableDeletionVectors", "false")).strip().lower() == "true":
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.DELETION_VECTORS_SHOULD_BE_DISABLED] "
            "IcebergCompatV2 needs delta.enableDeletionVectors = false"
        )
    enabling = previous is not None and not compat_v2_enabled(previous.configuration)
    if enabling and live_deletion_vectors:
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.DELETION_VECTORS_NOT_PURGED] IcebergCompatV2 "
            f"cannot be enabled: {live_deletion_vectors} files have deletion vectors; "
            "purge them first (REORG TABLE ... APPLY (PURGE))"
        )
    if previous is None or previous.schema_string != metadata.schema_string or enabling:
        _check_types(parse_schema_string(metadata.schema_string), ())
    for add in adds:
        if _num_records(add.get("stats")) is None:
            raise IcebergCompatViolationError(
                "[DELTA_ICEBERG_COMPAT_VIOLATION.MISSING_NUMRECORDS_STATS] IcebergCompatV2 "
                f"needs numRecords in every file's statistics; {add.get('path')} has none"
            )


def _num_records(stats: Any) -> int | None:
    if not isinstance(stats, str) or not stats:
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def _check_types(dtype: DataType, path: tuple[str, ...]) -> None:
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            _check_types(f.type, (*path, f.name))
        return
    if isinstance(dtype, DecimalType):
        return
    if isinstance(dtype, PrimitiveType) and dtype.name in _ICEBERG_PRIMITIVES:
        return
    column = ".".join(path)
    if isinstance(dtype, ArrayType | MapType):
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.UNSUPPORTED_DATA_TYPE] IcebergCompatV2 tables "
            f"with ARRAY or MAP columns are not supported by delta-pyspark yet: {column} "
            f"is {type_name(dtype)}"
        )
    raise IcebergCompatViolationError(
        "[DELTA_ICEBERG_COMPAT_VIOLATION.UNSUPPORTED_DATA_TYPE] IcebergCompatV2 does not "
        f"support the type of {column}: {type_name(dtype)}"
    )
