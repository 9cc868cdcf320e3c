"""Interoperability with delta-rs (the ``deltalake`` package), both ways, at every version.

Direction 1: tables written here (partitioned and not, nulls, every primitive type,
nested types, deletes, overwrites, schema evolution, checkpoints) read identically
with ``deltalake``. Direction 2: tables written by ``deltalake`` (append, overwrite,
delete, update, merge, schema evolution, checkpoints) read identically here.

"Identically" means: the same column names, the same Delta schema, the same (mapped)
read types, and the same multiset of rows, compared as normalised Python objects
(timestamps in UTC, NaN made comparable, map entries order-free). Where the rows are
known independently of both readers they are checked too, so a writer bug that both
readers agree on still fails. Expected rows are built with pyarrow, not Spark, to
keep Spark jobs (the cost of this file) to one write and one read per version.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from delta_pyspark.core.protocol.schema_arrow import from_arrow_schema, to_arrow_schema
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.commit import checkpoint_now
from delta_pyspark.spark.types import from_spark_schema, to_spark_type
from delta_pyspark.tables import DeltaTable

# --------------------------------------------------------------------- comparison


def _norm(value: Any) -> Any:
    """A comparable Python form of one value out of ``pa.Table.to_pylist``."""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else value
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_norm(v) for v in value)
    if isinstance(value, list):
        items = [_norm(v) for v in value]
        if items and all(isinstance(v, tuple) for v in items):  # map entries: order-free
            return sorted(items, key=repr)
        return items
    return value


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """The table's rows as a sorted multiset of normalised dicts."""
    return sorted((_norm(r) for r in table.to_pylist()), key=repr)


def _theirs(path: str, version: int) -> tuple[pa.Table, dict[str, Any]]:
    """delta-rs's read of ``version``: its rows and its Delta schema."""
    table = deltalake.DeltaTable(path, version=version)
    assert table.version() == version
    schema = json.loads(table.schema().to_json())
    try:
        return table.to_pyarrow_table(), schema
    except deltalake.exceptions.DeltaProtocolError:
        # deltalake's pyarrow reader refuses the deletionVectors reader feature;
        # its DataFusion engine reads such tables.
        query = deltalake.QueryBuilder().register("t", table).execute("SELECT * FROM t")
        return pa.table(query.read_all()), schema


def _ours(spark: Any, path: str, version: int) -> Any:
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def assert_same_at(spark: Any, path: str, version: int) -> list[dict[str, Any]]:
    """Both readers agree on ``version`` of ``path``; returns the rows."""
    theirs, their_schema = _theirs(path, version)
    df = _ours(spark, path, version)
    ours = df.toArrow()
    # names, Delta schema (with nullability and metadata), and mapped read types
    assert df.columns == theirs.column_names, f"v{version}: column names differ"
    assert DeltaLog(path).snapshot(version).schema.to_json() == their_schema, f"v{version}"
    their_types = to_spark_type(from_arrow_schema(theirs.schema)).simpleString()
    assert df.schema.simpleString() == their_types, f"v{version}: read types differ"
    got, want = _rows(ours), _rows(theirs)
    assert len(got) == len(want), f"v{version}: {len(got)} rows here, {len(want)} in delta-rs"
    for a, b in zip(got, want, strict=True):
        assert a == b, f"v{version}: rows differ"
    return got


def assert_every_version(spark: Any, path: str, expected: list[pa.Table | None]) -> None:
    """Versions 0..n agree between the readers and (where given) with ``expected``."""
    assert deltalake.DeltaTable(path).version() == len(expected) - 1
    assert DeltaLog(path).snapshot().version == len(expected) - 1
    for version, want in enumerate(expected):
        got = assert_same_at(spark, path, version)
        if want is not None:
            assert got == _rows(want), f"v{version}: rows differ from what was written"


def _check_filters(spark: Any, path: str, filters: list[tuple[str, Any]]) -> None:
    """Each ``(sql, dnf)`` pair selects the same rows here (``where``) and in delta-rs
    (``filters``, with which it prunes files by partition values and the files' stats),
    so the stats either side wrote mean the same to the other."""
    table = deltalake.DeltaTable(path)
    df = spark.read.format("delta").load(path)
    for sql, dnf in filters:
        theirs = table.to_pyarrow_table(filters=dnf)
        assert theirs.num_rows > 0, sql
        assert _rows(df.where(sql).toArrow()) == _rows(theirs), sql


# --------------------------------------------------------------------------- data

