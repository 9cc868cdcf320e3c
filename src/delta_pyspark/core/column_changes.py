"""ALTER TABLE RENAME COLUMN, DROP COLUMN(S) and ALTER/CHANGE COLUMN: one metadata commit each.

Data files are never rewritten. That is why renaming and dropping need column mapping
(files name their columns by physical name, so the logical name is free to change and a
dropped column's values simply stop being read), and why a type change is limited to the
widenings of the type-widening feature, recorded under ``delta.typeChanges``. Comments,
positions and dropping NOT NULL change nothing the files hold. The checks and error classes
are delta-spark's: a column that a CHECK constraint reads cannot be renamed, dropped or
retyped, nor can one a generated column's expression reads (its stored values would no
longer be the expression's); partition and clustering columns cannot be dropped; NOT NULL
cannot be added to existing data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from delta_pyspark.core import table_properties as props
from delta_pyspark.core.actions import Metadata
from delta_pyspark.core.clustering import snapshot_columns
from delta_pyspark.core.column_mapping import column_mapping_mode
from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.core.generated_columns import generation_expressions
from delta_pyspark.core.schema import (
    TYPE_CHANGES_KEY,
    DataType,
    StructField,
    StructType,
    schema_to_string,
    type_name,
)
from delta_pyspark.core.schema_evolution import is_type_widening_supported
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.core.stats import split_column_name
from delta_pyspark.core.transaction import Transaction
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaIllegalArgumentException

__all__ = ["ColumnChange", "change_columns", "drop_columns", "rename_column"]

_COMMENT_KEY = "comment"

Path = tuple[str, ...]


@dataclass(frozen=True)
class ColumnChange:
    """One column of an ALTER COLUMN statement; None leaves that aspect as it is."""

    @property
    def position(self) -> str | None:
        """The position as the log's operation parameters spell it."""
        if self.first:
            return "FIRST"
        return None if self.after is None else f"AFTER {self.after}"

    path: Path
    data_type: DataType | None = None
    comment: str | None = None
    #: Move the column first in its struct, or right after the sibling named ``after``.
    first: bool = False
    after: str | None = None
    #: False adds NOT NULL (refused), True drops it.
    nullable: bool | None = None


def rename_column(log: DeltaLog, path: Sequence[str], new_name: str) -> Snapshot:
    """Rename the column at ``path`` (nested: ``("s", "x")``) to ``new_name``."""
    snapshot = log.snapshot()
    metadata = snapshot.metadata
    _require_column_mapping(metadata, "DELTA_UNSUPPORTED_RENAME_COLUMN", "Column rename")
    schema = snapshot.schema
    old = _resolve(schema, path)
    if not new_name:
        raise DeltaIllegalArgumentException("RENAME COLUMN needs a non-empty new name")
    siblings = _parent_struct(schema, old)
    clash = siblings.find_field(new_name)
    if clash is not None and clash.name.lower() != old[-1].lower():
        raise DeltaAnalysisException(
            f"[DELTA_DUPLICATE_COLUMNS_FOUND] cannot rename {_dotted(old)} to {new_name!r}: "
            f"the table already has a column {_dotted((*old[:-1], clash.name))}"
        )
    _check_dependents(metadata, schema, old)
    new = (*old[:-1], new_name)
    new_schema = _transform(schema, old, lambda f: StructField(new_name, f.type, f.nullable,
                                                                f.metadata))  # fmt: skip
    partition_columns = metadata.partition_columns
    if len(old) == 1:
        partition_columns = tuple(new_name if c == old[0] else c for c in partition_columns)
    conf = _stats_columns(metadata.configuration, old, new)
    return _commit(
        log,
        snapshot,
        metadata.with_changes(
            schema_string=schema_to_string(new_schema),
            partition_columns=partition_columns,
            configuration=conf,
        ),
        "RENAME COLUMN",
        {"oldColumnPath": _dotted(old), "newColumnPath": _dotted(new)},
    )


