"""How a table schema may change: the type widenings PROTOCOL.md's "Type Widening"
allows, merging a write's schema into the table's (``mergeSchema``), and which writes
fit the table's schema unchanged. delta-spark's rules, with its error wording."""

from __future__ import annotations

import json

from delta_pyspark.core.protocol.schema import (
    TYPE_CHANGES_KEY,
    VOID,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    data_type_to_json,
    schema_tree_string,
    type_name,
)
from delta_pyspark.exceptions import SchemaMismatchError

# ------------------------------------------------------------------ type widening

_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
# Integral types in Parquet INT32: delta-spark lets data of a narrower one be written
# into a wider column without any table feature.
_INT32_FAMILY = frozenset({"byte", "short", "integer"})


def _name(dt: DataType) -> str | None:
    return dt.name if isinstance(dt, PrimitiveType) else None


def is_type_widening_supported(
    from_type: DataType, to_type: DataType, automatic: bool = False
) -> bool:
    """Whether PROTOCOL.md's "Type Widening" allows changing ``from_type`` to ``to_type``.

    ``automatic=True`` narrows this to the changes delta-spark applies on its own during
    schema evolution: integer to decimal or double must be requested explicitly (ALTER),
    so that integers are not silently promoted.
    """
    src, dst = _name(from_type), _name(to_type)
    if src in _INTEGRAL_RANK and dst in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[src] < _INTEGRAL_RANK[dst]
    if src == "float" and dst == "double":
        return True
    if src == "date" and dst == "timestamp_ntz":
        return True
    if isinstance(from_type, DecimalType) and isinstance(to_type, DecimalType):
        k1 = to_type.precision - from_type.precision
        k2 = to_type.scale - from_type.scale
        return k1 >= k2 >= 0 and (k1, k2) != (0, 0)
    if automatic:
        return False
    if src in _INT32_FAMILY and dst == "double":
        return True
    if src in _INTEGRAL_RANK and isinstance(to_type, DecimalType):
        digits = 20 if src == "long" else 10
        return to_type.precision - to_type.scale >= digits
    return False


# ------------------------------------------------------------------ schema merging


