"""Partition values: serialization, scalar and vectorised parsing, Hive paths."""

from __future__ import annotations

import datetime as dt
import json
import math
import string
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_paths import TESTDATA
from delta_pyspark.core.protocol.partition_values import (
    HIVE_DEFAULT_PARTITION,
    escape_path_name,
    hive_partition_path,
    parse_hive_partition_path,
    parse_partition_value,
    partition_column_to_arrow,
    serialize_partition_value,
    unescape_path_name,
)
from delta_pyspark.core.protocol.schema import (
    BINARY,
    BOOLEAN,
    BYTE,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONG,
    SHORT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    ArrayType,
    DataType,
    DecimalType,
    parse_schema_string,
)
from delta_pyspark.core.protocol.schema_arrow import to_arrow_type
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
)

UTC = dt.UTC


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN and -0.0 differs from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return (type(a) is type(b) and a == b) or (a is None and b is None)


# ------------------------------------------------------------------ strategies

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=30
) | st.sampled_from(["a b/c=d%", "x=1/y=2", "%2F", "__HIVE_DEFAULT_PARTITION__", " ", "é中🙂"])
_timestamps = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.just(UTC)
)


def values_for(dtype: DataType) -> st.SearchStrategy[Any]:
    """Python values of one Delta type, edge cases included."""
    if isinstance(dtype, DecimalType):
        whole, frac = "9" * (dtype.precision - dtype.scale), "9" * dtype.scale
        limit = Decimal(f"{whole or '0'}.{frac}" if frac else whole)  # largest value that fits
        return st.decimals(
            min_value=limit.copy_negate(), max_value=limit, places=dtype.scale
        ) | st.just(limit)
    ints = {"byte": 7, "short": 15, "integer": 31, "long": 63}
    if dtype.name in ints:  # type: ignore[union-attr]
        bits = ints[dtype.name]  # type: ignore[union-attr]
        return st.integers(-(2**bits), 2**bits - 1)
    return {
        STRING: _text,
        BOOLEAN: st.booleans(),
        FLOAT: st.floats(width=32),
        DOUBLE: st.floats(),
        DATE: st.dates(),
        TIMESTAMP: _timestamps,
        TIMESTAMP_NTZ: st.datetimes(),
        BINARY: _text.map(lambda s: s.encode("utf-8")),
    }[dtype]


_types = st.sampled_from(
    [
        STRING,
        BOOLEAN,
        BYTE,
        SHORT,
        INTEGER,
        LONG,
        FLOAT,
        DOUBLE,
        DATE,
        TIMESTAMP,
        TIMESTAMP_NTZ,
        BINARY,
    ]
) | st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s)))
CASES = _types.flatmap(lambda t: st.tuples(values_for(t), st.just(t)))
NULLABLE_CASES = st.one_of(CASES, CASES.map(lambda c: (None, c[1])))


def expected_back(value: Any, dtype: DataType) -> Any:
    if value is None or value in ("", b""):
        return None  # an empty string is null for every type
    if dtype == FLOAT:
        return f32(value)
    return value


# -------------------------------------------------------------- scalar round trip


@settings(max_examples=500)
@given(NULLABLE_CASES)
def test_serialize_parse_round_trip(case: tuple[Any, DataType]) -> None:
    value, dtype = case
    text = serialize_partition_value(value, dtype)
    assert text is None or (isinstance(text, str) and text != "")
    assert same(parse_partition_value(text, dtype), expected_back(value, dtype))
    if text is not None:  # serialization is canonical: parse then serialize is stable
        assert serialize_partition_value(parse_partition_value(text, dtype), dtype) == text


