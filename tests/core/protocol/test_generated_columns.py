"""Generated columns without Spark: which columns are generated, the creation checks that need
no analyzer, the DDL clause split, the protocol a table gets, and partition filters derived from
filters on source columns (checked for soundness against the partition values themselves)."""

from __future__ import annotations

import datetime as dt
import pickle
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_pyspark.core.commands.column_changes import (
    ColumnChange,
    change_columns,
    drop_columns,
    rename_column,
)
from delta_pyspark.core.expressions import nodes as ex
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.generated_columns import (
    GENERATION_EXPRESSION_KEY,
    check_generation_expressions,
    check_type_changes,
    generation_expressions,
    partition_expressions,
    partition_filter,
)
from delta_pyspark.core.protocol.schema import PrimitiveType, StructType, schema_to_string
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.protocol.table_features import check_writable, protocol_for
from delta_pyspark.core.skipping.data_skipping import partition_filter_mask
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import DeltaAnalysisException, GeneratedColumnError

FULL = Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "generatedColumns"}))


def _schema(*fields: tuple[str, Any, str | None]) -> StructType:
    return StructType.from_json(
        {
            "type": "struct",
            "fields": [
                {
                    "name": name,
                    "type": typ,
                    "nullable": True,
                    "metadata": {GENERATION_EXPRESSION_KEY: expr} if expr else {},
                }
                for name, typ, expr in fields
            ],
        }
    )


EVENTS = _schema(
    ("ts", "timestamp", None),
    ("s", "string", None),
    ("d", "date", "CAST(ts AS DATE)"),
    ("y", "integer", "year(ts)"),
    ("m", "integer", "month(ts)"),
    ("h", "integer", "hour(ts)"),
    ("ym", "string", "date_format(ts, 'yyyy-MM')"),
    ("pre", "string", "substring(s, 0, 2)"),
)


def test_generated_columns_need_the_feature() -> None:
    schema = _schema(("ts", "timestamp", None), ("d", "date", "CAST(ts AS DATE)"))
    assert generation_expressions(schema) == {"d": "CAST(ts AS DATE)"}
    assert generation_expressions(schema, FULL) == {"d": "CAST(ts AS DATE)"}
    assert generation_expressions(schema, Protocol(1, 4)) == {"d": "CAST(ts AS DATE)"}
    # below writer version 4 (and not listed at 7) the key is plain metadata
    assert generation_expressions(schema, Protocol(1, 3)) == {}
    assert generation_expressions(schema, Protocol(1, 7, None, frozenset({"appendOnly"}))) == {}


def test_new_table_protocol_is_delta_sparks() -> None:
    # delta-spark: (1, 2)'s features plus generatedColumns, as an explicit writer v7 list
    schema = _schema(("ts", "timestamp", None), ("d", "date", "CAST(ts AS DATE)"))
    assert protocol_for(schema, {}) == FULL
    assert protocol_for(_schema(("ts", "timestamp", None)), {}) == Protocol(1, 2)
    # a legacy (1, 4) table using generated columns is writable now
    check_writable(Protocol(1, 4), "/t", frozenset({"generatedColumns"}))


