"""Per-file stats: layout, parsing what other writers wrote, and writing them from footers."""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_schema_helper import read_log

from delta_pyspark.core.stats.collection import (
    collect_parquet_stats,
    truncate_max_string,
    truncate_min_string,
)
from delta_pyspark.core.stats.layout import split_column_name, stats_leaves, stats_schema
from delta_pyspark.core.stats.parsing import parse_stats, stats_from_parsed

UTC = dt.UTC

NESTED = pa.schema(
    [
        ("a", pa.int32()),
        ("s", pa.struct([("x", pa.string()), ("t", pa.struct([("y", pa.float64())]))])),
        ("arr", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("flag", pa.bool_()),
        ("bin", pa.binary()),
        ("ts", pa.timestamp("ns", tz="UTC")),
        ("p", pa.string()),
    ]
)


def _paths(leaves: list[tuple[tuple[str, ...], pa.DataType]]) -> list[str]:
    return [".".join(p) for p, _ in leaves]


# -- which columns ------------------------------------------------------------------------------


def test_split_column_name() -> None:
    assert split_column_name("a") == ("a",)
    assert split_column_name("a.b") == ("a", "b")
    assert split_column_name("`a.b`.c") == ("a.b", "c")
    assert split_column_name("`x``y`") == ("x`y",)


def test_num_indexed_cols_counts_leaves_in_order() -> None:
    assert _paths(stats_leaves(NESTED, 3)) == ["a", "s.x", "s.t.y"]
    assert _paths(stats_leaves(NESTED, 5)) == ["a", "s.x", "s.t.y", "arr", "m"]
    assert _paths(stats_leaves(NESTED, 0)) == []
    everything = ["a", "s.x", "s.t.y", "arr", "m", "flag", "bin", "ts", "p"]
    assert _paths(stats_leaves(NESTED, -1)) == everything
    # partition columns are not data columns: they neither get stats nor count
    assert _paths(stats_leaves(NESTED, -1, partition_columns=["P"])) == everything[:-1]


def test_stats_columns_win_and_match_case_insensitively() -> None:
    leaves = stats_leaves(NESTED, 1, stats_columns=["S.t", "flag", "nope"])
    assert _paths(leaves) == ["s.t.y", "flag"]
    assert _paths(stats_leaves(NESTED, stats_columns=["s"])) == ["s.x", "s.t.y"]
    assert stats_leaves(NESTED, stats_columns=[]) == []


def test_stats_schema_layout() -> None:
    schema = stats_schema(NESTED, -1)
    assert schema.names == ["numRecords", "minValues", "maxValues", "nullCount", "tightBounds"]
    assert schema.field("minValues").type == pa.struct(
        [
            ("a", pa.int32()),
            ("s", pa.struct([("x", pa.string()), ("t", pa.struct([("y", pa.float64())]))])),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("p", pa.string()),
        ]
    )
    null_count = schema.field("nullCount").type
    assert [f.name for f in null_count] == ["a", "s", "arr", "m", "flag", "bin", "ts", "p"]
    assert null_count.field("s").type == pa.struct(
        [("x", pa.int64()), ("t", pa.struct([("y", pa.int64())]))]
    )


# -- parsing ------------------------------------------------------------------------------------


def test_parse_golden_all_types_with_session_offset(testdata: Path) -> None:
    table = testdata / "golden/data-skipping-basic-stats-all-types/delta"
    schema, stats = read_log(table)
    (row,) = parse_stats(pa.array(list(stats.values())), schema, adjust_bounds=False).to_pylist()
    assert row["numRecords"] == 1
    low = row["minValues"]
    assert low["as_int"] == 0 and low["as_byte"] == 0 and low["as_float"] == 0.0
    assert low["as_string"] == "0" and low["as_date"] == dt.date(2000, 1, 1)
    assert low["as_big_decimal"] == Decimal(0)
    # written as 2000-01-01T00:00:00.000-08:00 (the writer's session zone)
    assert low["as_timestamp"] == dt.datetime(2000, 1, 1, 8, tzinfo=UTC)
    assert set(row["nullCount"].values()) == {0}
    adjusted = parse_stats(pa.array(list(stats.values())), schema).to_pylist()[0]
    # an offset may have lost its seconds: widen by a minute, plus 1 ms for max truncation
    assert adjusted["minValues"]["as_timestamp"] == dt.datetime(2000, 1, 1, 7, 59, tzinfo=UTC)
    assert adjusted["maxValues"]["as_timestamp"] == dt.datetime(
        2000, 1, 1, 8, 1, 0, 1000, tzinfo=UTC
    )


def test_parse_golden_column_mapping_uses_physical_names(testdata: Path) -> None:
    table = testdata / "golden/data-skipping-basic-stats-all-types-columnmapping-id/delta"
    schema, stats = read_log(table)
    (row,) = parse_stats(pa.array(list(stats.values())), schema).to_pylist()
    assert all(name.startswith("col-") for name in row["minValues"])
    assert row["minValues"][schema.field(6).name] == "0"  # as_string


def test_parse_kernel_all_types(testdata: Path) -> None:
    schema, stats = read_log(testdata / "kernel/stats-writing-all-types/delta")
    (text,) = [s for s in stats.values() if s]
    (row,) = parse_stats(pa.array([text]), schema, adjust_bounds=False).to_pylist()
    names = {f.name: f.name for f in schema}
    by_pos = [f.name for f in schema]
    low, high, nulls = row["minValues"], row["maxValues"], row["nullCount"]
    assert low[by_pos[0]] == 1 and high[by_pos[0]] == 5  # byte
    assert low[by_pos[4]] == pytest.approx(1.5) and high[by_pos[4]] == pytest.approx(3.14)
    assert high[by_pos[7]] == dt.datetime(2024, 12, 25, tzinfo=UTC)  # timestamp
    assert high[by_pos[8]] == dt.datetime(2024, 12, 25)  # timestamp_ntz
    assert high[by_pos[10]] == Decimal("999.99")
    nested = by_pos[15]
    assert list(low[nested].values()) == [10, "nested_a", pytest.approx(1.1)]
    assert list(nulls[nested].values()) == [1, 2, 1]
    assert nulls[by_pos[13]] == 1 and nulls[by_pos[14]] == 1  # array, map: nullCount only
    assert by_pos[11] not in low and names  # boolean: no min/max


def test_parse_other_writers(testdata: Path) -> None:
    schema, stats = read_log(testdata / "delta-rs/delta-stats-optional")
    rows = parse_stats(pa.array(list(stats.values())), schema).to_pylist()
    first = rows[0]
    assert first["minValues"]["decimal"] == Decimal("-5.67800")
    assert first["minValues"]["nested_struct"] == {
        "struct_element": {"nested_struct_element": "nested_struct_value"}
    }
    assert first["nullCount"]["struct_of_array_of_map"] == {"struct_element": 0}
    assert rows[1] is None  # that add has no stats
    schema, stats = read_log(testdata / "delta-rs/table_with_null_stats_in_notnull_struct")
    rows = parse_stats(pa.array(list(stats.values())), schema).to_pylist()
    assert sorted(r["maxValues"]["s"]["l"] for r in rows if r) == [10, 20]


def test_parse_truncated_timestamp_max_is_adjusted(testdata: Path) -> None:
    schema, stats = read_log(testdata / "kernel/timestamp-truncation-stats")
    rows = parse_stats(pa.array(list(stats.values())), schema).to_pylist()
    # the second file holds 00:00:04.0005 but its stats say max 00:00:04.000
    tops = sorted(r["maxValues"]["ts_col"] for r in rows)
    assert tops[1] == dt.datetime(1970, 1, 1, 0, 0, 4, 1000, tzinfo=UTC)
    assert tops[1] >= dt.datetime(1970, 1, 1, 0, 0, 4, 500, tzinfo=UTC)


def test_stats_parsed_matches_json(testdata: Path) -> None:
    table = testdata / "kernel/parsed-stats"
    schema, _ = read_log(table)
    adds = pq.read_table(table / "_delta_log/00000000000000000003.checkpoint.parquet")
    adds = adds.column("add").combine_chunks()
    adds = adds.filter(pa.compute.is_valid(adds))
    from_struct = stats_from_parsed(pa.compute.struct_field(adds, "stats_parsed"), schema)
    from_json = parse_stats(pa.compute.struct_field(adds, "stats"), schema)
    assert from_struct.to_pylist() == from_json.to_pylist()
    assert len(from_struct) == 4


def test_parse_tolerates_bad_rows() -> None:
    schema = pa.schema([("i", pa.int8()), ("f", pa.float64()), ("s", pa.string())])
    texts = [
        "null",  # first document null: pyarrow would crash the process on this
        None,
        "",
        "not json",
        "[1]",
        '{"numRecords": 5, "minValues": {"i": 1000, "s": "x"}}',  # i out of range for int8
        '{"numRecords": 2, "minValues": {"f": "NaN"}, "maxValues": {"f": NaN, "s": "z"}}',
        '{"numRecords": 3}{"numRecords": 4}',
        '{"numRecords": 1, "minValues": {"i": 7, "f": 1.5}}',
        '{"numRecords": "x"}',
    ]
    rows = parse_stats(pa.array(texts), schema).to_pylist()
    assert rows[:5] == [None] * 5
    assert rows[5]["numRecords"] == 5
    assert rows[5]["minValues"] == {"i": None, "f": None, "s": "x"}  # only the bad value is lost
    assert rows[6]["minValues"]["f"] is None and rows[6]["maxValues"]["f"] is None
    assert rows[6]["maxValues"]["s"] == "z"
    assert rows[7] is None
    assert rows[8]["minValues"] == {"i": 7, "f": 1.5, "s": None}
    assert rows[9]["numRecords"] is None


def test_parse_large_batch_with_a_few_bad_rows() -> None:
    schema = pa.schema([("x", pa.int64())])
    texts = [json.dumps({"numRecords": i, "minValues": {"x": i}}) for i in range(5000)]
    texts[17] = '{"numRecords": 1, "minValues": {"x": "oops"}}'
    texts[4000] = "{broken"
    rows = parse_stats(pa.array(texts), schema).to_pylist()
    assert rows[16]["minValues"]["x"] == 16 and rows[18]["minValues"]["x"] == 18
    assert rows[17] == {
        "numRecords": 1,
        "minValues": {"x": None},
        "maxValues": None,
        "nullCount": None,
        "tightBounds": None,
    }
    assert rows[4000] is None and rows[4999]["numRecords"] == 4999


def test_parse_restricted_columns_and_adjustments() -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("ntz", pa.timestamp("us"))])
    text = json.dumps(
        {
            "numRecords": 2,
            "minValues": {"a": 1, "s": "abc", "ntz": "2021-01-01T00:00:00.000"},
            "maxValues": {"a": 2, "s": "abd\ufffd", "ntz": "2021-01-01T00:00:00.123"},
        }
    )
    parsed = parse_stats(pa.array([text]), schema, columns=[("s",), ("ntz",)])
    assert parsed.type.field("minValues").type.names == ["s", "ntz"]
    row = parsed.to_pylist()[0]
    assert row["maxValues"]["s"] == "abd\U0010ffff"  # old tie-breaker made a safe bound
    assert row["maxValues"]["ntz"] == dt.datetime(2021, 1, 1, 0, 0, 0, 124000)
    assert row["minValues"]["ntz"] == dt.datetime(2021, 1, 1)