@pytest.mark.parametrize(
    ("value", "dtype", "text"),
    [
        ("a b/c=d%", STRING, "a b/c=d%"),
        ("", STRING, None),
        (True, BOOLEAN, "true"),
        (-128, BYTE, "-128"),
        (2**63 - 1, LONG, "9223372036854775807"),
        (1.0, DOUBLE, "1.0"),
        (0.1, FLOAT, "0.1"),
        (1e7, DOUBLE, "1.0E7"),
        (1.5e-5, DOUBLE, "1.5E-5"),
        (123456.789, DOUBLE, "123456.789"),
        (0.001, DOUBLE, "0.001"),
        (float("nan"), DOUBLE, "NaN"),
        (float("-inf"), FLOAT, "-Infinity"),
        (Decimal("234"), DecimalType(12, 5), "234.00000"),
        (Decimal("0.00004"), DecimalType(12, 5), "0.00004"),
        (Decimal("-0.0"), DecimalType(3, 1), "0.0"),
        (Decimal("9" * 38), DecimalType(38, 0), "9" * 38),
        (Decimal("-0." + "9" * 38), DecimalType(38, 38), "-0." + "9" * 38),
        (dt.date(1970, 1, 1), DATE, "1970-01-01"),
        (dt.date(1, 1, 1), DATE, "0001-01-01"),
        (
            dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC),
            TIMESTAMP,
            "1970-01-01T00:00:00.123456Z",
        ),
        (
            dt.datetime(2020, 1, 1, 9, 0, tzinfo=dt.timezone(dt.timedelta(hours=9))),
            TIMESTAMP,
            "2020-01-01T00:00:00.000000Z",
        ),
        (dt.datetime(1970, 1, 1, 0, 0, 0, 123456), TIMESTAMP_NTZ, "1970-01-01 00:00:00.123456"),
        (dt.datetime(2020, 1, 1, 8, 9, 10, 1000), TIMESTAMP_NTZ, "2020-01-01 08:09:10.001"),
        (dt.datetime(2020, 1, 1), TIMESTAMP_NTZ, "2020-01-01 00:00:00"),
        (b"\x01\x02\x03", BINARY, "\u0001\u0002\u0003"),  # the spec's example
    ],
)
def test_known_serializations(value: Any, dtype: DataType, text: str | None) -> None:
    assert serialize_partition_value(value, dtype) == text


@pytest.mark.parametrize(
    ("text", "dtype", "value"),
    [
        # The spec's two timestamp forms; without an offset the value is UTC.
        ("1970-01-01 00:00:00", TIMESTAMP, dt.datetime(1970, 1, 1, tzinfo=UTC)),
        ("1970-01-01 00:00:00.123456", TIMESTAMP, dt.datetime(1970, 1, 1, 0, 0, 0, 123456, UTC)),
        ("1970-01-01T00:00:00.123456Z", TIMESTAMP, dt.datetime(1970, 1, 1, 0, 0, 0, 123456, UTC)),
        ("2020-01-01T08:00:00+01:00", TIMESTAMP, dt.datetime(2020, 1, 1, 7, tzinfo=UTC)),
        ("2020-01-01T08:00:00-0530", TIMESTAMP, dt.datetime(2020, 1, 1, 13, 30, tzinfo=UTC)),
        ("2020-01-01 08:09:10.123456789", TIMESTAMP_NTZ, dt.datetime(2020, 1, 1, 8, 9, 10, 123456)),
        ("TRUE", BOOLEAN, True),
        ("+12", INTEGER, 12),
        ("1.0E10", DOUBLE, 1e10),
        ("Infinity", DOUBLE, math.inf),
        # delta-rs writes inf/-inf; Spark's cast reads any case (and nan) too
        ("inf", DOUBLE, math.inf),
        ("-inf", FLOAT, -math.inf),
        ("-INFINITY", DOUBLE, -math.inf),
        ("nan", FLOAT, math.nan),
        ("1.5E+2", DecimalType(5, 1), Decimal("150.0")),
        ("", INTEGER, None),
        ("", STRING, None),
        (None, DATE, None),
    ],
)
def test_known_parses(text: str | None, dtype: DataType, value: Any) -> None:
    assert same(parse_partition_value(text, dtype), value)


