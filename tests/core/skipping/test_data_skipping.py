"""File skipping: each operator against hand-built stats, partition values, and a property test
that skipping never drops a file holding a matching row (stats written from real Parquet)."""

from __future__ import annotations

import datetime as dt
import json
import math
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_pyspark.core.expressions import nodes as ex
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.expressions.printer import to_sql
from delta_pyspark.core.skipping.data_skipping import (
    may_match,
    partition_filter_mask,
    split_partition_predicate,
)
from delta_pyspark.core.stats.collection import collect_parquet_stats
from delta_pyspark.core.stats.parsing import parse_stats

UTC = dt.UTC
SCHEMA = pa.schema(
    [
        ("x", pa.int64()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("n", pa.struct([("y", pa.float64())])),
        ("flag", pa.bool_()),
        ("p", pa.string()),
        ("d", pa.date32()),
    ]
)
PARTS = ["p", "d"]


def _stats(n: int, low: dict[str, Any], high: dict[str, Any], nulls: dict[str, Any]) -> str:
    return json.dumps({"numRecords": n, "minValues": low, "maxValues": high, "nullCount": nulls})


def _files() -> pa.Table:
    stats = [
        _stats(
            10,
            {"x": 1, "s": "apple", "ts": "2021-01-01T00:00:00.000Z", "n": {"y": 1.5}},
            {"x": 5, "s": "banana", "ts": "2021-01-02T00:00:00.000Z", "n": {"y": 2.5}},
            {"x": 0, "s": 0, "ts": 0, "n": {"y": 0}, "flag": 0},
        ),
        _stats(10, {"x": 6}, {"x": 9}, {"x": 3}),  # some nulls
        _stats(10, {}, {}, {"x": 10, "s": 10}),  # all null
        None,  # no stats at all
        _stats(4, {"x": 7, "s": "b"}, {"x": 7, "s": "b"}, {"x": 0, "s": 0}),  # a single value
    ]
    partitions = [
        [("p", "a"), ("d", "2020-01-01")],
        [("p", "b"), ("d", "2020-01-02")],
        [("p", ""), ("d", "not a date")],  # "" is a null partition value
        [],  # missing keys are null partition values too
        [("p", "a"), ("d", "2020-01-03")],
    ]
    return pa.table(
        {
            "partitionValues": pa.array(partitions, pa.map_(pa.string(), pa.string())),
            "stats": pa.array(stats),
        }
    )


CASES = [
    ("x = 3", [True, False, False, True, False]),
    ("3 = x", [True, False, False, True, False]),
    ("x = 7", [False, True, False, True, True]),
    ("x > 5", [False, True, False, True, True]),
    ("x >= 5", [True, True, False, True, True]),
    ("x < 1", [False, False, False, True, False]),
    ("x <= 1", [True, False, False, True, False]),
    ("x != 7", [True, True, False, True, False]),
    ("NOT (x = 7)", [True, True, False, True, False]),
    ("NOT (x != 7)", [False, True, False, True, True]),
    ("x IS NULL", [False, True, True, True, False]),
    ("x IS NOT NULL", [True, True, False, True, True]),
    ("NOT (x IS NULL)", [True, True, False, True, True]),
    ("x <=> NULL", [False, True, True, True, False]),
    ("x <=> 7", [False, True, False, True, True]),
    ("NOT (x <=> 7)", [True, True, True, True, False]),
    ("x = NULL", [False] * 5),
    ("NOT (x = NULL)", [False] * 5),
    ("x IN (7, 8)", [False, True, False, True, True]),
    ("x IN (2, NULL)", [True, False, False, True, False]),
    ("x NOT IN (7)", [True, True, False, True, False]),
    ("x NOT IN (7, NULL)", [False] * 5),  # NULL in the list: never TRUE
    ("x BETWEEN 2 AND 6", [True, True, False, True, False]),
    ("x = 2.5", [True, False, False, True, False]),  # compared as decimals
    ("x > 5.5", [False, True, False, True, True]),
    ("x > 5.5D", [False, True, False, True, True]),  # compared as doubles
    ("x = '7'", [False, True, False, True, True]),  # Spark casts the string to the number
    ("x = 'seven'", [True] * 4 + [True]),  # not modelled: may match
    ("s LIKE 'b%'", [True, True, False, True, True]),
    ("s LIKE 'c%'", [False, True, False, True, False]),
    ("s LIKE 'ap%'", [True, True, False, True, False]),
    ("NOT (s LIKE 'b%')", [True, True, False, True, False]),
    ("s LIKE '%'", [True, True, False, True, True]),
    ("s = 'banana'", [True, True, False, True, False]),
    ("s > 'banana'", [False, True, False, True, False]),
    ("n.y > 2", [True, True, True, True, True]),
    ("n.y > 3", [False, True, True, True, True]),
    ("N.Y > 3", [False, True, True, True, True]),  # names resolve case-insensitively
    ("ts > TIMESTAMP'2021-01-02 00:00:00'", [True, True, True, True, True]),  # max + 1 ms
    ("ts > TIMESTAMP'2021-01-02 00:00:00.001'", [False, True, True, True, True]),
    ("ts < DATE'2021-01-01'", [False, True, True, True, True]),
    ("ts = 5", [True] * 5),  # not modelled
    ("p = 'a'", [True, False, False, False, True]),
    ("p = 'a' AND x > 5", [False, False, False, False, True]),
    ("p = 'a' OR x > 5", [True, True, False, True, True]),
    ("p IS NULL", [False, False, True, True, False]),
    ("p <=> NULL", [False, False, True, True, False]),
    ("p IN ('b', 'c')", [False, True, False, False, False]),
    ("NOT (p = 'a')", [False, True, False, False, False]),  # null partition: NULL, not TRUE
    ("d = DATE'2020-01-01'", [True, False, True, False, False]),  # "not a date": unknown
    ("d > '2020-01-01'", [False, True, True, False, True]),  # unparseable value: unknown
    ("d IS NULL", [False, False, False, True, False]),
    ("unknown_column = 1", [True] * 5),
    ("f(x) = 1", [True] * 5),
    ("NOT (f(x) = 1)", [True] * 5),
    ("TRUE", [True] * 5),
    ("FALSE", [False] * 5),
    ("NULL", [False] * 5),
    ("1 = 1", [True] * 5),
    ("1 = 2", [False] * 5),
    ("flag", [True] * 5),
]


@pytest.mark.parametrize(("sql", "expected"), CASES)
def test_may_match(sql: str, expected: list[bool]) -> None:
    result = may_match(parse_predicate(sql), _files(), SCHEMA, PARTS)
    assert result.to_pylist() == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("p = 'a'", [True, False, False, False, True]),
        ("p = 'a' AND x > 5", [True, False, False, False, True]),  # data part ignored
        ("p = 'a' OR x > 5", [True] * 5),
        ("NOT (p = 'a') OR p IS NULL", [False, True, True, True, False]),
        ("d >= DATE'2020-01-02'", [False, True, True, False, True]),
    ],
)
def test_partition_filter_mask(sql: str, expected: list[bool]) -> None:
    result = partition_filter_mask(parse_predicate(sql), _files(), SCHEMA, PARTS)
    assert result.to_pylist() == expected


