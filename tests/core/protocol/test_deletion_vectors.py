"""Deletion vectors, checked against tables written by delta-spark, delta-rs and the kernels.

The tables in tests/data give real descriptors, real DV files and (for the golden tables) the
rows the reference reader returned; ``_reference_bitmap_bytes`` is an independent model
of delta-spark's writer (RoaringFormatSpec + Java ``runOptimize`` + dense buckets) that
the real bytes confirm and the hypothesis tests compare against.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
import tempfile
import uuid
import zlib
from collections import defaultdict
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64, FrozenBitMap64

from data_paths import TESTDATA
from delta_pyspark.core.protocol.deletion_vectors import (
    MAX_ROW_INDEX,
    PORTABLE_MAGIC,
    DeletionVectorDescriptor,
    DeletionVectorWriter,
    deleted_row_indexes,
    deserialize_bitmap,
    inline_descriptor,
    read_deletion_vector,
    serialize_bitmap,
    z85_decode,
    z85_encode,
)
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaError,
    DeltaIllegalArgumentException,
    FileAlreadyExistsError,
)

DV_TABLES = [
    "golden/dv-with-columnmapping/delta",
    "golden/log-replay-dv-key-cases/delta",
    "kernel/table-with-dv-small",
    "kernel/with-short-dv",
    "kernel/cdf-table-with-dv",
    "kernel/cdf-table-with-cdc-and-dvs",
    "kernel/compacted-log-files-table",
    "delta-rs/table-with-dv-small",
    "delta-rs/table_with_deletion_logs",
    "delta-rs/cdf-table-with-cdc-and-dvs",
]
STORE = LocalLogStore()
COMMIT = re.compile(r"\d{20}\.json")


# --------------------------------------------------------------------------- helpers


def _log_actions(table: Path):
    """(log file name, action) for every action in commits, compactions and checkpoints."""
    for f in sorted(table.glob("_delta_log/*.json")):
        for line in f.read_text().splitlines():
            if line.strip():
                yield f.name, json.loads(line)
    for f in sorted(table.glob("_delta_log/*.parquet")):
        columns = pq.read_table(f).to_pydict()
        for kind in ("add", "remove"):
            for action in columns.get(kind, []):
                if action:
                    yield f.name, {kind: action}


def _real_descriptors() -> list:
    """One pytest param per distinct DV in the tables of tests/data."""
    params, seen = [], set()
    for name in DV_TABLES:
        table = TESTDATA / name
        for log_name, action in _log_actions(table):
            for kind in ("add", "remove"):
                dv = (action.get(kind) or {}).get("deletionVector")
                if not dv:
                    continue
                desc = DeletionVectorDescriptor.from_dict(dv)
                if (name, desc.unique_id) in seen:
                    continue
                seen.add((name, desc.unique_id))
                stats = json.loads(action[kind].get("stats") or "{}")
                case = (table, desc, stats.get("numRecords"))
                params.append(pytest.param(*case, id=f"{name}:{log_name}:{desc.unique_id}"))
    return params


def _frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def _reference_roaring32(values: list[int]) -> bytes:
    """32-bit portable RoaringBitmap as Java writes it after ``runOptimize``."""
    chunks: dict[int, list[int]] = defaultdict(list)
    for v in values:
        chunks[v >> 16].append(v & 0xFFFF)
    entries = []  # (key, cardinality, is_run, body)
    for key in sorted(chunks):
        lows = chunks[key]
        runs: list[list[int]] = []  # [start, length - 1]
        for v in lows:
            if runs and v == runs[-1][0] + runs[-1][1] + 1:
                runs[-1][1] += 1
            else:
                runs.append([v, 0])
        card = len(lows)
        if (2 * card if card <= 4096 else 8192) > 2 + 4 * len(runs):  # Java's runOptimize
            body = struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", *r) for r in runs)
            entries.append((key, card, True, body))
        elif card <= 4096:
            entries.append((key, card, False, struct.pack(f"<{card}H", *lows)))
        else:
            words = [0] * 1024
            for v in lows:
                words[v >> 6] |= 1 << (v & 63)
            entries.append((key, card, False, struct.pack("<1024Q", *words)))
    n, has_run = len(entries), any(e[2] for e in entries)
    if has_run:
        flags = bytearray((n + 7) // 8)
        for i, entry in enumerate(entries):
            flags[i >> 3] |= entry[2] << (i & 7)
        out = struct.pack("<I", 12347 | (n - 1) << 16) + bytes(flags)
    else:
        out = struct.pack("<II", 12346, n)
    out += b"".join(struct.pack("<HH", key, card - 1) for key, card, _, _ in entries)
    if not has_run or n >= 4:
        offset = len(out) + 4 * n
        for entry in entries:
            out += struct.pack("<I", offset)
            offset += len(entry[3])
    return out + b"".join(entry[3] for entry in entries)


def _reference_bitmap_bytes(rows) -> bytes:
    """delta-spark's RoaringBitmapArray, portable format: a bucket for every key 0..max."""
    buckets: dict[int, list[int]] = defaultdict(list)
    for r in sorted(set(rows)):
        buckets[r >> 32].append(r & 0xFFFFFFFF)
    n = max(buckets) + 1 if buckets else 0
    out = struct.pack("<IQ", PORTABLE_MAGIC, n)
    for key in range(n):
        out += struct.pack("<I", key) + _reference_roaring32(buckets.get(key, []))
    return out