@pytest.mark.parametrize(
    ("text", "dtype"),
    [
        ("abc", INTEGER),
        ("128", BYTE),
        ("1.5", LONG),
        (" 1", LONG),
        ("0x10", LONG),
        ("1_000", LONG),
        ("yes", BOOLEAN),
        ("1", BOOLEAN),
        ("infinit", DOUBLE),
        ("1.123", DecimalType(5, 2)),
        ("12345", DecimalType(5, 2)),
        ("2020-1-1", DATE),
        ("20200101", DATE),
        ("2020-02-30", DATE),
        ("2020-01-01", TIMESTAMP),
        ("2020-01-01 25:00:00", TIMESTAMP),
        ("2020-01-01T00:00:00Z", TIMESTAMP_NTZ),
    ],
)
def test_invalid_values_are_corrupt_log(text: str, dtype: DataType) -> None:
    with pytest.raises(CorruptLogError) as e:
        parse_partition_value(text, dtype)
    assert repr(text) in str(e.value)
    with pytest.raises(CorruptLogError) as e:
        partition_column_to_arrow(pa.array(["", text, None]), dtype)
    assert repr(text) in str(e.value)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (128, BYTE),
        (True, INTEGER),
        ("1", LONG),
        (1, BOOLEAN),
        (Decimal("1.234"), DecimalType(5, 2)),
        (Decimal("1000"), DecimalType(5, 2)),
        (Decimal("NaN"), DecimalType(5, 2)),
        (1.5, DecimalType(5, 2)),
        (dt.datetime(2020, 1, 1), TIMESTAMP),  # naive: which zone?
        (dt.datetime(2020, 1, 1, tzinfo=UTC), TIMESTAMP_NTZ),
        (dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), TIMESTAMP),
        (dt.datetime(2020, 1, 1), DATE),
        (b"\xff\xfe", BINARY),  # not UTF-8: the log could not hold it faithfully
        (5, STRING),
    ],
)
def test_serialize_rejects_values_of_the_wrong_kind(value: Any, dtype: DataType) -> None:
    with pytest.raises(DeltaIllegalArgumentException):
        serialize_partition_value(value, dtype)


@pytest.mark.parametrize("dtype", [VARIANT, ArrayType(LONG)])
def test_non_partitionable_types(dtype: DataType) -> None:
    with pytest.raises(DeltaAnalysisException):
        serialize_partition_value(None, dtype)
    with pytest.raises(DeltaAnalysisException):
        parse_partition_value("x", dtype)


# ------------------------------------------------------------------- vectorised


def _scalar(text: str | None, dtype: DataType) -> Any:
    try:
        return parse_partition_value(text, dtype)
    except CorruptLogError:
        return CorruptLogError


def _vector(texts: list[str | None], dtype: DataType) -> Any:
    try:
        return partition_column_to_arrow(pa.array(texts, pa.string()), dtype).to_pylist()
    except CorruptLogError:
        return CorruptLogError


@settings(max_examples=200)
@given(st.data())
def test_vectorised_equals_scalar_on_serialized_values(data: st.DataObject) -> None:
    dtype = data.draw(_types)
    values = data.draw(st.lists(values_for(dtype) | st.none(), max_size=20))
    texts = [serialize_partition_value(v, dtype) for v in values] + [""]
    column = partition_column_to_arrow(pa.array(texts, pa.string()), dtype)
    assert column.type == to_arrow_type(dtype)
    got = column.to_pylist()
    for text, vector in zip(texts, got, strict=True):
        assert same(vector, parse_partition_value(text, dtype)), text


_FUZZ_TYPES = [BOOLEAN, BYTE, INTEGER, LONG, FLOAT, DOUBLE, DecimalType(10, 3), DecimalType(38, 0),
               DATE, TIMESTAMP, TIMESTAMP_NTZ, STRING, BINARY]  # fmt: skip
_fuzz_text = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="0123456789+-.eE", max_size=12),
    st.from_regex(
        r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?)?"
        r"(Z|[+-]0[0-9]:?[0-5][0-9])?\Z"
    ),
    st.sampled_from(["NaN", "-Infinity", "true", "False", "tRuE", "1e400", "-0", "00"]),
)


@pytest.mark.long  # slow: CI's second step
@settings(max_examples=500)
@given(st.sampled_from(_FUZZ_TYPES), _fuzz_text)
def test_vectorised_equals_scalar_on_any_text(dtype: DataType, text: str) -> None:
    scalar = _scalar(text, dtype)
    vector = _vector([text], dtype)
    if scalar is CorruptLogError or vector is CorruptLogError:
        assert scalar is vector
    else:
        assert same(vector[0], scalar)


# pyarrow's string->decimal128 cast indexes 39 powers of ten by the parsed scale unchecked:
# "0e-99999999" segfaulted the test process, "1e-39" read garbage; 39+ digits wrapped.
@pytest.mark.parametrize(
    ("text", "dtype"),
    [
        ("0e-99999999", DecimalType(38, 0)),
        ("0e-99999999", DecimalType(10, 3)),
        ("1e-999999999", DecimalType(10, 3)),
        ("1e-39", DecimalType(38, 0)),
        ("1e-1000", DecimalType(10, 3)),
        (str(2**128 + 1), DecimalType(38, 0)),
        ("1.5e-2", DecimalType(10, 3)),
    ],
)
def test_vectorised_decimal_spellings_arrow_misreads(text: str, dtype: DataType) -> None:
    scalar = _scalar(text, dtype)
    vector = _vector([text, "1"], dtype)
    if scalar is CorruptLogError:
        assert vector is CorruptLogError
    else:
        assert vector is not CorruptLogError and same(vector[0], scalar)
        assert same(vector[1], _scalar("1", dtype))