SCHEMA = (
    "id long, i8 byte, i16 short, i32 int, f32 float, f64 double, "
    "d10 decimal(10,2), d38 decimal(38,18), s string, bin binary, flag boolean, "
    "day date, ts timestamp, ntz timestamp_ntz, "
    "st struct<a:int,b:string,inner:struct<x:double,y:array<int>>>, "
    "arr array<string>, m map<string,int>, aos array<struct<k:string,v:long>>, "
    "p string, q int"
)
# v6 of the table written here adds a nested field and a top-level column
EVOLVED_SCHEMA = (
    SCHEMA.replace(
        "inner:struct<x:double,y:array<int>>>", "inner:struct<x:double,y:array<int>>,c:date>"
    )
    + ", extra string"
)
ST = 14  # position of the struct column
N_VALUE_COLUMNS = 17  # columns between id and the partition candidates p, q

PARTITION_VALUES = ["a b", "x/y=z%", "ü€ #?", "plain", None]
FLOAT_SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0, 1e-300]


def _dates(i: int) -> tuple[dt.date, dt.datetime, dt.datetime]:
    """date, timestamp and timestamp_ntz of row ``i``; rows 2 and 22 at the calendar's ends."""
    if i % 10 == 2:
        if i < 20:
            return (
                dt.date(1, 1, 1),
                dt.datetime(1000, 1, 1, 12, tzinfo=dt.UTC),
                dt.datetime(1, 1, 1),
            )
        end = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
        return end.date(), end.replace(tzinfo=dt.UTC), end
    return (
        dt.date(1900 + i * 7, (i % 12) + 1, (i % 28) + 1),
        dt.datetime(1969 + i, 12, 31, 23, 59, 59, 999999 - i, tzinfo=dt.UTC),
        dt.datetime(2021, 2, 3, 4, 5, i % 60, i),
    )


def make_row(i: int, nulls: bool = False) -> tuple:
    """Row ``i``: every primitive type, nested types, extremes, specials and nulls."""
    p = PARTITION_VALUES[i % len(PARTITION_VALUES)]
    q = None if i % 4 == 3 else i % 3
    if nulls:
        return (i, *([None] * N_VALUE_COLUMNS), p, q)
    return (
        i,
        [-128, 127, 0][i % 3] if i % 5 == 0 else i % 100,
        [-32768, 32767][i % 2] if i % 7 == 0 else -i,
        i * 1000 if i % 6 else -(2**31),
        float(i) + 0.5 if i % 4 else FLOAT_SPECIALS[i % 5],
        i / 3 if i % 3 else FLOAT_SPECIALS[i % 5],
        Decimal(f"{i}.25") if i % 5 else Decimal("-99999999.99"),
        Decimal(f"-{i}.123456789012345678")
        if i % 5
        else Decimal("99999999999999999999.999999999999999999"),
        ["", "ü€😀 \n\t'\"", f"s{i}", "a" * 300][i % 4],
        [b"", bytes([i % 256, 0, 255]), b"\x00"][i % 3],
        i % 2 == 0,
        *_dates(i),
        (i, None if i % 2 else f"s{i}", (i * 1.5, [i, None]) if i % 3 else None),
        ["x", None, ""] if i % 2 else [],
        {"k": i, "n": None} if i % 3 else ({} if i % 2 else None),
        [(f"k{i}", i), None, (None, None)] if i % 2 else None,
        p,
        q,
    )


def make_evolved_row(i: int) -> tuple:
    r = make_row(i)
    st = None if r[ST] is None else (*r[ST], dt.date(2024, 1, 1 + i % 28))
    return (*r[:ST], st, *r[ST + 1 :], f"e{i}")


def arrow_schema(spark: Any, ddl: str = SCHEMA) -> pa.Schema:
    return to_arrow_schema(from_spark_schema(spark.createDataFrame([], ddl).schema))


def to_arrow(schema: pa.Schema, rows: list[tuple]) -> pa.Table:
    """Python rows (structs as tuples, maps as dicts) as an Arrow table, without Spark."""

    def value(v: Any, t: pa.DataType) -> Any:
        if v is None:
            return None
        if pa.types.is_struct(t):
            return {t.field(k).name: value(x, t.field(k).type) for k, x in enumerate(v)}
        if pa.types.is_map(t):
            return [(k, value(x, t.item_type)) for k, x in v.items()]
        if pa.types.is_list(t):
            return [value(x, t.value_type) for x in v]
        return v

    return pa.table(
        {
            f.name: pa.array([value(r[k], f.type) for r in rows], f.type)
            for k, f in enumerate(schema)
        },
        schema=schema,
    )