def test_split_partition_predicate() -> None:
    expr = parse_predicate("p = 'a' AND x > 1 AND (d IS NULL OR p = 'b') AND f(p) = 1 AND TRUE")
    part, data = split_partition_predicate(expr, ["P", "d"])
    assert part == parse_predicate("p = 'a' AND (d IS NULL OR p = 'b') AND TRUE")
    assert data == parse_predicate("x > 1 AND f(p) = 1")
    assert split_partition_predicate(parse_predicate("x > 1"), PARTS) == (None, data.left)  # type: ignore[union-attr]
    assert split_partition_predicate(parse_predicate("p = 'a'"), PARTS)[1] is None


def test_stats_parsed_and_json_are_combined() -> None:
    files = _files()
    parsed = parse_stats(files.column("stats"), SCHEMA, adjust_bounds=False)
    # a checkpoint with struct stats for some rows and JSON only for others
    keep = pa.array([True, False, True, False, True])
    partial = pc.if_else(keep, parsed, pa.nulls(len(parsed), parsed.type))
    mixed = files.append_column("stats_parsed", partial)
    struct_only = files.drop_columns(["stats"]).append_column("stats_parsed", parsed)
    for sql, expected in CASES:
        expr = parse_predicate(sql)
        assert may_match(expr, mixed, SCHEMA, PARTS).to_pylist() == expected, sql
        assert may_match(expr, struct_only, SCHEMA, PARTS).to_pylist() == expected, sql