def drop_columns(
    log: DeltaLog, paths: Sequence[Sequence[str]], if_exists: bool = False
) -> Snapshot:
    """Drop columns (nested fields too); ``if_exists`` skips names the table lacks."""
    if not paths:
        raise DeltaIllegalArgumentException("DROP COLUMNS needs at least one column")
    snapshot = log.snapshot()
    metadata = snapshot.metadata
    _require_column_mapping(metadata, "DELTA_UNSUPPORTED_DROP_COLUMN", "DROP COLUMN")
    schema = snapshot.schema
    resolved: list[Path] = []
    for path in paths:
        if if_exists and _find(schema, path) is None:
            continue
        resolved.append(_resolve(schema, path))
    if not resolved:  # IF EXISTS and none of them exists: nothing to commit
        return snapshot
    partitions = [_dotted(p) for p in resolved if len(p) == 1 and p[0] in
                  metadata.partition_columns]  # fmt: skip
    if partitions:
        raise DeltaAnalysisException(
            "[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] Dropping partition columns "
            f"({', '.join(partitions)}) is not allowed."
        )
    clustering = [c.logical for c in snapshot_columns(snapshot)]
    clustered = [_dotted(p) for p in resolved if any(c[: len(p)] == tuple(p) for c in clustering)]
    if clustered:
        raise DeltaAnalysisException(
            "[DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN] Dropping clustering columns "
            f"({', '.join(clustered)}) is not allowed."
        )
    conf: Mapping[str, str] = metadata.configuration
    new_schema = schema
    for path in resolved:
        _check_dependents(metadata, schema, path)
        new_schema = _drop(new_schema, path)
        conf = _stats_columns(conf, path, None)
    return _commit(
        log,
        snapshot,
        metadata.with_changes(schema_string=schema_to_string(new_schema), configuration=conf),
        "DROP COLUMNS",
        {"columns": json.dumps([_dotted(p) for p in resolved])},
    )


def change_columns(log: DeltaLog, changes: Sequence[ColumnChange]) -> Snapshot:
    """ALTER/CHANGE COLUMN: type (a widening), comment, position, NOT NULL dropped."""
    if not changes:
        raise DeltaIllegalArgumentException("ALTER COLUMN needs at least one column")
    snapshot = log.snapshot()
    metadata = snapshot.metadata
    widening = props.type_widening(metadata.configuration)
    schema = snapshot.schema
    logged: list[dict[str, Any]] = []
    for change in changes:
        path = _resolve(schema, change.path)
        field = _field(schema, path)
        new_field = _changed_field(metadata, schema, path, field, change, widening)
        schema = _transform(schema, path, _replacement(new_field))
        if change.position is not None:
            schema = _move(schema, path, change)
        entry: dict[str, Any] = {
            "name": _dotted((*path[:-1], new_field.name)),
            "type": type_name(new_field.type),
            "nullable": new_field.nullable,
            "metadata": new_field.metadata,
        }
        if change.position is not None:
            entry["position"] = change.position
        logged.append(entry)
    new_metadata = metadata.with_changes(schema_string=schema_to_string(schema))
    if len(logged) == 1:
        only = dict(logged[0])
        position = only.pop("position", None)
        parameters = {"column": json.dumps(only)}
        if position is not None:
            parameters["position"] = position
        return _commit(log, snapshot, new_metadata, "CHANGE COLUMN", parameters)
    return _commit(log, snapshot, new_metadata, "CHANGE COLUMNS", {"columns": json.dumps(logged)})


# ---------------------------------------------------------------------- checks


def _require_column_mapping(metadata: Metadata, error_class: str, what: str) -> None:
    if column_mapping_mode(metadata.configuration) == "none":
        raise DeltaAnalysisException(
            f"[{error_class}] {what} is not supported for your Delta table: its data files "
            "name columns by their names. Enable column mapping first: ALTER TABLE <table> "
            f"SET TBLPROPERTIES ('{props.COLUMN_MAPPING_MODE}' = 'name') (upgrades the protocol "
            "to at least reader 2, writer 5)"
        )


