"""File skipping: which files of a snapshot may contain a row matching a predicate.

Each predicate node is evaluated, per file, to two boolean arrays: ``can_true`` (some row of
the file may make it TRUE) and ``can_false`` (some row may make it FALSE). SQL's NULL is the
third outcome, so NOT swaps the pair instead of negating "may match" (which would be unsound).
A file is kept unless ``can_true`` is False. Stats prove things via min/max bounds, nullCount
== 0 (no nulls) and nullCount == numRecords (all null) - the only facts the protocol guarantees
even for wide bounds. Partition values are exact, so partition-only predicates are exact.

Everything here is vectorised over files with ``pyarrow.compute``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.expressions import nodes as ex
from delta_pyspark.core.expressions.coercion import (
    comparison_type,
    is_number,
    literal_scalar,
    plain_type,
    timestamp_micros,
)
from delta_pyspark.core.skipping.masks import (
    Mask,
    compare_bound,
    mask_and,
    mask_not,
    mask_or,
    materialise,
    maybe,
    surely,
)
from delta_pyspark.core.stats.cache import StatsCache
from delta_pyspark.core.stats.layout import has_min_max
from delta_pyspark.core.stats.parsing import cast_tolerant, file_stats

_IN_LIST_RANGE_LIMIT = 64  # larger IN lists are tested against their overall [min, max]


def may_match(
    expr: ex.Expr,
    files: pa.Table,
    schema: pa.Schema,
    partition_columns: Sequence[str],
    *,
    time_zone: str = "UTC",
    parsed: StatsCache | None = None,
) -> pa.BooleanArray:
    """True for every file that may hold a row for which ``expr`` is TRUE.

    ``files`` has ``partitionValues`` (map<string,string>) and ``stats`` (JSON) and/or
    ``stats_parsed``; ``schema`` is the table schema (partition columns included) in the names
    the predicate, the stats and the partition values use. ``time_zone`` is the session time
    zone: it places naive timestamp literals and zone-less timestamp partition values.
    ``parsed``: the parsed stats of these same files, asked instead of parsing them (a
    snapshot's ``stats_cache``).
    """
    partitions = partition_filter_mask(expr, files, schema, partition_columns, time_zone=time_zone)
    ctx = _Context(files, schema, partition_columns, time_zone, use_stats=True)
    if not ctx.data_columns(expr):
        return partitions
    # Stats are the expensive part: parse them only for files the partitions did not rule out
    # (more knowledge only shrinks the answer, so this is the same result).
    survivors = pc.indices_nonzero(partitions)
    if len(survivors) == 0:
        return partitions
    rows = None if len(survivors) == files.num_rows else survivors
    if rows is not None:
        ctx = _Context(files.take(rows), schema, partition_columns, time_zone, use_stats=True)
    columns = ctx.data_columns(expr)
    if parsed is None:
        ctx.stats = file_stats(ctx.files, schema, columns)
    else:
        ctx.stats = parsed.stats(schema, columns, rows)
    keep = materialise(ctx.eval(expr)[0], ctx.n)
    if ctx.stats is not None:  # a file with no rows matches nothing
        empty = pc.fill_null(pc.equal(pc.struct_field(ctx.stats, [0]), 0), False)
        keep = pc.and_(keep, pc.invert(empty))
    if rows is None:
        return keep
    return pc.replace_with_mask(partitions, partitions, keep)


def partition_filter_mask(
    expr: ex.Expr,
    files: pa.Table,
    schema: pa.Schema,
    partition_columns: Sequence[str],
    *,
    time_zone: str = "UTC",
) -> pa.BooleanArray:
    """Like ``may_match`` using partition values only; exact for partition-only predicates."""
    ctx = _Context(files, schema, partition_columns, time_zone, use_stats=False)
    return materialise(ctx.eval(expr)[0], files.num_rows)


def split_partition_predicate(
    expr: ex.Expr, partition_columns: Sequence[str]
) -> tuple[ex.Expr | None, ex.Expr | None]:
    """Split the conjuncts of ``expr`` into (partition-only, the rest); None for an empty side.

    A conjunct is partition-only when every column it mentions is a partition column and it
    contains nothing ``Unknown`` - so ``partition_filter_mask`` evaluates it exactly.
    """
    parts = {p.lower() for p in partition_columns}
    partition: list[ex.Expr] = []
    data: list[ex.Expr] = []
    for conj in ex.conjuncts(expr):
        only = not any(isinstance(n, ex.Unknown) for n in ex.walk(conj)) and all(
            len(c) == 1 and c[0].lower() in parts for c in ex.columns_of(conj)
        )
        (partition if only else data).append(conj)
    return ex.and_all(partition), ex.and_all(data)


# ---------------------------------------------------------------------------------------------
# Per-column facts


@dataclass
class _ColumnFacts:
    """What is known about one column in each file; None means "nothing known"."""

    typ: pa.DataType
    low: pa.Array | None  # lower bound of the non-null values
    high: pa.Array | None  # upper bound of the non-null values
    all_null: Mask  # proven: every row is null
    no_null: Mask  # proven: no row is null

    @property
    def has_value(self) -> Mask:
        return mask_not(self.all_null)


_UNKNOWN = (True, True)


class _Context:
    def __init__(
        self,
        files: pa.Table,
        schema: pa.Schema,
        partition_columns: Sequence[str],
        time_zone: str,
        use_stats: bool,
    ) -> None:
        self.files = files
        self.n = files.num_rows
        self.schema = schema
        self.partitions = {p.lower(): p for p in partition_columns}
        self.tz = ZoneInfo(time_zone)
        self.use_stats = use_stats
        self.stats: pa.StructArray | None = None
        self._facts: dict[tuple[str, ...], _ColumnFacts | None] = {}

    # -- column resolution --------------------------------------------------------------------
    def resolve(self, path: tuple[str, ...]) -> tuple[str, tuple[str, ...], pa.DataType] | None:
        """(kind, path as spelled in the schema, type) with kind "partition" or "data"."""
        fields: Sequence[pa.Field] = list(self.schema)
        resolved: list[str] = []
        typ: pa.DataType | None = None
        for i, name in enumerate(path):
            match = [f for f in fields if f.name == name] or [
                f for f in fields if f.name.lower() == name.lower()
            ]
            if len(match) != 1:
                return None
            resolved.append(match[0].name)
            typ = match[0].type
            if i < len(path) - 1:
                if not pa.types.is_struct(typ):
                    return None
                fields = list(typ.fields)
        assert typ is not None
        if len(path) == 1 and path[0].lower() in self.partitions:
            return "partition", (self.partitions[path[0].lower()],), typ
        return "data", tuple(resolved), typ

    def data_columns(self, expr: ex.Expr) -> list[tuple[str, ...]]:
        """Schema paths of the non-partition columns the predicate uses: the stats to parse
        (with numRecords)."""
        wanted = []
        for path in ex.columns_of(expr):
            found = self.resolve(path)
            if found and found[0] == "data":
                wanted.append(found[1])
        return wanted

    def facts(self, path: tuple[str, ...]) -> _ColumnFacts | None:
        if path not in self._facts:
            self._facts[path] = self._compute_facts(path)
        return self._facts[path]

    def _compute_facts(self, path: tuple[str, ...]) -> _ColumnFacts | None:
        found = self.resolve(path)
        if found is None:
            return None
        kind, real, typ = found
        if kind == "partition":
            if "partitionValues" not in self.files.column_names:
                return None
            raw = self.files.column("partitionValues").combine_chunks()
            values, is_null = _partition_values(raw, real[0], typ, self.tz)
            if pa.types.is_floating(values.type):  # Spark orders NaN above all: no bound
                values = pc.if_else(pc.is_nan(values), pa.scalar(None, values.type), values)
            return _ColumnFacts(typ, values, values, is_null, pc.invert(is_null))
        if not self.use_stats or self.stats is None:
            return None
        stats = self.stats
        count = _field(_field(stats, "nullCount"), *real)
        if count is not None and pa.types.is_struct(count.type):
            count = None  # a struct column itself: only its leaves have stats
        rows = pc.struct_field(stats, [0])
        all_null: Mask = False if count is None else surely(pc.equal(count, rows))
        no_null: Mask = False if count is None else surely(pc.equal(count, 0))
        low = high = None
        if has_min_max(typ):
            low = _field(_field(stats, "minValues"), *real)
            high = _field(_field(stats, "maxValues"), *real)
        return _ColumnFacts(typ, low, high, all_null, no_null)

    # -- evaluation ---------------------------------------------------------------------------
    def eval(self, e: ex.Expr) -> tuple[Mask, Mask]:
        """(can_true, can_false) for ``e`` in each file."""
        if isinstance(e, ex.And):
            lt, lf = self.eval(e.left)
            rt, rf = self.eval(e.right)
            return mask_and(lt, rt), mask_or(lf, rf)
        if isinstance(e, ex.Or):
            lt, lf = self.eval(e.left)
            rt, rf = self.eval(e.right)
            return mask_or(lt, rt), mask_and(lf, rf)
        if isinstance(e, ex.Not):
            t, f = self.eval(e.expr)
            return f, t
        if isinstance(e, ex.Literal):
            if e.value is None:
                return False, False
            return (e.value, not e.value) if isinstance(e.value, bool) else _UNKNOWN
        if isinstance(e, ex.Column):
            return self.compare("=", e, True)
        if isinstance(e, ex.Comparison):
            return self.comparison(e)
        if isinstance(e, ex.IsNull | ex.IsNotNull):
            return self.is_null(e)
        if isinstance(e, ex.In):
            return self.in_list(e)
        if isinstance(e, ex.StartsWith):
            return self.starts_with(e)
        return _UNKNOWN

    def is_null(self, e: ex.IsNull | ex.IsNotNull) -> tuple[Mask, Mask]:
        if isinstance(e.expr, ex.Literal):
            t: Mask = e.expr.value is None
            pair = (t, not t)
        elif isinstance(e.expr, ex.Column) and (f := self.facts(e.expr.path)) is not None:
            pair = (mask_not(f.no_null), mask_not(f.all_null))
        else:
            return _UNKNOWN
        return pair if isinstance(e, ex.IsNull) else (pair[1], pair[0])

    def comparison(self, e: ex.Comparison) -> tuple[Mask, Mask]:
        left, right, op = e.left, e.right, e.op
        if isinstance(left, ex.Literal) and isinstance(right, ex.Column):
            left, right, op = right, left, ex.FLIPPED_OP[op]
        if isinstance(left, ex.Literal) and isinstance(right, ex.Literal):
            return _constant_comparison(op, left.value, right.value)
        if not (isinstance(left, ex.Column) and isinstance(right, ex.Literal)):
            return _UNKNOWN
        return self.compare(op, left, right.value)

    def compare(self, op: str, col: ex.Column, value: Any) -> tuple[Mask, Mask]:
        if value is None:
            if op == "<=>":
                return self.is_null(ex.IsNull(col))
            return False, False  # comparing with NULL is never TRUE or FALSE
        facts = self.facts(col.path)
        if facts is None:
            return _UNKNOWN
        prepared = _comparable(facts, [value], self.tz)
        if prepared is None:
            return _UNKNOWN
        low, high, (v,) = prepared
        has = facts.has_value
        some_eq = mask_and(
            has, mask_and(maybe(compare_bound("<=", low, v)), maybe(compare_bound(">=", high, v)))
        )
        all_eq = mask_and(surely(compare_bound("=", low, v)), surely(compare_bound("=", high, v)))
        some_ne = mask_and(has, mask_not(all_eq))
        if op == "=":
            return some_eq, some_ne
        if op == "<=>":  # a null row makes it FALSE, never NULL
            return some_eq, mask_or(some_ne, mask_not(facts.no_null))
        if op == "!=":
            return some_ne, some_eq
        # a row below/above v exists only if the lower/upper bound allows it
        below = {"<": ("<", low), "<=": ("<=", low), ">": (">", high), ">=": (">=", high)}
        rest = {"<": (">=", high), "<=": (">", high), ">": ("<=", low), ">=": ("<", low)}
        t_op, t_bound = below[op]
        f_op, f_bound = rest[op]
        return (
            mask_and(has, maybe(compare_bound(t_op, t_bound, v))),
            mask_and(has, maybe(compare_bound(f_op, f_bound, v))),
        )

    def in_list(self, e: ex.In) -> tuple[Mask, Mask]:
        if not isinstance(e.expr, ex.Column):
            return _UNKNOWN
        facts = self.facts(e.expr.path)
        if facts is None:
            return _UNKNOWN
        values = [v for v in e.values if v is not None]
        has_null = len(values) < len(e.values)
        if not values:  # only NULLs (never TRUE), or an empty list
            return False, not has_null
        prepared = _comparable(facts, values, self.tz)
        if prepared is None:
            return _UNKNOWN
        low, high, vs = prepared
        value_set = pa.array([v.as_py() for v in vs], vs[0].type)
        if len(vs) > _IN_LIST_RANGE_LIMIT:  # one range test instead of one per value
            ordered = pc.sort_indices(value_set)
            first, last = value_set[ordered[0].as_py()], value_set[ordered[-1].as_py()]
            ranges = [(first, last)]
        else:
            ranges = [(v, v) for v in vs]
        some_in: Mask = False
        for lo_v, hi_v in ranges:
            hit = mask_and(
                maybe(compare_bound("<=", low, hi_v)), maybe(compare_bound(">=", high, lo_v))
            )
            some_in = mask_or(some_in, hit)
        all_in: Mask = False
        if low is not None and high is not None:
            # a single value (always so for partition columns): membership is exact
            single = surely(pc.equal(low, high))
            member = surely(pc.is_in(low, value_set=value_set))
            all_in = mask_and(single, member)
            some_in = pc.if_else(single, member, some_in) if single is not False else some_in
        can_true = mask_and(facts.has_value, some_in)
        if has_null:
            return can_true, False
        return can_true, mask_and(facts.has_value, mask_not(all_in))

    def starts_with(self, e: ex.StartsWith) -> tuple[Mask, Mask]:
        if not isinstance(e.expr, ex.Column):
            return _UNKNOWN
        facts = self.facts(e.expr.path)
        if facts is None or not pa.types.is_string(plain_type(facts.typ)):
            return _UNKNOWN
        if e.prefix == "":
            return facts.has_value, False
        k = len(e.prefix)
        p = pa.scalar(e.prefix, pa.string())
        low = None if facts.low is None else pc.utf8_slice_codeunits(_str(facts.low), 0, k)
        high = None if facts.high is None else pc.utf8_slice_codeunits(_str(facts.high), 0, k)
        some = mask_and(
            maybe(None if low is None else pc.less_equal(low, p)),
            maybe(None if high is None else pc.greater_equal(high, p)),
        )
        every = mask_and(
            surely(None if low is None else pc.equal(low, p)),
            surely(None if high is None else pc.equal(high, p)),
        )
        return mask_and(facts.has_value, some), mask_and(facts.has_value, mask_not(every))


# ---------------------------------------------------------------------------------------------
# Helpers: stats access, literal typing, partition values


def _field(arr: pa.Array | None, *names: str) -> pa.Array | None:
    for name in names:
        if arr is None or not pa.types.is_struct(arr.type):
            return None
        idx = arr.type.get_field_index(name)
        if idx < 0:
            return None
        arr = pc.struct_field(arr, [idx])
    return arr


def _str(arr: pa.Array) -> pa.Array:
    return arr if pa.types.is_string(arr.type) else arr.cast(pa.string())


def _comparable(
    facts: _ColumnFacts, values: list[Any], tz: ZoneInfo
) -> tuple[pa.Array | None, pa.Array | None, list[pa.Scalar]] | None:
    """Bounds and literals cast to one comparison type following Spark's coercion, or None
    when we do not model the pairing (then nothing is proven)."""
    typ = plain_type(facts.typ)
    cmp_type = comparison_type(typ, values)
    if cmp_type is None:
        return None
    try:
        scalars = [literal_scalar(v, typ, cmp_type, tz) for v in values]
    except (ValueError, TypeError, OverflowError, ArithmeticError, pa.ArrowInvalid):
        return None
    if any(s is None for s in scalars):
        return None
    try:
        low = None if facts.low is None else pc.cast(facts.low, cmp_type)
        high = None if facts.high is None else pc.cast(facts.high, cmp_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return low, high, scalars


def _constant_comparison(op: str, a: Any, b: Any) -> tuple[Mask, Mask]:
    if a is None or b is None:
        if op == "<=>":
            same = a is None and b is None
            return same, not same
        return False, False
    try:
        result = {
            "=": a == b,
            "<=>": a == b,
            "!=": a != b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
        }[op]
    except TypeError:
        return _UNKNOWN
    if type(a) is not type(b) and not (is_number(a) and is_number(b)):
        return _UNKNOWN
    return bool(result), not result


# -- partition values ---------------------------------------------------------------------------


def _partition_values(
    raw_map: pa.Array, key: str, typ: pa.DataType, tz: ZoneInfo
) -> tuple[pa.Array, pa.Array]:
    """(typed values, is-null) for one partition column; unparseable values become null
    bounds (unknown) but do not count as null partitions."""
    raw = pc.map_lookup(raw_map, pa.scalar(key, raw_map.type.key_type), "first")
    raw = raw.cast(pa.string())
    is_null = pc.fill_null(pc.equal(raw, ""), True)
    raw = pc.if_else(is_null, pa.scalar(None, pa.string()), raw)
    return partition_strings_to_arrow(raw, typ, tz), is_null


def partition_strings_to_arrow(raw: pa.Array, typ: pa.DataType, tz: ZoneInfo) -> pa.Array:
    """Partition value strings -> typed array (null where absent or unparseable).

    Stand-in for the schema module's converter. Timestamps without a zone are wall-clock times
    of the writer, read in the session time zone ``tz`` (as delta-spark does).
    """
    typ = plain_type(typ)
    if pa.types.is_timestamp(typ):
        return _partition_timestamps(raw, typ, tz)
    if pa.types.is_boolean(typ):
        raw = pc.utf8_lower(raw)
    dictionary = pc.dictionary_encode(raw)  # few distinct values: convert each once
    values = cast_tolerant(dictionary.dictionary, typ)
    return pc.take(values, dictionary.indices)


def _partition_timestamps(raw: pa.Array, typ: pa.TimestampType, tz: ZoneInfo) -> pa.Array:
    dictionary = pc.dictionary_encode(raw)
    out: list[int | None] = []
    for text in dictionary.dictionary.to_pylist():
        try:
            out.append(timestamp_micros(text, typ.tz, tz))
        except (TypeError, ValueError, OverflowError):
            out.append(None)
    return pc.take(pa.array(out, pa.int64()), dictionary.indices).cast(typ)