def test_typed_partition_values() -> None:
    schema = pa.schema(
        [
            ("i", pa.int32()),
            ("b", pa.bool_()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("ntz", pa.timestamp("us")),
            ("dec", pa.decimal128(5, 2)),
            ("f", pa.float64()),
        ]
    )
    rows = [
        {"i": "1", "b": "true", "ts": "2021-01-01 10:00:00", "ntz": "2021-01-01 10:00:00",
         "dec": "1.50", "f": "NaN"},
        {"i": "20", "b": "false", "ts": "2021-01-01T10:00:00.000001Z",
         "ntz": "2021-01-01 10:00:00.5", "dec": "-3.00", "f": "2.5"},
        {"i": "x", "b": "", "ts": "garbage", "ntz": "", "dec": "", "f": ""},
    ]  # fmt: skip
    files = pa.table(
        {
            "partitionValues": pa.array(
                [list(r.items()) for r in rows], pa.map_(pa.string(), pa.string())
            )
        }
    )
    names = schema.names

    def check(sql: str, expected: list[bool], time_zone: str = "UTC") -> None:
        expr = parse_predicate(sql)
        mask = partition_filter_mask(expr, files, schema, names, time_zone=time_zone)
        assert mask.to_pylist() == expected, sql
        assert may_match(expr, files, schema, names, time_zone=time_zone).to_pylist() == expected

    check("i = 1", [True, False, True])  # "x" is unparseable: unknown, not null
    check("i > 5", [False, True, True])
    check("i IS NULL", [False, False, False])
    check("b", [True, False, False])
    check("b = false", [False, True, False])
    check("b IS NULL", [False, False, True])
    check("ts = TIMESTAMP'2021-01-01 10:00:00'", [True, False, True])
    check("ts > TIMESTAMP'2021-01-01 10:00:00'", [False, True, True])
    # zone-less partition timestamps are wall-clock times of the session zone
    check("ts = TIMESTAMP'2021-01-01 10:00:00Z'", [False, False, True], "America/New_York")
    check("ts = TIMESTAMP'2021-01-01 15:00:00Z'", [True, False, True], "America/New_York")
    check("ntz > TIMESTAMP'2021-01-01 10:00:00'", [False, True, False])
    check("dec = 1.5", [True, False, False])
    check("dec < 0", [False, True, False])
    check("f > 2", [True, True, False])  # NaN sorts above everything in Spark
    check("f = 2.5D", [True, True, False])


def test_nothing_to_go_on() -> None:
    files = pa.table({"path": ["a", "b"]})
    assert may_match(parse_predicate("x = 1"), files, SCHEMA, PARTS).to_pylist() == [True, True]
    assert partition_filter_mask(parse_predicate("p = 'a'"), files, SCHEMA, PARTS).to_pylist() == [
        True,
        True,
    ]
    empty = pa.table({"stats": pa.array([], pa.string())})
    assert may_match(parse_predicate("x = 1"), empty, SCHEMA, PARTS).to_pylist() == []


def test_empty_files_match_nothing() -> None:
    files = pa.table({"stats": [_stats(0, {}, {}, {}), _stats(1, {}, {}, {})]})
    anything = parse_predicate("x IS NULL OR x IS NOT NULL")
    assert may_match(anything, files, SCHEMA, PARTS).to_pylist() == [False, True]
    # predicates without data columns never pay for parsing stats
    assert may_match(parse_predicate("TRUE"), files, SCHEMA, PARTS).to_pylist() == [True, True]


def test_large_in_list_uses_its_range() -> None:
    files = pa.table(
        {
            "stats": [
                _stats(1, {"x": 1}, {"x": 5}, {"x": 0}),
                _stats(1, {"x": 500}, {"x": 600}, {"x": 0}),
            ]
        }
    )
    values = ", ".join(str(v) for v in range(100, 300))
    assert may_match(parse_predicate(f"x IN ({values})"), files, SCHEMA, PARTS).to_pylist() == [
        False,
        False,
    ]
    # partition values are single values: membership stays exact, even for long lists
    parts = pa.table(
        {
            "partitionValues": pa.array(
                [[("p", "150")], [("p", "151")]], pa.map_(pa.string(), pa.string())
            )
        }
    )
    evens = ", ".join(f"'{v}'" for v in range(100, 300, 2))
    mask = partition_filter_mask(parse_predicate(f"p IN ({evens})"), parts, SCHEMA, PARTS)
    assert mask.to_pylist() == [True, False]


# ---------------------------------------------------------------------------------------------
# Property: skipping is sound against stats our writer derives from real Parquet footers.

DATA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("dec", pa.decimal128(5, 2)),
        ("n", pa.struct([("x", pa.int32())])),
        ("b", pa.bool_()),
    ]
)
FULL = pa.schema([*DATA, pa.field("p", pa.int32()), pa.field("q", pa.string())])
PARTITIONS = ["p", "q"]