def _write(df: Any, path: str, mode: str, parts: list[str], **options: str) -> None:
    writer = df.write.format("delta").mode(mode).partitionBy(*parts)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)


def _without(table: pa.Table, mask: Any) -> pa.Table:
    """``table`` minus the rows where ``mask`` is true (null counts as false, as in DELETE)."""
    return table.filter(pc.invert(pc.fill_null(mask, False)))


# ------------------------------------------------------------ written here -> delta-rs

LAYOUTS = {
    "string_and_int_partitions": ["p", "q"],
    "date_and_timestamp_partitions": ["day", "ts"],
    "unpartitioned": [],
}


@pytest.mark.long  # slow: CI's second step
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_tables_written_here_read_identically_in_delta_rs_at_every_version(
    spark: Any, tmp_path: Path, layout: str
) -> None:
    """Every layout: create, append nulls, overwrite. The main layout also: a plain
    append, a delete that rewrites files, a partition-only delete, and a schema-evolving
    append (a new column and a new nested field). (Spark writes are this file's cost.)"""
    path = str(tmp_path / layout)
    parts = LAYOUTS[layout]
    full = layout == "string_and_int_partitions"
    schema = arrow_schema(spark)
    expected: list[pa.Table | None] = []

    def append(ids: range, nulls: bool = False) -> None:
        rows = [make_row(i, nulls) for i in ids]
        _write(spark.createDataFrame(rows, SCHEMA), path, "append", parts)
        new = to_arrow(schema, rows)
        expected.append(pa.concat_tables([expected[-1], new]) if expected else new)

    append(range(0, 8))  # create
    if full:
        append(range(8, 12))
    append(range(12, 16), nulls=True)  # rows null but for id and the partition columns
    if full:
        DeltaTable.forPath(spark, path).delete("i32 > 5000 OR f32 IS NULL")  # rewrites files
        last = expected[-1]
        gone = pc.or_kleene(pc.greater(last["i32"], 5000), pc.is_null(last["f32"]))
        expected.append(_without(last, gone))
        DeltaTable.forPath(spark, path).delete("p = 'a b' OR q IS NULL")  # whole partitions
        last = expected[-1]
        expected.append(
            _without(last, pc.or_kleene(pc.equal(last["p"], "a b"), pc.is_null(last["q"])))
        )
    rows = [make_row(i) for i in range(20, 26)]
    _write(spark.createDataFrame(rows, SCHEMA), path, "overwrite", parts)
    expected.append(to_arrow(schema, rows))
    if full:
        evolved = [make_evolved_row(i) for i in range(26, 30)]
        df = spark.createDataFrame(evolved, EVOLVED_SCHEMA)
        _write(df, path, "append", parts, mergeSchema="true")
        evolved_schema = arrow_schema(spark, EVOLVED_SCHEMA)
        before = [
            (*r[:ST], None if r[ST] is None else (*r[ST], None), *r[ST + 1 :], None) for r in rows
        ]
        expected.append(to_arrow(evolved_schema, before + evolved))

    assert_every_version(spark, path, expected)
    if full:
        stamp = dt.datetime(1995, 12, 31, 23, 59, 59, 999973, tzinfo=dt.UTC)  # row 26's
        _check_filters(
            spark,
            path,
            [
                ("i32 >= 27000", [("i32", ">=", 27000)]),
                ("ts = '1995-12-31 23:59:59.999973'", [("ts", "=", pa.scalar(stamp))]),
                ("s = repeat('a', 300)", [("s", "=", "a" * 300)]),
            ],
        )


# ------------------------------------------------------------ written by delta-rs -> here

RS_LAYOUTS: dict[str, tuple[list[str] | None, dict[str, str]]] = {
    "string_partition": (["p"], {}),
    "unpartitioned_deletion_vectors_enabled": (None, {"delta.enableDeletionVectors": "true"}),
}