# -- writing ------------------------------------------------------------------------------------


def test_truncation() -> None:
    assert truncate_min_string("a" * 40) == "a" * 32
    assert truncate_max_string("a" * 32) == "a" * 32
    assert truncate_max_string("a" * 40) == "a" * 32 + "\x7f"
    assert truncate_max_string("a" * 32 + "é" * 3) == "a" * 32 + "\U0010ffff"
    assert truncate_max_string("a" * 32 + "\U0010ffff" * 2 + "b") == (
        "a" * 32 + "\U0010ffff" * 2 + "\x7f"
    )
    assert truncate_max_string("a" * 32 + "\U0010ffff" * 40) is None
    for value in ["a" * 40, "a" * 31 + "🌼" * 5, "z" * 32 + "\x7f\x7f"]:
        top = truncate_max_string(value)
        assert top is not None and top.encode() >= value.encode()


def _write(tmp_path: Path, table: pa.Table, **kwargs: object) -> pq.FileMetaData:
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, **kwargs)  # type: ignore[arg-type]
    return pq.read_metadata(path)


def test_collect_matches_golden_reference(testdata: Path) -> None:
    table = testdata / "golden/data-skipping-basic-stats-all-types/delta"
    schema, stats = read_log(table)
    (path, reference) = next(iter(stats.items()))
    mine = collect_parquet_stats(pq.read_metadata(table / path), schema)
    ours, theirs = parse_stats(pa.array([mine, reference]), schema, adjust_bounds=False).to_pylist()
    # Documented difference: the file stores the timestamp as INT96, whose footer has no
    # min/max; delta-spark computed them from the data.
    for part in ("minValues", "maxValues"):
        assert ours[part].pop("as_timestamp") is None
        theirs[part].pop("as_timestamp")
    assert ours == theirs
    assert mine.startswith('{"numRecords":1,"minValues":{"as_int":0,')