_strings = st.sampled_from(
    ["", "a", "ab", "abc", "b", "ba", "é", "🌼", "\U0010ffff", "a" * 33, "a" * 32 + "é",
     "a" * 32 + "\U0010ffff" + "b", "b" * 40, "🌼" * 33]
)  # fmt: skip
_ints = st.integers(-4, 4)
_floats = st.sampled_from([-1.5, -0.0, 0.0, 0.5, 2.0, 3.25, float("nan"), float("inf")])
_dates = st.dates(dt.date(1999, 12, 30), dt.date(2000, 1, 3))
_stamps = st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 3000)).map(
    lambda v: v.replace(tzinfo=UTC)
)
_decimals = st.decimals(Decimal("-2"), Decimal("2"), places=2)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "i": _ints,
    "f": _floats,
    "s": _strings,
    "d": _dates,
    "ts": _stamps,
    "dec": _decimals,
    "n.x": _ints,
    "b": st.booleans(),
    "p": _ints,
    "q": _strings,
}
# literals a column may be compared with (Spark's coercion of these pairs is modelled)
LITERALS: dict[str, st.SearchStrategy[Any]] = {
    **VALUES,
    "i": st.one_of(_ints, _decimals, _floats, _ints.map(str)),
    "f": st.one_of(_floats, _ints, _decimals),
    "d": st.one_of(_dates, _stamps.map(lambda v: v.replace(tzinfo=None))),
    "ts": st.one_of(_stamps, _stamps.map(lambda v: v.replace(tzinfo=None)), _dates),
    "dec": st.one_of(_decimals, _ints, st.decimals(Decimal("-2"), Decimal("2"), places=3)),
    "p": st.one_of(_ints, _decimals),
}
_row = st.fixed_dictionaries(
    {
        "i": st.none() | _ints,
        "f": st.none() | _floats,
        "s": st.none() | _strings,
        "d": st.none() | _dates,
        "ts": st.none() | _stamps,
        "dec": st.none() | _decimals,
        "n": st.none() | st.fixed_dictionaries({"x": st.none() | _ints}),
        "b": st.none() | st.booleans(),
    }
)
_file = st.tuples(
    st.lists(_row, max_size=5),
    st.none() | _ints,
    st.none() | _strings,
    st.integers(1, 3),  # row group size
)


def _column(name: str) -> ex.Column:
    return ex.Column(tuple(name.split(".")))