def _changed_field(
    metadata: Metadata,
    schema: StructType,
    path: Path,
    field: StructField,
    change: ColumnChange,
    widening: bool,
) -> StructField:
    data_type, meta = field.type, dict(field.metadata)
    if change.data_type is not None and change.data_type != field.type:
        if not (widening and is_type_widening_supported(field.type, change.data_type)):
            hint = (
                " (a widening the type-widening feature allows: enable it with "
                "delta.enableTypeWidening = true)"
                if is_type_widening_supported(field.type, change.data_type)
                else ""
            )
            raise DeltaAnalysisException(
                "[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN is not "
                f"supported for changing column {_dotted(path)} from {type_name(field.type)} "
                f"to {type_name(change.data_type)}{hint}"
            )
        readers = _generated_readers(schema, path)
        if readers:
            raise DeltaAnalysisException(
                f"[DELTA_GENERATED_COLUMNS_DATA_TYPE_MISMATCH] Column {_dotted(path)} has data "
                f"type {type_name(field.type)} and cannot be altered to data type "
                f"{type_name(change.data_type)} because this column is referenced by the "
                f"following generated column(s): {readers}"
            )
        _check_dependents(metadata, schema, path)
        history = meta.get(TYPE_CHANGES_KEY)
        meta[TYPE_CHANGES_KEY] = [
            *(history if isinstance(history, list) else []),
            {"fromType": type_name(field.type), "toType": type_name(change.data_type)},
        ]
        data_type = change.data_type
    if change.nullable is False and field.nullable:
        raise DeltaAnalysisException(
            "[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] ALTER TABLE CHANGE COLUMN is not "
            f"supported for changing column {_dotted(path)} from nullable to NOT NULL: "
            "existing rows are not checked"
        )
    if change.comment is not None:
        meta[_COMMENT_KEY] = change.comment
    nullable = True if change.nullable else field.nullable
    return StructField(field.name, data_type, nullable, meta)


def _replacement(new: StructField) -> Callable[[StructField], StructField]:
    def replace(_old: StructField) -> StructField:
        return new

    return replace


def _generated_readers(schema: StructType, path: Path) -> str:
    """The generated columns whose expressions read ``path``, listed (empty: none)."""
    found = [
        f"{name} ({text})"
        for name, text in generation_expressions(schema).items()
        if _reads(text, path)
    ]
    return "; ".join(found)


def _check_dependents(metadata: Metadata, schema: StructType, path: Path) -> None:
    """Refuse a change to a column a CHECK constraint or a generated column reads."""
    readers = _generated_readers(schema, path)
    if readers:
        raise DeltaAnalysisException(
            f"[DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE] Cannot alter column "
            f"{_dotted(path)} because this column is referenced by the following generated "
            f"column(s): {readers}"
        )
    constraints = {
        name: text
        for name, text in props.check_constraints(metadata.configuration).items()
        if _reads(text, path)
    }
    if constraints:
        listed = "; ".join(f"{name}: {text}" for name, text in sorted(constraints.items()))
        raise DeltaAnalysisException(
            f"[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] Cannot alter column {_dotted(path)} "
            f"because this column is referenced by the following check constraint(s): {listed}"
        )


def _reads(expression: str, path: Path) -> bool:
    """Whether the SQL ``expression`` reads ``path``, a field inside it, or a struct holding it.

    An expression that does not parse counts as reading every column: refusing the change
    is the safe answer when the dependency cannot be ruled out.
    """
    try:
        tree = sqlglot.parse_one(expression, read="spark")
    except sqlglot.errors.ParseError:
        return True
    wanted = tuple(p.lower() for p in path)
    for column in tree.find_all(exp.Column):
        parts = tuple(part.name.lower() for part in column.parts)
        shorter = min(len(parts), len(wanted))
        if parts[:shorter] == wanted[:shorter]:
            return True
    return False


def _stats_columns(conf: Mapping[str, str], old: Path, new: Path | None) -> dict[str, str]:
    """``delta.dataSkippingStatsColumns`` after ``old`` is renamed to ``new`` (None: dropped)."""
    out = dict(conf)
    key = next((k for k in conf if k.lower() == props.STATS_COLUMNS.lower()), None)
    if key is None:
        return out
    kept: list[str] = []
    wanted = tuple(p.lower() for p in old)
    for name in props.split_column_list(conf[key]):
        parts = split_column_name(name)
        if tuple(p.lower() for p in parts[: len(old)]) != wanted:
            kept.append(name)
        elif new is not None:
            kept.append(_dotted((*new, *parts[len(old) :])))
    out[key] = ",".join(kept)
    return out