def test_vectorised_input_shapes() -> None:
    expect = [1, None, None, 3]
    texts = ["1", None, "", "3"]
    assert partition_column_to_arrow(pa.array(texts), LONG).to_pylist() == expect
    assert partition_column_to_arrow(pa.array(texts, pa.large_string()), LONG).to_pylist() == expect
    dictionary = pa.array(texts).dictionary_encode()
    assert partition_column_to_arrow(dictionary, LONG).to_pylist() == expect
    chunked = pa.chunked_array([["1", None], ["", "3"]])
    out = partition_column_to_arrow(chunked, LONG)
    assert out.type == pa.int64() and out.to_pylist() == expect
    assert partition_column_to_arrow(pa.nulls(3), DATE).to_pylist() == [None] * 3
    assert partition_column_to_arrow(pa.array(["a", ""]), STRING).to_pylist() == ["a", None]
    assert partition_column_to_arrow(pa.array(["ab"]), BINARY).to_pylist() == [b"ab"]


def test_vectorised_at_scale() -> None:
    n = 200_000
    texts = pa.array([f"2024-01-{1 + i % 28:02d} 10:00:{i % 60:02d}.5" for i in range(n)])
    out = partition_column_to_arrow(texts, TIMESTAMP)
    assert len(out) == n and out.null_count == 0
    assert out[n - 1].as_py() == parse_partition_value(texts[n - 1].as_py(), TIMESTAMP)


# ------------------------------------------------------------ real partition values


def _real_partition_values() -> list[tuple[str, str, str, DataType]]:
    """(table, column, value, type) for every non-null partition value in the logs."""
    out = set()
    for log_dir in sorted(TESTDATA.glob("**/_delta_log")):
        types: dict[str, DataType] = {}
        for log in sorted(log_dir.glob("*.json")):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    action = json.loads(line)
                except ValueError:
                    continue
                meta = action.get("metaData")
                if meta and meta.get("schemaString") and "geometry" not in meta["schemaString"]:
                    schema = parse_schema_string(meta["schemaString"])
                    for f in schema:
                        key = f.metadata.get("delta.columnMapping.physicalName", f.name)
                        types[key] = f.type
                for kind in ("add", "remove"):
                    values = (action.get(kind) or {}).get("partitionValues") or {}
                    for column, value in values.items():
                        if value is not None and column in types:
                            table = str(log_dir.parent.relative_to(TESTDATA))
                            out.add((table, column, value, types[column]))
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


REAL_VALUES = _real_partition_values()


def test_found_real_partition_values() -> None:
    kinds = {getattr(t, "name", "decimal") for *_, t in REAL_VALUES}
    assert {"string", "integer", "long", "double", "date", "timestamp", "timestamp_ntz"} <= kinds


@pytest.mark.parametrize(("table", "column", "text", "dtype"), REAL_VALUES)
def test_real_partition_values(table: str, column: str, text: str, dtype: DataType) -> None:
    value = parse_partition_value(text, dtype)
    vector = partition_column_to_arrow(pa.array([text]), dtype).to_pylist()[0]
    assert same(vector, value) or value == vector
    if value is None:
        return
    again = serialize_partition_value(value, dtype)
    if dtype == TIMESTAMP:  # we write the spec's recommended ISO-8601 UTC form
        assert parse_partition_value(again, dtype) == value
    else:  # everything else we write exactly as delta-spark and delta-rs did
        assert again == text


