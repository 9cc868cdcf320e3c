"""Generated columns (PROTOCOL.md "Generated Columns"): the Spark-free half.

A column whose metadata holds ``delta.generationExpression`` (a Spark SQL expression over the
table's other columns) is generated when the protocol supports the ``generatedColumns``
writer feature (writer version 4 and up, or listed at version 7). Writers must store, in every
row, the expression's value; that is what lets a reader turn a filter on a source column into a
filter on a generated partition column (``partition_filter``), as delta-spark's
``GeneratedColumn.generatePartitionFilters`` does.

Here: which columns are generated, the checks of an expression that need no Spark (columns it
references, subqueries, aggregates, window functions; delta-spark's error classes), and the
partition filters derived from a data filter. Type, determinism and UDF checks need Spark's
analyzer (``spark/columns/generated_columns.py``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from sqlglot import exp

from delta_pyspark.core.expressions import nodes as ex
from delta_pyspark.core.expressions.coercion import timestamp_micros
from delta_pyspark.core.expressions.parser import parse_sql
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.schema import PrimitiveType, StructType, type_name
from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.exceptions import GeneratedColumnError

GENERATION_EXPRESSION_KEY = "delta.generationExpression"
FEATURE = "generatedColumns"


def generation_expressions(schema: StructType, protocol: Protocol | None = None) -> dict[str, str]:
    """Top-level column name -> generation expression, in schema order. With ``protocol``,
    empty unless it supports ``generatedColumns`` (without it the key is plain metadata)."""
    if protocol is not None and not supports(protocol, FEATURE):
        return {}
    return {
        f.name: str(f.metadata[GENERATION_EXPRESSION_KEY])
        for f in schema.fields
        if f.metadata.get(GENERATION_EXPRESSION_KEY) is not None
    }


def check_generation_expressions(schema: StructType) -> None:
    """Refuse, as delta-spark does at creation, a generated column whose expression uses a
    column that is not a non-generated column of ``schema`` (itself included), a subquery,
    an aggregate or a window function, or whose type cannot be generated (VARIANT).

    An expression sqlglot cannot parse is left to Spark's parser (which reports it)."""
    generated = generation_expressions(schema)
    allowed = {f.name.lower() for f in schema.fields if f.name not in generated}
    for name, text in generated.items():
        field_type = schema.field(name).type
        if isinstance(field_type, PrimitiveType) and field_type.name == "variant":
            raise GeneratedColumnError(
                "[DELTA_UNSUPPORTED_DATA_TYPE_IN_GENERATED_COLUMN] "
                f"VARIANT cannot be the result of a generated column ({name})",
            )
        try:
            tree = parse_sql(text)
        except Exception:
            continue
        if tree is None:
            continue
        _check_tree(name, text, tree, allowed)


def _check_tree(name: str, text: str, tree: exp.Expression, allowed: set[str]) -> None:
    for node in tree.walk():
        if isinstance(node, exp.Subquery | exp.Select | exp.Exists):
            raise GeneratedColumnError(
                "[DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN] "
                f"{text} cannot be used in a generated column ({name}): it has a subquery",
            )
        if isinstance(node, exp.Window):
            raise GeneratedColumnError(
                "[DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN] "
                f"{text} cannot be used in a generated column ({name}): it has a window function",
            )
        if isinstance(node, exp.AggFunc):
            raise GeneratedColumnError(
                "[DELTA_AGGREGATE_IN_GENERATED_COLUMN] "
                f"Found {node.sql(dialect='spark')}. A generated column cannot use an aggregate "
                f"expression (column {name}: {text})",
            )
        if isinstance(node, exp.Column):
            top = node.parts[0].name if node.parts else node.name
            if top.lower() not in allowed:
                raise GeneratedColumnError(
                    "[DELTA_INVALID_GENERATED_COLUMN_REFERENCES] "
                    "A generated column cannot use a non-existent column or another generated "
                    f"column: {name} GENERATED ALWAYS AS ({text}) references {top!r}",
                )


def check_type_changes(old: StructType, new: StructType) -> None:
    """Refuse a schema change (a write's schema evolution) that changes the type of a
    generated column or of a column one reads, as delta-spark does."""
    generated = generation_expressions(old)
    if not generated:
        return
    used = {name.lower() for name in generated}
    for text in generated.values():
        try:
            tree = parse_sql(text)
        except Exception:
            return  # cannot tell which columns it reads: the schema check after decides
        if tree is not None:
            used |= {c.parts[0].name.lower() for c in tree.find_all(exp.Column) if c.parts}
    for f in old.fields:
        changed = new.find_field(f.name, case_sensitive=False)
        if f.name.lower() in used and changed is not None and changed.type != f.type:
            raise GeneratedColumnError(
                "[DELTA_GENERATED_COLUMN_UPDATE_TYPE_MISMATCH] "
                f"Column {f.name} is a generated column or a column used by a generated "
                f"column. The data type is {type_name(f.type)} and cannot be converted to "
                f"data type {type_name(changed.type)}",
            )