def test_collect_matches_kernel_reference(testdata: Path) -> None:
    table = testdata / "kernel/stats-writing-all-types/delta"
    schema, stats = read_log(table)
    (path,) = [p for p, s in stats.items() if s and json.loads(s)["numRecords"] > 0]
    mine = collect_parquet_stats(pq.read_metadata(table / path), schema)
    ours, theirs = parse_stats(pa.array([mine, stats[path]]), schema).to_pylist()
    ts, array, map_ = schema.field(7).name, schema.field(13).name, schema.field(14).name
    # Documented differences: INT96 timestamp has no footer min/max; array/map nullCount (1)
    # cannot be told apart from null elements in a footer, so it is omitted.
    for part in ("minValues", "maxValues"):
        assert ours[part].pop(ts) is None
        theirs[part].pop(ts)
    for name in (array, map_):
        assert ours["nullCount"].pop(name) is None
        theirs["nullCount"].pop(name)
    assert ours == theirs
    raw = json.loads(mine)
    assert raw["minValues"][schema.field(4).name] == 1.5  # float written as 1.5, not 1.50000
    assert raw["maxValues"][schema.field(4).name] == 3.14
    assert raw["maxValues"][schema.field(8).name] == "2024-12-25T00:00:00.000"  # ntz: no Z