@pytest.mark.parametrize(
    "table", ["golden/kernel-timestamp-timestamp_micros", "golden/data-reader-timestamp_ntz"]
)
def test_partition_values_match_reference_reader(table: str) -> None:
    """The reference reader's results (``expected/``) against our parse of the log."""
    root = TESTDATA / table
    expected = pa.concat_tables(
        [pq.read_table(p) for p in sorted((root / "expected").glob("*.parquet"))]
    )
    column = "part" if "micros" in table else "tsNtzPartition"
    dtype = TIMESTAMP if "micros" in table else TIMESTAMP_NTZ
    by_id = dict(zip(expected["id"].to_pylist(), expected[column].to_pylist(), strict=True))
    checked = 0
    lines = [
        line for log in sorted((root / "delta/_delta_log").glob("*.json"))
        for line in log.read_text().splitlines()
    ]  # fmt: skip
    for line in lines:
        add = json.loads(line).get("add")
        if not add:
            continue
        files = list((root / "delta").glob(f"*/{Path(add['path']).name}"))
        ids = pq.read_table(files[0], columns=["id"])["id"].to_pylist()
        value = parse_partition_value(add["partitionValues"][column], dtype)
        for i in ids:
            assert value == by_id[i]
            checked += 1
    assert checked == len(by_id)


# ----------------------------------------------------------------- Hive paths


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a b/c=d%", "a b%2Fc%3Dd%25"),
        ("2020-01-01 08:09:10.001", "2020-01-01 08%3A09%3A10.001"),
        ("\"#'*?\\{[]^", "%22%23%27%2A%3F%5C%7B%5B%5D%5E"),
        ("\x01\n\x1f\x7f", "%01%0A%1F%7F"),
        ("é中🙂 <>|}~!@$&()+,;", "é中🙂 <>|}~!@$&()+,;"),
    ],
)
def test_escape_path_name_like_spark(raw: str, escaped: str) -> None:
    assert escape_path_name(raw) == escaped
    assert unescape_path_name(escaped) == raw


def test_unescape_leaves_malformed_escapes() -> None:
    assert unescape_path_name("100%") == "100%"
    assert unescape_path_name("%zz%4") == "%zz%4"
    assert unescape_path_name("B%20B") == "B B"  # old writers escaped spaces too


def test_hive_partition_path() -> None:
    assert hive_partition_path({}, []) == ""
    assert (
        hive_partition_path({"a": "1", "b": None, "c=d": "", "e": "x/y"}, ["a", "b", "c=d", "e"])
        == "a=1/b=__HIVE_DEFAULT_PARTITION__/c%3Dd=__HIVE_DEFAULT_PARTITION__/e=x%2Fy/"
    )
    assert parse_hive_partition_path("a=1/b=__HIVE_DEFAULT_PARTITION__/part-0.parquet") == {
        "a": "1",
        "b": None,
    }
    assert parse_hive_partition_path("8v/part-00001.parquet") == {}


@given(st.dictionaries(_text.filter(bool), st.none() | _text, min_size=1, max_size=4))
def test_hive_path_round_trip(values: dict[str, str | None]) -> None:
    columns = list(values)
    path = hive_partition_path(values, columns)
    assert path.count("/") == len(columns)
    # Hive cannot tell a null from the literal string naming the default partition.
    expected = {
        k: None if v in (None, "", HIVE_DEFAULT_PARTITION) else v for k, v in values.items()
    }
    assert parse_hive_partition_path(path + "part-00000-x.c000.snappy.parquet") == expected


@pytest.mark.parametrize(
    "table",
    [
        "golden/kernel-timestamp-timestamp_micros/delta",
        "golden/data-reader-timestamp_ntz/delta",
        "golden/basic-decimal-table/delta",
        "kernel/basic_partitioned",
        "delta-rs/delta-0.8.0-partitioned",
    ],
)
def test_hive_paths_match_real_directories(table: str) -> None:
    root = TESTDATA / table
    from urllib.parse import unquote

    for log in sorted((root / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                columns = action["metaData"]["partitionColumns"]
            add = action.get("add")
            if add:
                directory = unquote(add["path"]).rsplit("/", 1)[0] + "/"
                assert hive_partition_path(add["partitionValues"], columns) == directory
                assert (root / directory).is_dir()
                assert parse_hive_partition_path(directory) == {
                    c: add["partitionValues"][c] for c in columns
                }


def test_old_writer_escapes_parse() -> None:
    root = TESTDATA / "delta-rs/delta-0.8.0-special-partition"
    found = {parse_hive_partition_path(p.name)["x"] for p in root.iterdir() if "=" in p.name}
    assert found == {"A/A", "B B"}


def test_characters_spark_leaves_alone() -> None:
    untouched = "".join(c for c in string.printable if c not in "\"#%'*/:=?\\{[]^\n\r\t\x0b\x0c")
    assert escape_path_name(untouched) == untouched