# ----------------------------------------------------------------------------- pruning


@dataclass(frozen=True)
class PartitionExpression:
    """A generated partition column whose expression delta-spark knows how to invert:
    ``kind`` of ``source`` (``date``, ``year``, ``month``, ``day``, ``hour``,
    ``date_format`` with ``argument`` the format, ``substring`` with (pos, len),
    ``identity``)."""

    partition_column: str
    source: str
    kind: str
    argument: Any = None

    @property
    def monotonic(self) -> bool:
        """Whether the expression never decreases as its source grows (ranges translate)."""
        return self.kind in ("identity", "date", "year", "date_format")


# date_format patterns whose text order is time order (delta-spark's list)
_ORDERED_FORMATS = ("yyyy-MM", "yyyy-MM-dd", "yyyy-MM-dd-HH")
_DATE_FORMAT = re.compile(
    r"^\s*date_format\s*\(\s*(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\s*,\s*'([^']*)'\s*\)\s*$",
    re.IGNORECASE,
)
_TIME_TYPES = ("timestamp", "timestamp_ntz", "date")


def partition_expressions(
    schema: StructType, partition_columns: Sequence[str], protocol: Protocol | None = None
) -> list[PartitionExpression]:
    """The generated partition columns a filter on their source column can prune by."""
    generated = {k.lower(): v for k, v in generation_expressions(schema, protocol).items()}
    out = []
    for column in partition_columns:
        text = generated.get(column.lower())
        if text is None:
            continue
        found = _recognise(text, schema)
        if found is not None:
            out.append(PartitionExpression(schema.field(column).name, *found))
    return out


def _type_of(schema: StructType, name: str) -> str | None:
    field = schema.find_field(name, case_sensitive=False)
    if field is None or not isinstance(field.type, PrimitiveType):
        return None
    return field.type.name


def _source(node: exp.Expression | None, schema: StructType, types: tuple[str, ...]) -> str | None:
    """The top-level column ``node`` is (seen through a cast to DATE or ``to_date`` without
    a format), when its type is one of ``types``."""
    while isinstance(node, exp.Paren):
        node = node.this
    if (isinstance(node, exp.Cast) and node.to.is_type("date")) or (
        isinstance(node, exp.TsOrDsToDate) and node.args.get("format") is None
    ):
        node = node.this
    if not isinstance(node, exp.Column) or len(node.parts) != 1:
        return None
    found = schema.find_field(node.name, case_sensitive=False)
    if found is None or _type_of(schema, found.name) not in types:
        return None
    return found.name


def _recognise(text: str, schema: StructType) -> tuple[str, str, Any] | None:
    m = _DATE_FORMAT.match(text)
    if m:
        name = m.group(1)
        name = name[1:-1].replace("``", "`") if name.startswith("`") else name
        found = schema.find_field(name, case_sensitive=False)
        ok = found is not None and _type_of(schema, found.name) in _TIME_TYPES
        if found is not None and ok and m.group(2) in _ORDERED_FORMATS:
            return found.name, "date_format", m.group(2)
        return None
    try:
        tree = parse_sql(text)
    except Exception:
        return None
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.Cast | exp.TsOrDsToDate):
        name = _source(tree, schema, _TIME_TYPES)
        return None if name is None else (name, "date", None)
    parts: dict[type[exp.Expression], tuple[str, tuple[str, ...]]] = {
        exp.Year: ("year", _TIME_TYPES),
        exp.Month: ("month", _TIME_TYPES),
        exp.Day: ("day", _TIME_TYPES),
        exp.DayOfMonth: ("day", _TIME_TYPES),
        exp.Hour: ("hour", ("timestamp", "timestamp_ntz")),
    }
    for cls, (kind, types) in parts.items():
        if type(tree) is cls:
            name = _source(tree.this, schema, types)
            return None if name is None else (name, kind, None)
    if isinstance(tree, exp.Substring):
        name = _source(tree.this, schema, ("string",))
        start, length = tree.args.get("start"), tree.args.get("length")
        if name is None or not _int_literal(start) or not _int_literal(length):
            return None
        return name, "substring", (int(start.name), int(length.name))  # type: ignore[union-attr]
    if isinstance(tree, exp.Column) and len(tree.parts) == 1:
        found = schema.find_field(tree.name, case_sensitive=False)
        return None if found is None else (found.name, "identity", None)
    return None