def test_collect_matches_delta_rs_reference(testdata: Path) -> None:
    table = testdata / "delta-rs/delta-stats-optional"
    schema, stats = read_log(table)
    path = next(p for p, s in stats.items() if s)
    mine = collect_parquet_stats(pq.read_metadata(table / path), schema)
    ours, theirs = parse_stats(pa.array([mine, stats[path]]), schema).to_pylist()
    for part in ("minValues", "maxValues"):
        assert ours[part].pop("timestamp") is None  # INT96 again
        theirs[part].pop("timestamp")
    assert ours == theirs


def test_collect_from_pyarrow_file(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            ("i", pa.int32()),
            ("s", pa.string()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("ntz", pa.timestamp("ns")),
            ("d", pa.date32()),
            ("dec", pa.decimal128(10, 2)),
            ("f32", pa.float32()),
            ("n", pa.struct([("x", pa.int64()), ("b", pa.bool_())])),
            ("l", pa.list_(pa.int32())),
            ("l2", pa.list_(pa.int32())),
            ("allnull", pa.int64()),
        ]
    )
    data = pa.table(
        {
            "i": [3, None, -7, 10],
            "s": ["b" * 40, "a", None, "c"],
            "ts": [dt.datetime(2021, 1, 1, 0, 0, 0, 1500, tzinfo=UTC), None, None, None],
            "ntz": [dt.datetime(2021, 1, 1, 0, 0, 0, 999), None, None, None],
            "d": [dt.date(2020, 2, 29), None, None, dt.date(1999, 1, 1)],
            "dec": [Decimal("1.50"), Decimal("-2.25"), None, None],
            "f32": [0.1, 3.14, None, None],
            "n": [{"x": 1, "b": True}, None, {"x": None, "b": False}, {"x": 5, "b": None}],
            "l": [[1], [2, None], [3], [4]],
            "l2": [[1], [2], [3], [4]],
            "allnull": [None, None, None, None],
        },
        schema=schema,
    )
    md = _write(tmp_path, data, row_group_size=2)
    assert md.num_row_groups == 2
    doc = json.loads(collect_parquet_stats(md, schema.append(pa.field("missing", pa.int64()))))
    assert doc["numRecords"] == 4
    low, high, nulls = doc["minValues"], doc["maxValues"], doc["nullCount"]
    assert (low["i"], high["i"]) == (-7, 10)
    assert (low["s"], high["s"]) == ("a", "c")  # aggregated over both row groups
    assert low["ts"] == "2021-01-01T00:00:00.001Z"  # min rounds down to milliseconds
    assert high["ts"] == "2021-01-01T00:00:00.002Z"  # max rounds up
    assert (low["ntz"], high["ntz"]) == ("2021-01-01T00:00:00.000", "2021-01-01T00:00:00.001")
    assert (low["d"], high["d"]) == ("1999-01-01", "2020-02-29")
    assert (low["dec"], high["dec"]) == (-2.25, 1.5)
    assert low["f32"] == 0.1 and "f32" not in high  # pyarrow drops NaN from bounds: no max
    assert low["n"] == {"x": 1} and high["n"] == {"x": 5}
    assert nulls == {
        "i": 1, "s": 1, "ts": 3, "ntz": 3, "d": 2, "dec": 2, "f32": 2,
        "n": {"x": 2, "b": 2},
        "l2": 0,  # "l" has a null element: its leaf null count proves nothing
        "allnull": 4,
        "missing": 4,  # not in the file: read as nulls
    }  # fmt: skip
    assert "allnull" not in low and "missing" not in low
    text = collect_parquet_stats(md, schema, num_indexed_cols=2, tight_bounds=True)
    assert json.loads(text) == {
        "numRecords": 4,
        "minValues": {"i": -7, "s": "a"},
        "maxValues": {"i": 10, "s": "c"},
        "nullCount": {"i": 1, "s": 1},
        "tightBounds": True,
    }