@pytest.mark.parametrize("layout", list(RS_LAYOUTS))
def test_tables_written_by_delta_rs_read_identically_here_at_every_version(
    spark: Any, tmp_path: Path, layout: str
) -> None:
    """Every layout: create, append nulls, delete, merge, overwrite. The main layout
    also: update, a partition-only delete and a schema-evolving append.

    delta-rs 1.6 writes no deletion vectors (its DELETE rewrites files), but a table
    with the deletionVectors feature enabled is still a reader-v3 table to read.
    Partition columns of the other types: ``test_partition_columns_of_every_primitive_type``.
    """
    path = str(tmp_path / layout)
    parts, configuration = RS_LAYOUTS[layout]
    full = layout == "string_partition"
    schema = arrow_schema(spark)
    expected: list[pa.Table | None] = []

    first = to_arrow(schema, [make_row(i) for i in range(0, 8)])
    deltalake.write_deltalake(path, first, partition_by=parts, configuration=configuration)
    expected.append(first)
    nulls = to_arrow(schema, [make_row(i, nulls=True) for i in range(8, 12)])
    deltalake.write_deltalake(path, nulls, mode="append", partition_by=parts)
    expected.append(pa.concat_tables([first, nulls]))
    deltalake.DeltaTable(path).delete("i32 > 5000")
    expected.append(_without(expected[-1], pc.greater(expected[-1]["i32"], 5000)))
    if full:
        deltalake.DeltaTable(path).update(
            updates={"s": "'updated'", "f64": "f64 * 2"}, predicate="id < 4"
        )
        expected.append(None)
    source = to_arrow(schema, [make_row(i) for i in (2, 3, 40, 41)])
    (
        deltalake.DeltaTable(path)
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )  # two rows updated (back to their originals), two inserted
    merged_at = len(expected)
    expected.append(None)
    if full:
        deltalake.DeltaTable(path).delete("p IS NULL")  # whole partitions
        expected.append(None)
    replacement = to_arrow(schema, [make_row(i) for i in range(50, 56)])
    deltalake.write_deltalake(path, replacement, mode="overwrite", partition_by=parts)
    expected.append(replacement)
    if full:
        extra = to_arrow(schema, [make_row(i) for i in (60, 61)])
        extra = extra.append_column("extra", pa.array(["e1", None]))
        deltalake.write_deltalake(
            path, extra, mode="append", schema_mode="merge", partition_by=parts
        )
        expected.append(None)  # delta-rs moves partition columns last in the new schema

    assert_every_version(spark, path, expected)
    merged = {r["id"]: r for r in _rows(_ours(spark, path, merged_at).toArrow())}
    assert {2, 3, 40, 41} <= set(merged)
    assert merged[2]["s"] == make_row(2)[8]
    if full:
        assert merged[1]["s"] == "updated" and merged[1]["f64"] == 2 * make_row(1)[5]
        _check_filters(
            spark,
            path,
            [
                ("i32 >= 55000", [("i32", ">=", 55000)]),
                ("d38 < 0", [("d38", "<", Decimal(0))]),
            ],
        )


# ---------------------------------------------------------------------- checkpoints


def _drop_commits_up_to(path: str, version: int) -> None:
    """Move commits 0..version away, so readers must start from the checkpoint."""
    log = Path(path) / "_delta_log"
    aside = Path(path).parent / "old_commits"
    aside.mkdir()
    for v in range(version + 1):
        for suffix in (".json", ".crc"):
            file = log / f"{v:020d}{suffix}"
            if file.exists():
                shutil.move(str(file), str(aside))


@pytest.mark.long  # CI's second step, for the quick run's time
def test_checkpoint_written_here_reads_identically_in_delta_rs(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "cp")
    parts = ["p", "q"]
    rows = [make_row(i) for i in range(0, 6)] + [make_row(i, True) for i in range(6, 10)]
    _write(spark.createDataFrame(rows, SCHEMA), path, "append", parts)
    DeltaTable.forPath(spark, path).delete("id = 1 OR p = 'plain'")  # ids 1, 3 and 8
    log = DeltaLog(path)
    checkpoint_now(log.store, log.snapshot())  # adds, and the delete's removes
    assert (Path(path) / "_delta_log" / f"{1:020d}.checkpoint.parquet").exists()
    rows = [make_row(i) for i in range(10, 14)]
    _write(spark.createDataFrame(rows, SCHEMA), path, "append", parts)
    before = [_rows(_theirs(path, v)[0]) for v in (1, 2)]
    _drop_commits_up_to(path, 1)
    for v, want in zip((1, 2), before, strict=True):
        assert assert_same_at(spark, path, v) == want
    assert len(before[1]) == 10 - 3 + 4
    _check_filters(spark, path, [("i32 >= 12000", [("i32", ">=", 12000)])])