# Row sets that exercise every container kind and several 32-bit buckets.
_row = st.one_of(
    st.integers(0, 70_000),
    st.integers(2**32 - 3, 2**32 + 70_000),
    st.integers(3 * 2**32, 3 * 2**32 + 10),
    st.integers(0, 40 * 2**32),  # Spark writes a bucket per high key up to the largest
)


@st.composite
def _row_sets(draw) -> set[int]:
    rows = set(draw(st.lists(_row, max_size=60)))
    for start, length in draw(st.lists(st.tuples(_row, st.integers(1, 70_000)), max_size=2)):
        rows.update(range(start, start + length))
    for high, density, seed in draw(
        st.lists(
            st.tuples(st.integers(0, 70_000), st.floats(0.05, 0.95), st.integers()), max_size=1
        )
    ):
        mask = np.random.default_rng(seed % 2**32).random(65536) < density
        rows.update((high << 16) + int(i) for i in np.flatnonzero(mask))
    return rows


# --------------------------------------------------------------------------- Z85


def test_z85_zeromq_vector() -> None:
    data = bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])  # ZeroMQ RFC 32 example
    assert z85_encode(data) == "HelloWorld"
    assert z85_decode("HelloWorld") == data


@given(st.binary(max_size=64))
def test_z85_round_trip_pads_like_spark(data: bytes) -> None:
    text = z85_encode(data)
    assert len(text) == 5 * -(-len(data) // 4)
    decoded = z85_decode(text)
    assert decoded[: len(data)] == data
    assert decoded[len(data) :] == b"\0" * (-len(data) % 4)


@given(st.uuids())
def test_z85_uuid_is_20_chars(u: uuid.UUID) -> None:
    text = z85_encode(u.bytes)
    assert len(text) == 20
    assert uuid.UUID(bytes=z85_decode(text)) == u


@given(st.binary(max_size=12), st.binary(min_size=1, max_size=3))
def test_z85_decodes_rust_crate_tail(body: bytes, tail: bytes) -> None:
    """delta-kernel-rs (z85 crate) ends with '#' * missing + the tail's base-85 digits."""
    body += b"\0" * (-len(body) % 4)
    value, digits = int.from_bytes(tail, "big"), ""
    for _ in range(len(tail) + 1):
        value, d = divmod(value, 85)
        digits = z85_encode(d.to_bytes(4, "big"))[-1] + digits
    assert z85_decode(z85_encode(body) + "#" * (4 - len(tail)) + digits) == body + tail


def test_relative_path_needs_a_uuid() -> None:
    with pytest.raises(CorruptLogError, match="UUID"):
        DeletionVectorDescriptor("u", "000000000000000##000", 1, 1, 1).absolute_path("/t")


@pytest.mark.parametrize("text", ["abc", "Hello Worl", "%%%%%", "##093HelloWorld", "####0"])
def test_z85_rejects_malformed(text: str) -> None:
    with pytest.raises(CorruptLogError):
        z85_decode(text)


# --------------------------------------------------------------------------- descriptors


def test_spec_example_relative_path_with_prefix() -> None:
    d = DeletionVectorDescriptor.from_dict(
        {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4,
         "sizeInBytes": 40, "cardinality": 6}
    )  # fmt: skip
    assert d.absolute_path("s3://mytable/") == (
        "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    )
    assert d.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"


def test_spec_example_absolute_path() -> None:
    path = "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    d = DeletionVectorDescriptor("p", path, 4, 40, 6)
    assert d.absolute_path("/elsewhere") == path
    assert d.unique_id == f"p{path}@4"


def test_spec_example_inline() -> None:
    """The spec's inline example uses delta-spark's older native layout; it must still read."""
    text = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
    d = DeletionVectorDescriptor.from_dict(
        {"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": 40, "cardinality": 6}
    )
    assert d.unique_id == "i" + text
    assert d.absolute_path("/t") is None
    assert list(read_deletion_vector(d, "/nonexistent", STORE)) == [3, 4, 7, 11, 18, 29]


def test_descriptor_dict_round_trip() -> None:
    d = DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2, 9)
    assert d.to_dict() == {
        "storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "offset": 1,
        "sizeInBytes": 36, "cardinality": 2, "maxRowIndex": 9,
    }  # fmt: skip
    assert DeletionVectorDescriptor.from_dict(d.to_dict()) == d
    inline = DeletionVectorDescriptor("i", "00000", None, 4, 0)
    assert "offset" not in inline.to_dict() and "maxRowIndex" not in inline.to_dict()
    checkpoint_row = {**inline.to_dict(), "offset": None, "maxRowIndex": None}
    assert DeletionVectorDescriptor.from_dict(checkpoint_row) == inline


@pytest.mark.parametrize(
    "change",
    [{"storageType": "x"}, {"sizeInBytes": -1}, {"cardinality": "2"}, {"offset": True},
     {"pathOrInlineDv": "tooShort"}, {"cardinality": None}],
)  # fmt: skip
def test_descriptor_rejects_malformed(change: dict) -> None:
    d = {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "offset": 1,
         "sizeInBytes": 36, "cardinality": 2, **change}  # fmt: skip
    with pytest.raises(CorruptLogError):
        DeletionVectorDescriptor.from_dict({k: v for k, v in d.items() if v is not None})


# --------------------------------------------------------------------------- real tables

REAL_DVS = _real_descriptors()


@pytest.mark.parametrize(("table", "desc", "num_records"), REAL_DVS)
def test_real_dv_decodes_and_reencodes_byte_exact(
    table: Path, desc: DeletionVectorDescriptor, num_records: int | None, tmp_path: Path
) -> None:
    bitmap = read_deletion_vector(desc, str(table), STORE)
    assert len(bitmap) == desc.cardinality
    rows = deleted_row_indexes(desc, str(table), STORE)
    assert rows.dtype == np.int64 and rows.tolist() == list(bitmap)
    if num_records is not None:
        assert rows.max() < num_records

    if desc.storage_type == "i":
        original = z85_decode(desc.path_or_inline_dv)[: desc.size_in_bytes]
        if "#" not in desc.path_or_inline_dv:  # '#' tails come from the Rust z85 crate
            assert inline_descriptor(bitmap).path_or_inline_dv == desc.path_or_inline_dv
    else:
        path = desc.absolute_path(str(table))
        raw = Path(path).read_bytes()
        assert raw[0] == 1
        region = raw[desc.offset : desc.offset + desc.size_in_bytes + 8]
        original = region[4:-4]
        assert _frame(serialize_bitmap(bitmap)) == region
        with DeletionVectorWriter(str(tmp_path), STORE) as writer:
            mine = writer.add(bitmap)
        written = Path(writer.path).read_bytes()
        assert written[mine.offset : mine.offset + mine.size_in_bytes + 8] == region
    assert serialize_bitmap(bitmap) == original
    assert _reference_bitmap_bytes(bitmap) == original


def _surviving_rows(table: Path) -> list[tuple]:
    """Minimal log replay (JSON commits only) and scan applying our DVs."""
    active: dict[tuple, dict] = {}
    for log_name, action in _log_actions(table):
        if "metaData" in action:
            metadata = action["metaData"]
        for kind in ("add", "remove"):
            if COMMIT.fullmatch(log_name) and kind in action:
                dv = action[kind].get("deletionVector")
                key = (
                    action[kind]["path"],
                    dv and DeletionVectorDescriptor.from_dict(dv).unique_id,
                )
                if kind == "add":
                    active[key] = action[kind]
                else:
                    active.pop(key, None)
    fields = json.loads(metadata["schemaString"])["fields"]
    physical = {f["name"]: f["metadata"].get("delta.columnMapping.physicalName", f["name"])
                for f in fields}  # fmt: skip
    rows = []
    for add in active.values():
        data = pq.read_table(table / unquote(add["path"]))
        keep = np.ones(data.num_rows, dtype=bool)
        if add.get("deletionVector"):
            desc = DeletionVectorDescriptor.from_dict(add["deletionVector"])
            keep[deleted_row_indexes(desc, str(table), STORE)] = False
        columns = data.filter(pa.array(keep)).to_pydict()
        for i in range(int(keep.sum())):
            row = []
            for f in fields:
                if f["name"] in metadata["partitionColumns"]:
                    value = add["partitionValues"][physical[f["name"]]]
                    row.append(int(value) if f["type"] in ("integer", "long") else value)
                else:
                    row.append(columns[physical[f["name"]]][i])
            rows.append(tuple(row))
    return sorted(rows, key=repr)


@pytest.mark.parametrize("name", ["golden/dv-with-columnmapping", "golden/log-replay-dv-key-cases"])
def test_rows_left_match_reference_reader(name: str) -> None:
    expected = []
    for f in sorted((TESTDATA / name / "expected").glob("*.parquet")):
        expected += [tuple(r.values()) for r in pq.read_table(f).to_pylist()]
    assert _surviving_rows(TESTDATA / name / "delta") == sorted(expected, key=repr)


def test_kernel_rs_documented_inline_dvs() -> None:
    """cdf-table-with-dv: delta-kernel-rs's test lists the rows each commit deletes."""
    table = TESTDATA / "kernel/cdf-table-with-dv"
    expected = {1: {0, 9}, 3: {0, 1, 4, 5}, 4: {0, 5}, 5: {3}}
    found = {}
    for log_name, action in _log_actions(table):
        dv = action.get("add", {}).get("deletionVector")
        if dv:
            desc = DeletionVectorDescriptor.from_dict(dv)
            found[int(log_name[:20])] = set(read_deletion_vector(desc, str(table), STORE))
    assert found == expected


# --------------------------------------------------------------------------- bitmaps


_DENSE = {int(i) for i in np.flatnonzero(np.random.default_rng(7).random(65536) < 0.3)}
_RUNS_2047 = {4 * i + j for i in range(2047) for j in range(3)}  # 6141 rows: run container
_RUNS_2048 = {4 * i + j for i in range(2048) for j in range(3)}  # 6144 rows: bitmap container


@settings(max_examples=80, deadline=None)
@given(_row_sets())
@example(set(range(100_000)))  # full and partial run containers
@example(_DENSE | {2**32 + r for r in _DENSE})  # bitmap containers in two buckets
@example(_RUNS_2047)
@example(_RUNS_2048)
@example({0, 1, 2, 3, 4, 65536, 131072, 196608})  # a run among 4 containers: offsets kept
@example({0, 1, 2, 3, 4, 65536, 131072})  # a run among 3 containers: no offset header
@example({65536 * k for k in range(5)})  # arrays only: offsets always
@example({5 * 2**32 + 1, 7})  # empty buckets 1..4
def test_bitmap_round_trip_and_spark_bytes(rows: set[int]) -> None:
    data = serialize_bitmap(rows)
    assert deserialize_bitmap(data) == BitMap64(rows)
    assert data == _reference_bitmap_bytes(rows)
    assert serialize_bitmap(BitMap64(rows)) == data
    assert serialize_bitmap(np.array(sorted(rows), dtype=np.int64)) == data


def test_empty_bitmap() -> None:
    data = serialize_bitmap([])
    assert data == struct.pack("<IQ", PORTABLE_MAGIC, 0)
    assert len(deserialize_bitmap(data)) == 0


def test_spark_writes_every_bucket_up_to_the_highest() -> None:
    data = serialize_bitmap([2**33 + 1])
    empty = struct.pack("<II", 12346, 0)
    assert data[4:12] == struct.pack("<Q", 3)
    assert data[12:36] == struct.pack("<I", 0) + empty + struct.pack("<I", 1) + empty
    sparse = struct.pack("<IQI", PORTABLE_MAGIC, 1, 2) + data[40:]  # what CRoaring would write
    assert list(deserialize_bitmap(sparse)) == [2**33 + 1]


def test_caller_bitmap_is_not_modified() -> None:
    bitmap = BitMap64(range(100))
    serialize_bitmap(bitmap)
    assert bitmap == BitMap64(range(100))


def test_every_input_kind_serializes_alike() -> None:
    rows = [3, 4, 5, 6, 70_000]
    expected = serialize_bitmap(rows)
    for kind in (BitMap64, FrozenBitMap64, BitMap, set, tuple, iter):
        assert serialize_bitmap(kind(rows)) == expected
    for dtype in (np.int64, np.uint64, np.int32, np.uint32):
        assert serialize_bitmap(np.array(rows, dtype=dtype)) == expected


def test_largest_row_index_reads_but_is_too_big_to_write() -> None:
    """Spark's dense buckets would make this bitmap ~24 GiB; both sides refuse to write it."""
    sparse = struct.pack("<IQI", PORTABLE_MAGIC, 1, MAX_ROW_INDEX >> 32)
    sparse += serialize_bitmap([MAX_ROW_INDEX & 0xFFFFFFFF])[16:]
    assert list(deserialize_bitmap(sparse)) == [MAX_ROW_INDEX]
    with pytest.raises(DeltaIllegalArgumentException, match="too big"):
        serialize_bitmap([MAX_ROW_INDEX])


@pytest.mark.parametrize(
    "rows",
    [[-1], [MAX_ROW_INDEX + 1], [2**64], ["x"], np.array([-3], dtype=np.int64),
     np.array([1.5])],
)  # fmt: skip
def test_serialize_rejects_invalid_row_indexes(rows) -> None:
    with pytest.raises(DeltaIllegalArgumentException):
        serialize_bitmap(rows)


_GOOD = serialize_bitmap([1, 2, 2**32 + 7])


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00" * 12,  # unknown magic
        _GOOD + b"\x00",  # trailing bytes
        _GOOD[:-1],  # truncated
        _GOOD[:12] + struct.pack("<I", 2**31) + _GOOD[16:],  # bucket key with its MSB set
        _GOOD[:4] + struct.pack("<Q", 3) + _GOOD[12:],  # more buckets than present
        struct.pack("<IQ", PORTABLE_MAGIC, 2) + _GOOD[12:34] * 2,  # bucket keys not ascending
    ],
)
def test_deserialize_rejects_corrupt_bitmaps(data: bytes) -> None:
    with pytest.raises(CorruptLogError):
        deserialize_bitmap(data)