@st.composite
def _leaf(draw: st.DrawFn, columns: list[str]) -> ex.Expr:
    name = draw(st.sampled_from(columns))
    kind = draw(
        st.sampled_from(["cmp", "cmp", "cmp", "flip", "in", "null", "notnull", "like", "unk"])
    )
    col = _column(name)
    lit = LITERALS[name]
    if kind in ("cmp", "flip"):
        op = draw(st.sampled_from(ex.COMPARISON_OPS))
        value = ex.Literal(draw(st.none() | lit) if draw(st.integers(0, 9)) == 0 else draw(lit))
        return ex.Comparison(op, col, value) if kind == "cmp" else ex.Comparison(op, value, col)
    if kind == "in":
        return ex.In(col, tuple(draw(st.lists(st.none() | lit, min_size=1, max_size=3))))
    if kind == "null":
        return ex.IsNull(col)
    if kind == "notnull":
        return ex.IsNotNull(col)
    if kind == "like" and name in ("s", "q"):
        return ex.StartsWith(col, draw(st.sampled_from(["", "a", "ab", "b", "é", "a" * 32, "🌼"])))
    if kind == "like" and name == "b":
        return col
    return ex.Unknown(f"opaque_{draw(st.integers(0, 1000))}()", frozenset({col.path}))


def _predicates(columns: list[str]) -> st.SearchStrategy[ex.Expr]:
    return st.recursive(
        _leaf(columns),
        lambda inner: st.one_of(
            st.builds(ex.And, inner, inner),
            st.builds(ex.Or, inner, inner),
            st.builds(ex.Not, inner),
        ),
        max_leaves=5,
    )


# -- the oracle: Spark's three-valued evaluation of one row ---------------------------------------


def _key(v: Any) -> Any:
    """Spark ordering of a value: NaN above every other double."""
    if isinstance(v, float) and math.isnan(v):
        return (1, 0.0)
    return (0, v)