@pytest.mark.parametrize(
    ("expr", "condition", "fragment"),
    [
        ("CAST(x AS DATE)", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES", "references 'x'"),
        ("CAST(d AS DATE)", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES", "references 'd'"),
        ("y + 1", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES", "references 'y'"),
        ("sum(v)", "DELTA_AGGREGATE_IN_GENERATED_COLUMN", "Found SUM(v)"),
        ("(SELECT max(v) FROM t)", "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN", "subquery"),
        (
            "row_number() OVER (ORDER BY v)",
            "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN",
            "window",
        ),
    ],
)
def test_creation_checks(expr: str, condition: str, fragment: str) -> None:
    schema = _schema(
        ("ts", "timestamp", None),
        ("v", "integer", None),
        ("d", "date", expr),
        ("y", "integer", "v"),
    )
    with pytest.raises(GeneratedColumnError) as caught:
        check_generation_expressions(schema)
    assert caught.value.condition == condition
    assert fragment in str(caught.value)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (str(copy), copy.condition) == (str(caught.value), condition)


def test_creation_checks_accept_valid_expressions() -> None:
    check_generation_expressions(EVENTS)  # no error
    ints = {"type": "array", "elementType": "integer", "containsNull": True}
    lam = _schema(("a", ints, None), ("b", ints, "transform(a, x -> x + 1)"))
    check_generation_expressions(lam)  # a lambda's variable is no column
    variant = _schema(("a", "string", None), ("b", "variant", "parse_json(a)"))
    with pytest.raises(GeneratedColumnError, match="VARIANT") as caught:
        check_generation_expressions(variant)
    assert caught.value.condition == "DELTA_UNSUPPORTED_DATA_TYPE_IN_GENERATED_COLUMN"


def test_recognised_partition_expressions() -> None:
    kinds = {
        p.partition_column: (p.source, p.kind, p.argument)
        for p in partition_expressions(EVENTS, ["d", "y", "m", "h", "ym", "pre"])
    }
    assert kinds == {
        "d": ("ts", "date", None),
        "y": ("ts", "year", None),
        "m": ("ts", "month", None),
        "h": ("ts", "hour", None),
        "ym": ("ts", "date_format", "yyyy-MM"),
        "pre": ("s", "substring", (0, 2)),
    }
    others = _schema(
        ("ts", "timestamp", None),
        ("s", "string", None),
        ("a", "date", "to_date(ts)"),
        ("b", "date", "date(ts)"),
        ("c", "string", "date_format(ts, 'dd-MM')"),  # text order is not time order
        ("e", "date", "CAST(s AS DATE)"),  # a string source: delta-spark does not prune
        ("f", "integer", "year(ts) + 1"),
    )
    found = partition_expressions(others, ["a", "b", "c", "e", "f"])
    assert [(p.partition_column, p.kind) for p in found] == [("a", "date"), ("b", "date")]
    assert partition_expressions(EVENTS, ["d"], Protocol(1, 3)) == []


def _derived(sql: str, zone: str = "UTC") -> str | None:
    parts = ["d", "y", "m", "h", "ym", "pre"]
    found = partition_filter(parse_predicate(sql), EVENTS, parts, FULL, zone)
    return None if found is None else repr(found)


def _cmp(op: str, column: str, value: Any) -> ex.Expr:
    return ex.Comparison(op, ex.Column((column,)), ex.Literal(value))


def test_range_filters_translate_to_monotonic_partitions() -> None:
    found = partition_filter(
        parse_predicate("ts >= TIMESTAMP '2020-01-02 10:00:00' AND ts < '2020-03-04'"),
        EVENTS,
        ["d", "y", "m", "ym"],
        FULL,
    )
    assert found is not None
    assert set(ex.conjuncts(found)) == {
        _cmp(">=", "d", dt.date(2020, 1, 2)),
        _cmp(">=", "y", 2020),
        _cmp(">=", "ym", "2020-01"),
        _cmp("<=", "d", dt.date(2020, 3, 4)),
        _cmp("<=", "y", 2020),
        _cmp("<=", "ym", "2020-03"),
    }  # month is not monotonic: no range on m


def test_equality_in_and_null_filters() -> None:
    found = partition_filter(
        parse_predicate("TIMESTAMP '2021-06-07 08:09:10' = ts"), EVENTS, ["m", "h"], FULL
    )
    assert found == ex.And(_cmp("=", "m", 6), _cmp("=", "h", 8))
    found = partition_filter(parse_predicate("s = 'abcdef'"), EVENTS, ["pre"], FULL)
    assert found == _cmp("=", "pre", "ab")
    found = partition_filter(parse_predicate("s IN ('xyz', 'xyw', NULL)"), EVENTS, ["pre"], FULL)
    assert found == ex.In(ex.Column(("pre",)), ("xy",))
    found = partition_filter(parse_predicate("ts IS NULL"), EVENTS, ["d"], FULL)
    assert found == ex.IsNull(ex.Column(("d",)))


def test_session_time_zone_places_the_date() -> None:
    sql = "ts >= TIMESTAMP '2020-01-02 03:00:00'"
    utc = partition_filter(parse_predicate(sql), EVENTS, ["d"], FULL, "UTC")
    assert utc == _cmp(">=", "d", dt.date(2020, 1, 2))
    # a zoned literal: 03:00 UTC is still January 1st in Los Angeles
    zoned = "ts >= TIMESTAMP '2020-01-02 03:00:00+00:00'"
    la = partition_filter(parse_predicate(zoned), EVENTS, ["d"], FULL, "America/Los_Angeles")
    assert la == _cmp(">=", "d", dt.date(2020, 1, 1))


@pytest.mark.parametrize(
    "sql",
    [
        "ts != TIMESTAMP '2020-01-02 00:00:00'",
        "NOT (ts < TIMESTAMP '2020-01-02 00:00:00')",
        "ts > TIMESTAMP '2020-01-02 00:00:00' OR v = 1",  # one side has nothing to derive
        "v = 1",
        "abs(hour(ts)) = 1",
    ],
)
def test_nothing_derived(sql: str) -> None:
    assert _derived(sql) is None


def test_or_derives_when_both_sides_do() -> None:
    found = partition_filter(
        parse_predicate("ts < '2020-01-01' OR ts > '2021-01-01'"), EVENTS, ["y"], FULL
    )
    assert found == ex.Or(_cmp("<=", "y", 2020), _cmp(">=", "y", 2021))


# --- soundness: every row a filter keeps lives in a partition the derived filter keeps

_KINDS = {
    "d": ("date", "CAST(ts AS DATE)", lambda t: t.date().isoformat()),
    "y": ("integer", "year(ts)", lambda t: str(t.year)),
    "m": ("integer", "month(ts)", lambda t: str(t.month)),
    "dd": ("integer", "dayofmonth(ts)", lambda t: str(t.day)),
    "h": ("integer", "hour(ts)", lambda t: str(t.hour)),
    "ym": ("string", "date_format(ts, 'yyyy-MM')", lambda t: t.strftime("%Y-%m")),
    "ymdh": ("string", "date_format(ts, 'yyyy-MM-dd-HH')", lambda t: t.strftime("%Y-%m-%d-%H")),
}
_moments = st.datetimes(min_value=dt.datetime(1999, 12, 1), max_value=dt.datetime(2001, 2, 1)).map(
    lambda t: t.replace(microsecond=0, tzinfo=dt.UTC)
)


_offsets = st.integers(min_value=-50 * 3600, max_value=50 * 3600)  # seconds around the literal


@settings(max_examples=300, deadline=None)
@given(
    offsets=st.lists(_offsets, min_size=1, max_size=8),
    literal=_moments,
    op=st.sampled_from(["<", "<=", "=", ">", ">="]),
    zone=st.sampled_from(["UTC", "America/Los_Angeles", "Asia/Kolkata"]),
    column=st.sampled_from(sorted(_KINDS)),
)
def test_derived_filters_keep_every_matching_row(
    offsets: list[int], literal: dt.datetime, op: str, zone: str, column: str
) -> None:
    rows = [literal + dt.timedelta(seconds=s) for s in offsets]
    typ, expr, value = _KINDS[column]
    schema = _schema(("ts", "timestamp", None), (column, typ, expr))
    sql = f"ts {op} TIMESTAMP '{literal.isoformat(sep=' ')}'"
    derived = partition_filter(parse_predicate(sql), schema, [column], FULL, zone)
    if derived is None:
        return
    local = [t.astimezone(ZoneInfo(zone)) for t in rows]
    table = pa.table(
        {
            "partitionValues": pa.array(
                [[(column, value(t))] for t in local], pa.map_(pa.string(), pa.string())
            )
        }
    )
    kept = partition_filter_mask(derived, table, to_arrow_schema(schema), [column], time_zone=zone)
    compare = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        "=": lambda a, b: a == b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }[op]
    for t, keep in zip(rows, kept.to_pylist(), strict=True):
        if compare(t, literal):
            assert keep, (sql, zone, t, derived)


def test_columns_a_generated_column_reads_cannot_be_altered(tmp_path: Path) -> None:
    schema = _schema(
        ("ts", "timestamp", None), ("v", "integer", None), ("d", "date", "CAST(ts AS DATE)")
    )
    log = DeltaLog(str(tmp_path / "t"))
    conf = {"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true"}
    create_table(log, schema_to_string(schema), [], conf, protocol=protocol_for(schema, conf))
    for change in (
        lambda: rename_column(log, ["ts"], "when"),
        lambda: drop_columns(log, [["ts"]]),
    ):
        with pytest.raises(DeltaAnalysisException) as caught:
            change()
        assert str(caught.value).startswith(
            "[DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE] Cannot alter column ts because "
            "this column is referenced by the following generated column(s): d (CAST(ts AS DATE))"
        )
    assert log.snapshot().version == 0
    rename_column(log, ["v"], "w")  # a column no expression reads
    drop_columns(log, [["d"]])  # the generated column itself
    assert [f.name for f in log.snapshot().schema.fields] == ["ts", "w"]


def test_a_source_column_keeps_its_type(tmp_path: Path) -> None:
    schema = _schema(("v", "integer", None), ("w", "integer", "v + 1"))
    log = DeltaLog(str(tmp_path / "t"))
    conf = {"delta.enableTypeWidening": "true"}
    create_table(log, schema_to_string(schema), [], conf, protocol=protocol_for(schema, conf))
    with pytest.raises(DeltaAnalysisException, match="DELTA_GENERATED_COLUMNS_DATA_TYPE_MISMATCH"):
        change_columns(log, [ColumnChange(("v",), data_type=PrimitiveType("long"))])
    assert log.snapshot().version == 0


def test_schema_evolution_keeps_generated_types() -> None:
    old = _schema(("v", "integer", None), ("w", "integer", "v + 1"), ("x", "integer", None))
    wider_x = _schema(("v", "integer", None), ("w", "integer", "v + 1"), ("x", "long", None))
    check_type_changes(old, wider_x)  # nobody reads x
    for changed in (
        _schema(("v", "long", None), ("w", "integer", "v + 1"), ("x", "integer", None)),
        _schema(("v", "integer", None), ("w", "long", "v + 1"), ("x", "integer", None)),
    ):
        with pytest.raises(GeneratedColumnError, match="cannot be converted") as caught:
            check_type_changes(old, changed)
        assert caught.value.condition == "DELTA_GENERATED_COLUMN_UPDATE_TYPE_MISMATCH"