def test_checkpoint_written_by_delta_rs_reads_identically_here(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "rscp")
    schema = arrow_schema(spark)
    first = to_arrow(schema, [make_row(i) for i in range(0, 6)])
    deltalake.write_deltalake(path, first, partition_by=["p"])
    nulls = to_arrow(schema, [make_row(i, nulls=True) for i in range(6, 9)])
    deltalake.write_deltalake(path, nulls, mode="append")
    deltalake.DeltaTable(path).delete("id = 2")
    deltalake.DeltaTable(path).create_checkpoint()
    assert (Path(path) / "_delta_log" / f"{2:020d}.checkpoint.parquet").exists()
    more = to_arrow(schema, [make_row(i) for i in range(9, 11)])
    deltalake.write_deltalake(path, more, mode="append")
    before = [_rows(_theirs(path, v)[0]) for v in (2, 3)]
    _drop_commits_up_to(path, 2)
    for v, want in zip((2, 3), before, strict=True):
        assert assert_same_at(spark, path, v) == want
    everything = pa.concat_tables([first, nulls, more])
    assert before[1] == _rows(_without(everything, pc.equal(everything["id"], 2)))


# ------------------------------------------------------- partition columns of every type

PARTITION_TYPES = ["i8", "i16", "i32", "f32", "f64", "d10", "d38", "flag", "day", "ts", "ntz",
                   "bin", "p"]  # fmt: skip


def _partition_rows() -> list[tuple]:
    """Rows whose partition columns cover every primitive type, extremes and nulls.

    Decimals stay non-negative: delta-rs 1.6.6 spells a negative decimal partition
    value ``-1.25`` as ``-1.-25`` (when writing, and when reading ours, in the value it
    hands pyarrow), so neither direction can be compared on those. Binary values are
    valid UTF-8: Spark writes a binary partition value as a directory name, which
    cannot hold a NUL byte. The last row differs from the all-null one only by an
    empty binary, which Delta spells as null, like Spark's empty strings.
    """
    rows = []
    for i in range(8):
        r = list(make_row(i))
        r[6], r[7] = r[6].copy_abs(), r[7].copy_abs()
        r[8] = r[8][:20]
        r[9] = [b"\x01 /=%", f"b{i}".encode(), b"\x7f{}"][i % 3]
        rows.append(tuple(r))
    rows.append(make_row(8, nulls=True))
    rows.append((9, *make_row(8, nulls=True)[1:9], b"", *make_row(8, nulls=True)[10:]))
    return rows


@pytest.mark.parametrize("writer", ["here", "delta_rs"])
def test_partition_columns_of_every_primitive_type(spark: Any, tmp_path: Path, writer: str) -> None:
    path = str(tmp_path / writer)
    rows = _partition_rows()
    schema = arrow_schema(spark)
    expected = to_arrow(schema, rows)
    if writer == "here":
        # one task: Spark's writer used to fail on b"" and null (one directory) there
        df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
        _write(df, path, "append", PARTITION_TYPES)
        as_null = to_arrow(schema, [*rows[:-1], (*rows[-1][:9], None, *rows[-1][10:])])
        assert_every_version(spark, path, [as_null])
    else:
        deltalake.write_deltalake(path, expected, partition_by=PARTITION_TYPES)
        assert_every_version(spark, path, [None])
        # delta-rs 1.6.6 stores a binary partition value as escape text (b"\x01" as the
        # six characters "\u0001") and reads that text back; both readers agree on it.
        got = _ours(spark, path, 0).drop("bin").toArrow()
        assert _rows(got) == _rows(expected.drop_columns(["bin"]))


@pytest.mark.parametrize("writer", ["here", "delta_rs"])
def test_float_partition_specials(spark: Any, tmp_path: Path, writer: str) -> None:
    """A table partitioned by a double alone is in Hive layout, read by Spark's partition
    discovery, which parses Java's spellings only (Infinity, NaN): delta-rs writes inf.
    (No 1e-300: delta-rs spells it with 300 digits, too long for a directory name.)"""
    path = str(tmp_path / writer)
    values = [float("nan"), float("inf"), float("-inf"), -0.0, 0.1, None]
    table = pa.table(
        {"id": pa.array(range(len(values)), pa.int64()), "x": pa.array(values, pa.float64())}
    )
    if writer == "here":
        _write(spark.createDataFrame(table), path, "append", ["x"])
    else:
        deltalake.write_deltalake(path, table, partition_by=["x"])
    assert_every_version(spark, path, [table])


# -------------------------------------------------------------------- column mapping


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_table_written_here_reads_identically_in_delta_rs(
    spark: Any, tmp_path: Path, mode: str
) -> None:
    path = str(tmp_path / mode)
    rows = [make_row(i) for i in range(6)] + [make_row(6, nulls=True)]
    df = spark.createDataFrame(rows, SCHEMA)
    _write(df, path, "append", ["p", "q"], **{"delta.columnMapping.mode": mode})
    _write(df, path, "append", ["p", "q"])
    table = to_arrow(arrow_schema(spark), rows)
    assert_every_version(spark, path, [table, pa.concat_tables([table, table])])
