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
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from delta_pyspark.core.protocol.actions import AddFile, Metadata
from delta_pyspark.core.protocol.column_mapping import COLUMN_MAPPING_MODE_KEY, column_mapping_mode
from delta_pyspark.core.protocol.schema import (
    TYPE_CHANGES_KEY,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructType,
    parse_schema_string,
    type_name,
)
from delta_pyspark.core.protocol.table_properties import (
    ENABLED_FORMATS,
    ICEBERG_COMPAT_V1,
    ICEBERG_COMPAT_V2,
    deletion_vectors_enabled,
)
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


def after_property_change(conf: Mapping[str, str], requested: Mapping[str, str]) -> dict[str, str]:
    """``conf`` after ``SET TBLPROPERTIES requested``: turning IcebergCompatV2 off also turns
    UniForm's Iceberg off (as delta-spark does) unless the same statement sets the formats."""
    out = dict(conf)
    turning_off = ICEBERG_COMPAT_V2 in requested and not compat_v2_enabled(requested)
    if turning_off and ENABLED_FORMATS not in requested and iceberg_enabled(out):
        kept = [f for f in enabled_formats(out) if f != "iceberg"]
        if kept:
            out[ENABLED_FORMATS] = ",".join(kept)
        else:
            del out[ENABLED_FORMATS]
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
    if str(conf.get(ICEBERG_COMPAT_V1, "false")).strip().lower() == "true":
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.VERSION_MUTUAL_EXCLUSIVE] only one IcebergCompat "
            f"version may be enabled: {ICEBERG_COMPAT_V1} and {ICEBERG_COMPAT_V2} are both true"
        )
    mode = column_mapping_mode(conf)
    if mode == "none":
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.WRONG_REQUIRED_TABLE_PROPERTY] IcebergCompatV2 "
            f"needs column mapping: {COLUMN_MAPPING_MODE_KEY} must be 'name' or 'id', not 'none'"
        )
    if deletion_vectors_enabled(conf):
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
    if (
        previous is not None
        and previous.partition_columns
        and list(previous.partition_columns) != list(metadata.partition_columns)
    ):
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.REPLACE_TABLE_CHANGE_PARTITION_NAMES] "
            "IcebergCompatV2 does not allow the partition columns to change from "
            f"{list(previous.partition_columns)} to {list(metadata.partition_columns)}"
        )
    if previous is None or previous.schema_string != metadata.schema_string or enabling:
        schema = parse_schema_string(metadata.schema_string)
        _check_types(schema, ())
        _check_type_changes(schema)
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


def _check_type_changes(schema: StructType) -> None:
    """Every recorded type widening must be one Iceberg allows (int to long, float to
    double, a decimal's precision up with its scale kept; byte and short are Iceberg ints)."""
    for column, change in _type_changes(schema, ()):
        before = _iceberg_kind(change.get("fromType"))
        after = _iceberg_kind(change.get("toType"))
        if before == after or (before, after) in (("int", "long"), ("float", "double")):
            continue
        if _same_scale_decimals(change.get("fromType"), change.get("toType")):
            continue
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.UNSUPPORTED_TYPE_WIDENING] IcebergCompatV2 does "
            f"not allow the type change of {column} from "
            f"{change.get('fromType')} to {change.get('toType')}: Iceberg cannot read the "
            "older files as the new type"
        )


def _type_changes(dtype: DataType, path: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(column, change)`` for each recorded type widening (in its field's metadata)."""
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            for change in f.metadata.get(TYPE_CHANGES_KEY) or []:
                yield ".".join((*path, f.name)), change
            yield from _type_changes(f.type, (*path, f.name))


def _iceberg_kind(name: Any) -> str:
    return "int" if name in ("byte", "short", "integer") else str(name)


def _same_scale_decimals(before: Any, after: Any) -> bool:
    pattern = re.compile(r"decimal\((\d+),\s*(\d+)\)")
    old, new = pattern.fullmatch(str(before)), pattern.fullmatch(str(after))
    if old is None or new is None:
        return False
    return old.group(2) == new.group(2) and int(new.group(1)) >= int(old.group(1))


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