# --------------------------------------------------------------------------- writer


@settings(max_examples=25, deadline=None)
@given(st.lists(_row_sets(), min_size=1, max_size=5), st.integers(0, 3))
def test_writer_packs_several_vectors(row_sets: list[set[int]], prefix_length: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        writer = DeletionVectorWriter(root, STORE, prefix_length=prefix_length)
        descriptors = [writer.add(rows) for rows in row_sets]
        assert not STORE.exists(writer.path)  # nothing is visible before close()
        writer.close()
        raw = Path(writer.path).read_bytes()
        assert raw[0] == 1
        offset = 1
        for rows, desc in zip(row_sets, descriptors, strict=True):
            assert desc.storage_type == "u" and desc.offset == offset
            assert desc.path_or_inline_dv == descriptors[0].path_or_inline_dv
            assert len(desc.path_or_inline_dv) == 20 + prefix_length
            assert desc.absolute_path(root) == writer.path
            assert desc.cardinality == len(rows)
            assert desc.max_row_index == (max(rows) if rows else None)
            assert desc.size_in_bytes == len(serialize_bitmap(rows))
            assert read_deletion_vector(desc, root, STORE) == BitMap64(rows)
            offset += desc.size_in_bytes + 8
        assert offset == len(raw)


def test_writer_prefix_directory(tmp_path: Path) -> None:
    with DeletionVectorWriter(str(tmp_path), STORE, prefix_length=2) as writer:
        desc = writer.add([5])
    prefix = desc.path_or_inline_dv[:2]
    assert Path(writer.path).parent == tmp_path / prefix
    assert Path(writer.path).name.startswith("deletion_vector_")


def test_writer_without_vectors_writes_nothing(tmp_path: Path) -> None:
    writer = DeletionVectorWriter(str(tmp_path), STORE)
    writer.close()
    writer.close()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(DeltaError):
        writer.add([1])
    with pytest.raises(RuntimeError), DeletionVectorWriter(str(tmp_path), STORE) as failing:
        failing.add([1])
        raise RuntimeError("abort")
    assert list(tmp_path.iterdir()) == []


def test_writer_uses_put_if_absent(tmp_path: Path) -> None:
    calls = []

    class RecordingStore(LocalLogStore):
        def write_if_absent(self, path: str, data: bytes) -> None:
            calls.append(path)
            super().write_if_absent(path, data)

        def write(self, path: str, data: bytes) -> None:
            raise AssertionError("DV files must never be overwritten")

    store = RecordingStore()
    with DeletionVectorWriter(str(tmp_path), store) as writer:
        writer.add([1])
    assert calls == [writer.path]
    clash = DeletionVectorWriter(str(tmp_path), store)
    clash.path = writer.path
    clash.add([2])
    with pytest.raises(FileAlreadyExistsError):
        clash.close()


@given(_row_sets())
@settings(max_examples=30, deadline=None)
def test_inline_descriptor_round_trip(rows: set[int]) -> None:
    desc = inline_descriptor(rows)
    assert DeletionVectorWriter.inline_descriptor(rows) == desc
    assert desc.storage_type == "i" and desc.offset is None
    assert desc.size_in_bytes == len(serialize_bitmap(rows))
    assert (desc.cardinality, desc.max_row_index) == (len(rows), max(rows) if rows else None)
    assert read_deletion_vector(desc, "/nonexistent", STORE) == BitMap64(rows)


def test_deleted_row_indexes_array(tmp_path: Path) -> None:
    rows = [2**40, 3, 2**32, 7]
    with DeletionVectorWriter(str(tmp_path), STORE) as writer:
        desc = writer.add(rows)
    got = deleted_row_indexes(desc, str(tmp_path), STORE)
    assert got.dtype == np.int64 and got.tolist() == sorted(rows)
    empty = deleted_row_indexes(inline_descriptor([]), str(tmp_path), STORE)
    assert empty.dtype == np.int64 and empty.shape == (0,)
    spark_empty = DeletionVectorDescriptor("i", "", None, 0, 0)  # delta-spark's EMPTY
    assert len(read_deletion_vector(spark_empty, str(tmp_path), STORE)) == 0


# --------------------------------------------------------------------------- corruption


@pytest.fixture
def written(tmp_path: Path) -> tuple[str, DeletionVectorDescriptor, str]:
    with DeletionVectorWriter(str(tmp_path), STORE) as writer:
        writer.add([0, 9])
        desc = writer.add([1, 2, 3, 2**33])
    return str(tmp_path), desc, writer.path


def _patch(path: str, at: int, byte: int | None = None, cut: int | None = None) -> None:
    raw = bytearray(Path(path).read_bytes())
    if byte is not None:
        raw[at] ^= byte
    Path(path).write_bytes(bytes(raw[:cut]))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p, d: _patch(p, d.offset + d.size_in_bytes + 5, 0x01), "CRC"),
        (lambda p, d: _patch(p, d.offset + 10, 0x40), "CRC"),
        (lambda p, d: _patch(p, 0, 0x02), "version"),
        (lambda p, d: _patch(p, 0, cut=-3), "truncated"),
        (lambda p, d: _patch(p, d.offset + 3, 0x01), "says the DV is"),
        (lambda p, d: Path(p).unlink(), "does not exist"),
    ],
)
def test_corrupt_file_names_the_file(written, damage, message: str) -> None:
    root, desc, path = written
    damage(path, desc)
    with pytest.raises(CorruptLogError, match=message) as info:
        read_deletion_vector(desc, root, STORE)
    assert path in str(info.value)