def _path(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _as_nullable(dt: DataType) -> DataType:
    """What delta-spark's ``asNullable`` does to data written with schema evolution:
    files written before a column existed hold nulls for it."""
    if isinstance(dt, StructType):
        return StructType(
            tuple(StructField(f.name, _as_nullable(f.type), True, f.metadata) for f in dt.fields)
        )
    if isinstance(dt, ArrayType):
        return ArrayType(_as_nullable(dt.element_type), True)
    if isinstance(dt, MapType):
        return MapType(_as_nullable(dt.key_type), _as_nullable(dt.value_type), True)
    return dt


def merge_schemas(
    table: StructType, data: StructType, allow_type_widening: bool = True
) -> StructType:
    """The table schema evolved to accept ``data`` (the ``mergeSchema`` write option).

    Columns are matched case-insensitively and keep the table's spelling, nullability and
    metadata; new columns (also nested struct fields) are appended, nullable. A data type
    the table type can hold losslessly keeps the table type (the writer casts). A wider
    data type widens the column if ``allow_type_widening`` and delta-spark would apply
    that change automatically; the change is recorded under ``delta.typeChanges`` as the
    spec requires. Any other difference raises SchemaMismatchError.
    """
    return _merge_struct(table, data, "", allow_type_widening)


def _merge_struct(table: StructType, data: StructType, parent: str, widen: bool) -> StructType:
    by_name = {f.name.lower(): f for f in data.fields}
    if len(by_name) != len(data.fields):
        names = ", ".join(repr(_path(parent, f.name)) for f in data.fields)
        raise SchemaMismatchError(
            "[DELTA_DUPLICATE_COLUMNS_FOUND] Found duplicate column(s) in the data: column "
            f"names that differ only in case: {names}"
        )
    out: list[StructField] = []
    for tf in table.fields:
        df = by_name.pop(tf.name.lower(), None)
        if df is None:
            out.append(tf)
            continue
        path = _path(parent, tf.name)
        changes: list[dict[str, str]] = []
        new_type = _merge_type(tf.type, df.type, path, "", widen, changes)
        metadata = tf.metadata
        if changes:
            metadata = dict(tf.metadata)
            history = metadata.get(TYPE_CHANGES_KEY)
            metadata[TYPE_CHANGES_KEY] = [*(history if isinstance(history, list) else []), *changes]
        out.append(StructField(tf.name, new_type, tf.nullable, metadata))
    for df in data.fields:
        if df.name.lower() in by_name:
            out.append(StructField(df.name, _as_nullable(df.type), True, df.metadata))
    return StructType(tuple(out))


def _merge_type(
    current: DataType,
    update: DataType,
    path: str,
    field_path: str,
    widen: bool,
    changes: list[dict[str, str]],
) -> DataType:
    """Merge one type; ``field_path`` is the spec's ``fieldPath`` below the nearest field."""
    if isinstance(current, StructType) and isinstance(update, StructType):
        return _merge_struct(current, update, path, widen)

    def child(part: str, cur: DataType, upd: DataType) -> DataType:
        return _merge_type(cur, upd, f"{path}.{part}", _path(field_path, part), widen, changes)

    if isinstance(current, ArrayType) and isinstance(update, ArrayType):
        element = child("element", current.element_type, update.element_type)
        return ArrayType(element, current.contains_null)
    if isinstance(current, MapType) and isinstance(update, MapType):
        key = child("key", current.key_type, update.key_type)
        value = child("value", current.value_type, update.value_type)
        return MapType(key, value, current.value_contains_null)
    if current == update or update == VOID:
        return current
    if current == VOID:
        return update
    if is_type_widening_supported(update, current):
        return current  # data narrower than the column: the writer casts it up
    if widen and is_type_widening_supported(current, update, automatic=True):
        change = {"fromType": type_name(current), "toType": type_name(update)}
        if field_path:
            change["fieldPath"] = field_path
        changes.append(change)
        return update
    hint = ""
    if is_type_widening_supported(current, update):
        hint = (
            " (a supported widening, but not one applied automatically: "
            "change the column type explicitly)"
            if widen
            else " (enable type widening on the table with delta.enableTypeWidening=true)"
        )
    raise SchemaMismatchError(
        f"[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields {path!r}: incompatible types, "
        f"table has {_type_repr(current)}, data has {_type_repr(update)}{hint}"
    )


def _type_repr(dt: DataType) -> str:
    if isinstance(dt, PrimitiveType | DecimalType):
        return type_name(dt)
    return json.dumps(data_type_to_json(dt), separators=(",", ":"))


# -------------------------------------------------------------- write enforcement


def check_write_compatible(table: StructType, data: StructType) -> None:
    """Schema enforcement for writes without schema evolution.

    Data may lack nullable columns (they are written as null) and may carry an integer
    narrower than the column within Parquet's INT32 family (byte/short into integer) or
    a void column, as delta-spark allows; everything else must match the table exactly.
    Data that even ``mergeSchema`` could not take (a column of another type) is refused as
    that merge refuses it, with delta-spark's condition for each case.
    """
    problems: list[str] = []
    _check_struct(table, data, "", problems)
    if not problems:
        return
    trees = (
        f"Table schema:\n{schema_tree_string(table)}\n\nData schema:\n{schema_tree_string(data)}"
    )
    try:
        merge_schemas(table, data, allow_type_widening=False)
    except SchemaMismatchError as e:
        raise SchemaMismatchError(f"{e}\n\n{trees}") from None
    listing = "\n".join(f"- {p}" for p in problems)
    raise SchemaMismatchError(
        "[_LEGACY_ERROR_TEMP_DELTA_0007] A schema mismatch detected when writing to the Delta "
        "table.\n"
        f"{listing}\n\n"
        "To enable schema migration (add columns, widen types), set "
        '\'.option("mergeSchema", "true")\' on the write '
        "(or spark.databricks.delta.schema.autoMerge.enabled=true).\n"
        "To replace the table schema or partitioning with mode('overwrite'), set "
        '\'.option("overwriteSchema", "true")\'.\n\n'
        f"{trees}"
    )


def _check_struct(table: StructType, data: StructType, parent: str, problems: list[str]) -> None:
    exact = {f.name: f for f in table.fields}
    folded = {f.name.lower(): f for f in table.fields}
    seen: set[str] = set()
    for df in data.fields:
        path = _path(parent, df.name)
        tf = exact.get(df.name)
        if tf is None:
            other = folded.get(df.name.lower())
            if other is not None:
                seen.add(other.name)
                problems.append(
                    f"column {path!r} differs only in case from table column "
                    f"{_path(parent, other.name)!r}"
                )
            else:
                problems.append(f"column {path!r} ({type_name(df.type)}) is not in the table")
            continue
        seen.add(tf.name)
        _check_type(tf.type, df.type, path, problems)
    for tf in table.fields:
        if tf.name not in seen and not tf.nullable:
            problems.append(
                f"non-nullable column {_path(parent, tf.name)!r} is missing from the data"
            )


def _int32_upcast(from_type: DataType, to_type: DataType) -> bool:
    src, dst = _name(from_type), _name(to_type)
    return (
        src in _INT32_FAMILY and dst in _INT32_FAMILY and _INTEGRAL_RANK[src] < _INTEGRAL_RANK[dst]
    )


def _check_type(current: DataType, update: DataType, path: str, problems: list[str]) -> None:
    if isinstance(current, StructType) and isinstance(update, StructType):
        _check_struct(current, update, path, problems)
    elif isinstance(current, ArrayType) and isinstance(update, ArrayType):
        _check_type(current.element_type, update.element_type, path + ".element", problems)
    elif isinstance(current, MapType) and isinstance(update, MapType):
        _check_type(current.key_type, update.key_type, path + ".key", problems)
        _check_type(current.value_type, update.value_type, path + ".value", problems)
    elif not (current == update or update == VOID or _int32_upcast(update, current)):
        problems.append(
            f"column {path!r} has type {_type_repr(update)} in the data "
            f"but {_type_repr(current)} in the table"
        )