# ---------------------------------------------------------------------- schema edits


def _find(schema: StructType, path: Sequence[str]) -> Path | None:
    """``path`` spelled as the schema spells it, or None if a part is missing."""
    found: list[str] = []
    current: DataType = schema
    for part in path:
        field = current.find_field(part) if isinstance(current, StructType) else None
        if field is None:
            return None
        found.append(field.name)
        current = field.type
    return tuple(found) if found else None


def _resolve(schema: StructType, path: Sequence[str]) -> Path:
    found = _find(schema, path)
    if found is None:
        raise DeltaAnalysisException(
            f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] column {_dotted(tuple(path))} does not exist "
            f"(columns: {', '.join(schema.field_names)})"
        )
    return found


def _field(schema: StructType, path: Path) -> StructField:
    current: DataType = schema
    field: StructField | None = None
    for part in path:
        assert isinstance(current, StructType)
        field = current.field(part)
        current = field.type
    assert field is not None
    return field


def _parent_struct(schema: StructType, path: Path) -> StructType:
    if len(path) == 1:
        return schema
    parent = _field(schema, path[:-1]).type
    assert isinstance(parent, StructType)
    return parent


def _edit_parent(
    schema: StructType, path: Path, edit: Callable[[StructType], StructType]
) -> StructType:
    """``schema`` with the struct that holds ``path``'s last part replaced by ``edit(it)``."""
    if len(path) == 1:
        return edit(schema)
    head = schema.field(path[0])
    assert isinstance(head.type, StructType)
    inner = _edit_parent(head.type, path[1:], edit)
    return StructType(
        tuple(
            StructField(f.name, inner, f.nullable, f.metadata) if f.name == head.name else f
            for f in schema.fields
        )
    )


def _transform(
    schema: StructType, path: Path, change: Callable[[StructField], StructField]
) -> StructType:
    def edit(parent: StructType) -> StructType:
        return StructType(tuple(change(f) if f.name == path[-1] else f for f in parent.fields))

    return _edit_parent(schema, path, edit)


def _drop(schema: StructType, path: Path) -> StructType:
    def edit(parent: StructType) -> StructType:
        if len(parent.fields) == 1:
            raise DeltaAnalysisException(
                "[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] Cannot drop column "
                f"{_dotted(path)}: it is the only field of its "
                f"{'table' if len(path) == 1 else 'struct'}"
            )
        return StructType(tuple(f for f in parent.fields if f.name != path[-1]))

    return _edit_parent(schema, path, edit)


def _move(schema: StructType, path: Path, change: ColumnChange) -> StructType:
    """Place ``path`` first in its struct, or right after a sibling."""

    def edit(parent: StructType) -> StructType:
        moved = parent.field(path[-1])
        rest = [f for f in parent.fields if f.name != path[-1]]
        if change.first:
            return StructType((moved, *rest))
        sibling = parent.find_field(change.after or "")
        if sibling is None:
            raise DeltaAnalysisException(
                f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] cannot place {_dotted(path)} "
                f"{change.position}: no such column beside it "
                f"(columns: {', '.join(parent.field_names)})"
            )
        if sibling.name == moved.name:
            return parent
        index = next(i for i, f in enumerate(rest) if f.name == sibling.name)
        return StructType((*rest[: index + 1], moved, *rest[index + 1 :]))

    return _edit_parent(schema, path, edit)


# ---------------------------------------------------------------------- helpers


def _commit(
    log: DeltaLog,
    snapshot: Snapshot,
    metadata: Metadata,
    operation: str,
    parameters: Mapping[str, Any],
) -> Snapshot:
    txn = Transaction(log, snapshot)
    txn.update_metadata(metadata)
    return txn.commit(operation, dict(parameters))


def _dotted(path: Path) -> str:
    """A column path as SQL names it (parts with dots or backticks quoted)."""
    return ".".join(
        p if p.replace("_", "").isalnum() else "`" + p.replace("`", "``") + "`" for p in path
    )