@pytest.mark.parametrize(
    "change", [{"cardinality": 5}, {"size_in_bytes": 10}, {"offset": 2}, {"offset": 1}]
)
def test_descriptor_mismatch_names_the_file(written, change: dict) -> None:
    root, desc, path = written
    with pytest.raises(CorruptLogError) as info:
        read_deletion_vector(dataclasses.replace(desc, **change), root, STORE)
    assert path in str(info.value)


def test_valid_checksum_over_garbage_is_corrupt(tmp_path: Path) -> None:
    desc = DeletionVectorWriter(str(tmp_path), STORE).add([1])
    path = desc.absolute_path(str(tmp_path))
    Path(path).write_bytes(b"\x01" + _frame(b"\x00" * desc.size_in_bytes))
    with pytest.raises(CorruptLogError, match="magic") as info:
        read_deletion_vector(desc, str(tmp_path), STORE)
    assert path in str(info.value)


def test_truncated_real_file(tmp_path: Path) -> None:
    source = TESTDATA / "kernel/table-with-dv-small"
    desc = DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2)
    target = Path(desc.absolute_path(str(tmp_path)))
    raw = Path(desc.absolute_path(str(source))).read_bytes()
    target.write_bytes(raw[:-1])
    with pytest.raises(CorruptLogError, match="truncated") as info:
        read_deletion_vector(desc, str(tmp_path), STORE)
    assert str(target) in str(info.value)


@pytest.mark.parametrize(
    "change",
    [{"cardinality": 3}, {"size_in_bytes": 99}, {"path_or_inline_dv": "^Bg9^0rr91 0000"}],
)
def test_corrupt_inline_vector(change: dict) -> None:
    good = inline_descriptor([1, 2])
    with pytest.raises(CorruptLogError, match="inline deletion vector"):
        read_deletion_vector(dataclasses.replace(good, **change), "/t", STORE)