def test_collect_string_truncation_and_partition_columns(tmp_path: Path) -> None:
    schema = pa.schema([("p", pa.int32()), ("s", pa.string())])
    data = pa.table({"s": ["x" * 50, "y" * 33 + "é"]})
    md = _write(tmp_path, data)
    doc = json.loads(collect_parquet_stats(md, schema, partition_columns=["p"]))
    assert doc["minValues"] == {"s": "x" * 32}
    assert doc["maxValues"] == {"s": "y" * 32 + "\x7f"}
    assert "p" not in doc["nullCount"]


def test_collect_without_rows(tmp_path: Path) -> None:
    schema = pa.schema([("a", pa.int64())])
    md = _write(tmp_path, pa.table({"a": pa.array([], pa.int64())}))
    assert json.loads(collect_parquet_stats(md, schema)) == {
        "numRecords": 0,
        "nullCount": {"a": 0},
    }


def test_collect_nan_and_infinity_are_not_bounds(tmp_path: Path) -> None:
    schema = pa.schema([("f", pa.float64())])
    md = _write(tmp_path, pa.table({"f": [float("-inf"), 1.0]}))
    doc = json.loads(collect_parquet_stats(md, schema))
    assert "minValues" not in doc and not any(math.isnan(v) for v in doc.get("maxValues", {}))


def test_line_breaks_inside_documents_cannot_crash_the_parser() -> None:
    # pyarrow segfaults when a parse block starts with a non-object such as "null"; a document
    # with a raw line break could put one there. Run in a subprocess so a crash is a failure.
    script = """
import random, pyarrow as pa
from delta_pyspark.core.stats import parsing as stats
stats._JSON_BLOCK_BYTES = 64  # many small blocks
random.seed(3)
bad = ['{"numRecords":1}\\nnull', '{"numRecords":1}\\r\\nnull', '\\nnull', '{"numRecords":\\n2}']
for trial in range(100):
    rows = ['{"numRecords":%d,"minValues":{"x":%d}}' % (i, i) for i in range(300)]
    for _ in range(3):
        rows[random.randrange(300)] = random.choice(bad)
    out = stats.parse_stats(pa.array(rows), pa.schema([("x", pa.int64())])).to_pylist()
    for i, r in enumerate(rows):
        if r.startswith('{"numRecords":%d,' % i):
            assert out[i]["minValues"]["x"] == i
        elif r == '{"numRecords":\\n2}':
            assert out[i]["numRecords"] == 2
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_variant_column_is_one_leaf_with_a_null_count(tmp_path: Path) -> None:
    """PROTOCOL.md: a variant gets nullCount only, as one number, never its struct's parts."""
    variant = pa.struct(
        [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), False)]
    )
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", variant)])
    assert stats_leaves(schema) == [(("id",), pa.int64()), (("v",), variant)]
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "v": pa.array(
                [{"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}, None, None], variant
            ),
        }
    )
    path = tmp_path / "v.parquet"
    pq.write_table(table, path)
    stats = json.loads(collect_parquet_stats(pq.read_metadata(path), schema))
    assert stats["nullCount"] == {"id": 0, "v": 2}
    assert "v" not in stats["minValues"]