def _int_literal(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit()


def partition_filter(
    predicate: ex.Expr,
    schema: StructType,
    partition_columns: Sequence[str],
    protocol: Protocol | None = None,
    time_zone: str = "UTC",
) -> ex.Expr | None:
    """A filter on generated partition columns that every row matching ``predicate`` also
    matches (None: nothing to derive), so files can be pruned by partition values from a
    filter on the columns those partitions are generated from."""
    exprs = partition_expressions(schema, partition_columns, protocol)
    if not exprs:
        return None
    by_source: dict[str, list[PartitionExpression]] = {}
    for e in exprs:
        by_source.setdefault(e.source.lower(), []).append(e)
    derive = _Deriver(by_source, schema, ZoneInfo(time_zone))
    return derive(predicate)


@dataclass
class _Deriver:
    by_source: Mapping[str, list[PartitionExpression]]
    schema: StructType
    zone: ZoneInfo

    def __call__(self, node: ex.Expr) -> ex.Expr | None:
        if isinstance(node, ex.And):
            found = [d for d in (self(node.left), self(node.right)) if d is not None]
            return ex.and_all(found)
        if isinstance(node, ex.Or):
            left, right = self(node.left), self(node.right)
            return None if left is None or right is None else ex.Or(left, right)
        if isinstance(node, ex.Comparison):
            return self._comparison(node)
        if isinstance(node, ex.In):
            return self._each(node.expr, lambda p, f: _in(p, node.values, f))
        if isinstance(node, ex.IsNull):
            return self._each(node.expr, lambda p, f: ex.IsNull(ex.Column((p.partition_column,))))
        return None

    def _type(self, p: PartitionExpression) -> str:
        return _type_of(self.schema, p.source) or ""

    def _comparison(self, node: ex.Comparison) -> ex.Expr | None:
        op, column, literal = node.op, node.left, node.right
        if isinstance(column, ex.Literal) and isinstance(literal, ex.Column):
            op, column, literal = ex.FLIPPED_OP[op], literal, column
        if not isinstance(literal, ex.Literal) or literal.value is None or op in ("!=", "<=>"):
            return None
        value = literal.value

        def one(p: PartitionExpression, f: Callable[[Any], Any]) -> ex.Expr | None:
            if op != "=" and not p.monotonic:
                return None
            image = f(value)
            if image is None:
                return None
            target = {"<": "<=", ">": ">="}.get(op, op) if p.kind != "identity" else op
            return ex.Comparison(target, ex.Column((p.partition_column,)), ex.Literal(image))

        return self._each(column, one)

    def _each(
        self,
        column: ex.Expr,
        build: Callable[[PartitionExpression, Callable[[Any], Any]], ex.Expr | None],
    ) -> ex.Expr | None:
        """The conjunction of ``build`` over the partition expressions of ``column``."""
        if not isinstance(column, ex.Column) or len(column.path) != 1:
            return None
        found = []
        for p in self.by_source.get(column.path[0].lower(), []):
            derived = build(p, partial(_image, p, self._type(p), self.zone))
            if derived is not None:
                found.append(derived)
        return ex.and_all(found)


def _in(p: PartitionExpression, values: tuple[Any, ...], f: Callable[[Any], Any]) -> ex.Expr | None:
    images = []
    for v in values:
        if v is None:
            continue  # NULL never makes IN true
        image = f(v)
        if image is None:
            return None
        images.append(image)
    return ex.In(ex.Column((p.partition_column,)), tuple(dict.fromkeys(images)))


def _image(p: PartitionExpression, source_type: str, zone: ZoneInfo, value: Any) -> Any:
    """The partition value the expression gives a source value (None: cannot tell)."""
    if p.kind == "identity":
        return value
    if p.kind == "substring":
        if not isinstance(value, str):
            return None
        pos, length = p.argument
        start = max(pos - 1, 0)  # Spark: positions are 1-based, 0 counts as 1
        return value[start : start + max(length, 0)]
    moment = _wall_clock(value, source_type, zone)
    if moment is None:
        return None
    if p.kind == "date":
        return moment.date()
    if p.kind in ("year", "month", "day", "hour"):
        return int(getattr(moment, p.kind))
    formats = {"yyyy-MM": "%Y-%m", "yyyy-MM-dd": "%Y-%m-%d", "yyyy-MM-dd-HH": "%Y-%m-%d-%H"}
    return moment.strftime(formats[p.argument]) if 0 < moment.year < 10000 else None


def _wall_clock(value: Any, source_type: str, zone: ZoneInfo) -> dt.datetime | None:
    """A DATE/TIMESTAMP literal as the wall-clock time Spark's date functions see (a
    TIMESTAMP in the session time zone)."""
    try:
        if source_type == "date":
            if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
                return None
            return dt.datetime(value.year, value.month, value.day)
        if source_type == "timestamp_ntz":
            micros = timestamp_micros(value, None, zone)
            return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
        micros = timestamp_micros(value, "UTC", zone)
        instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
        return instant.astimezone(zone).replace(tzinfo=None)
    except (TypeError, ValueError, OverflowError):
        return None