def _coerce_pair(a: Any, b: Any) -> tuple[Any, Any]:
    """The values Spark compares for column value ``a`` and literal ``b``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a, b
    if isinstance(b, str) and isinstance(a, int):
        return a, int(b)
    if isinstance(a, float) or isinstance(b, float):
        return float(a), float(b)  # one side is a double: both become doubles
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        return _as_instant(a), _as_instant(b)
    return a, b


def _as_instant(v: Any) -> dt.datetime:
    if not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day)
    return v if v.tzinfo is not None else v.replace(tzinfo=UTC)


def _compare(op: str, a: Any, b: Any) -> bool | None:
    if op == "<=>":
        if a is None or b is None:
            return a is None and b is None
        op = "="
    if a is None or b is None:
        return None
    a, b = _coerce_pair(a, b)
    ka, kb = _key(a), _key(b)
    return {"=": ka == kb, "!=": ka != kb, "<": ka < kb, "<=": ka <= kb, ">": ka > kb,
            ">=": ka >= kb}[op]  # fmt: skip


def _value(row: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for part in path:
        if value is None:
            return None
        value = value[part]
    return value


def _eval(e: ex.Expr, row: dict[str, Any], salt: int) -> bool | None:
    if isinstance(e, ex.And):
        a, b = _eval(e.left, row, salt), _eval(e.right, row, salt)
        return False if a is False or b is False else (None if a is None or b is None else True)
    if isinstance(e, ex.Or):
        a, b = _eval(e.left, row, salt), _eval(e.right, row, salt)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if isinstance(e, ex.Not):
        v = _eval(e.expr, row, salt)
        return None if v is None else not v
    if isinstance(e, ex.Column):
        return _value(row, e.path)
    if isinstance(e, ex.Comparison):
        left = _value(row, e.left.path) if isinstance(e.left, ex.Column) else e.left.value  # type: ignore[union-attr]
        right = _value(row, e.right.path) if isinstance(e.right, ex.Column) else e.right.value  # type: ignore[union-attr]
        if isinstance(e.left, ex.Literal):
            return _compare(ex.FLIPPED_OP[e.op], right, left)
        return _compare(e.op, left, right)
    if isinstance(e, ex.In):
        v = _value(row, e.expr.path)  # type: ignore[union-attr]
        if v is None:
            return None
        if any(c is not None and _compare("=", v, c) for c in e.values):
            return True
        return None if None in e.values else False
    if isinstance(e, ex.IsNull):
        return _value(row, e.expr.path) is None  # type: ignore[union-attr]
    if isinstance(e, ex.IsNotNull):
        return _value(row, e.expr.path) is not None  # type: ignore[union-attr]
    if isinstance(e, ex.StartsWith):
        v = _value(row, e.expr.path)  # type: ignore[union-attr]
        return None if v is None else v.startswith(e.prefix)
    if isinstance(e, ex.Unknown):  # anything at all: an arbitrary function of the row
        h = zlib.crc32(repr((e.sql, sorted(row.items(), key=str), salt)).encode())
        return [True, False, None][h % 3]
    raise AssertionError(e)


def _write_files(tmp: Path, files: list[Any], indexed: int) -> tuple[pa.Table, list[list[dict]]]:
    stats, partitions, rows_per_file = [], [], []
    for k, (rows, p, q, group) in enumerate(files):
        path = tmp / f"part-{k}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=DATA), path, row_group_size=group)
        stats.append(collect_parquet_stats(pq.read_metadata(path), FULL, indexed,
                                           partition_columns=PARTITIONS))  # fmt: skip
        pv = []
        if p is not None:
            pv.append(("p", str(p)))
        pv.append(("q", "" if q is None else q))
        partitions.append(pv)
        rows_per_file.append([{**r, "p": p, "q": q if q != "" else None} for r in rows])
    table = pa.table(
        {
            "partitionValues": pa.array(partitions, pa.map_(pa.string(), pa.string())),
            "stats": pa.array(stats),
        }
    )
    return table, rows_per_file


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.lists(_file, min_size=1, max_size=4),
    expr=_predicates(list(VALUES)),
    indexed=st.sampled_from([-1, -1, 3, 6]),
    salt=st.integers(0, 3),
)
def test_skipping_is_sound(
    tmp_path_factory: pytest.TempPathFactory, files: list[Any], expr: ex.Expr, indexed: int,
    salt: int,
) -> None:  # fmt: skip
    table, rows = _write_files(tmp_path_factory.mktemp("t"), files, indexed)
    keep = may_match(expr, table, FULL, PARTITIONS).to_pylist()
    parts = partition_filter_mask(expr, table, FULL, PARTITIONS).to_pylist()
    raw = parse_stats(table.column("stats"), FULL, adjust_bounds=False)
    via_struct = may_match(expr, table.append_column("stats_parsed", raw), FULL, PARTITIONS)
    assert via_struct.to_pylist() == keep
    for k, file_rows in enumerate(rows):
        if any(_eval(expr, r, salt) is True for r in file_rows):
            assert keep[k], (k, to_sql(expr), file_rows, table.column("stats")[k])
            assert parts[k], (k, to_sql(expr), file_rows)


@settings(max_examples=150, deadline=None)
@given(
    partitions=st.lists(st.tuples(st.none() | _ints, st.none() | _strings), min_size=1, max_size=5),
    expr=_predicates(["p", "q"]).filter(
        lambda e: not any(isinstance(n, ex.Unknown) for n in ex.walk(e))
    ),
)
def test_partition_predicates_are_exact(partitions: list[Any], expr: ex.Expr) -> None:
    values = [[*([("p", str(p))] if p is not None else []), ("q", q or "")] for p, q in partitions]
    table = pa.table({"partitionValues": pa.array(values, pa.map_(pa.string(), pa.string()))})
    part, data = split_partition_predicate(expr, PARTITIONS)
    assert data is None and part is not None and ex.conjuncts(part) == ex.conjuncts(expr)
    mask = partition_filter_mask(expr, table, FULL, PARTITIONS).to_pylist()
    expected = [_eval(expr, {"p": p, "q": q or None}, 0) is True for p, q in partitions]
    assert mask == expected, to_sql(expr)
