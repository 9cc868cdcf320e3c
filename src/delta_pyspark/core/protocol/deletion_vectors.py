"""Deletion vectors: descriptors, the Z85 codec, the bitmap format and DV files.

A deletion vector (DV) is the set of row indexes of one data file that are logically
deleted. The log stores a descriptor; the set itself lives inline (Z85 text) or in a
shared ``deletion_vector_<uuid>.bin`` file. Bitmaps are written exactly as delta-spark
writes them (run-optimised containers, one bucket per 32-bit high key from 0 up), so
files we write are byte-identical to Spark's for the same rows.

Spark-free: pyroaring does the container work, this module does the Delta envelopes.
"""

from __future__ import annotations

import array
import itertools
import posixpath
import secrets
import string
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap64

from delta_pyspark.core.storage.log_store import LogStore
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaError,
    DeltaIllegalArgumentException,
)

if TYPE_CHECKING:
    import numpy as np


def any_deletion_vectors(files: pa.Table) -> bool:
    """Whether any file of ``files`` (a file list with a ``deletionVector`` column) has a
    deletion vector."""
    vectors = files.column("deletionVector")
    return bool(files.num_rows) and bool(pc.any(pc.is_valid(vectors)).as_py())


PORTABLE_MAGIC = 1681511377
"""Magic number of the spec's bitmap format (portable 64-bit Roaring, little-endian)."""
NATIVE_MAGIC = 1681511376
"""Older delta-spark layout; still readable (the spec's inline example uses it)."""
FILE_FORMAT_VERSION = 1
MAX_ROW_INDEX = ((2**31 - 2) << 32) | 0xFFFFFFFF
"""Largest row index delta-spark's RoaringBitmapArray can hold (high key < Int.MaxValue)."""

_MAX_FILE_SIZE = 2**31 - 1  # offset and sizeInBytes are Java ints
_UUID_CHARS = 20  # a Z85-encoded UUID is always 20 characters
_PREFIX_CHARS = string.ascii_letters + string.digits
_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_EMPTY_BUCKET = struct.pack("<II", _COOKIE_NO_RUN, 0)  # Java's serialisation of an empty bitmap

# --------------------------------------------------------------------------- Z85

_Z85_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85_CHARS)}


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data``, zero-padded to a multiple of 4 bytes as delta-spark pads.

    Readers drop the padding using the descriptor's ``sizeInBytes``. A UUID (16 bytes)
    needs no padding and always encodes to 20 characters.
    """
    data = bytes(data) + b"\0" * (-len(data) % 4)
    out: list[str] = []
    for (word,) in struct.iter_unpack(">I", data):
        digits = []
        for _ in range(5):
            word, digit = divmod(word, 85)
            digits.append(_Z85_CHARS[digit])
        out.append("".join(reversed(digits)))
    return "".join(out)


def z85_decode(s: str) -> bytes:
    """Bytes of Z85 text (padding, if the writer added any, is kept: callers truncate).

    Also accepts the Rust ``z85`` crate's tail block, whose leading ``#`` characters
    count missing bytes (delta-kernel-rs writes it; no real 4-byte block starts with
    ``#`` since 84 * 85**4 > 2**32). Malformed text raises :class:`CorruptLogError`.
    """
    if len(s) % 5:
        raise CorruptLogError(f"Z85 text length {len(s)} is not a multiple of 5: {s!r}")
    out = bytearray()
    for start in range(0, len(s), 5):
        block = s[start : start + 5]
        missing = len(block) - len(block.lstrip("#"))
        if missing and (missing > 3 or start != len(s) - 5):
            raise CorruptLogError(f"invalid Z85 block {block!r} in {s!r}")
        value = 0
        for ch in block[missing:]:
            digit = _Z85_VALUE.get(ch)
            if digit is None:
                raise CorruptLogError(f"invalid Z85 character {ch!r} in {s!r}")
            value = value * 85 + digit
        width = 4 - missing
        if value >> (8 * width):
            raise CorruptLogError(f"Z85 block {block!r} overflows {width} bytes in {s!r}")
        out += value.to_bytes(width, "big")
    return bytes(out)


# --------------------------------------------------------------------------- descriptor


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` struct of ``add``/``remove`` actions (protocol field names)."""

    storage_type: str  # 'u' relative (prefix + Z85 UUID), 'i' inline, 'p' absolute path
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int
    max_row_index: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """Parse the JSON/checkpoint form; a malformed descriptor is a corrupt log."""
        try:
            desc = cls(
                storage_type=d["storageType"],
                path_or_inline_dv=d["pathOrInlineDv"],
                offset=d.get("offset"),
                size_in_bytes=d["sizeInBytes"],
                cardinality=d["cardinality"],
                max_row_index=d.get("maxRowIndex"),
            )
        except KeyError as e:
            raise CorruptLogError(f"deletionVector {dict(d)!r} lacks field {e}") from None

        def is_count(v: object) -> bool:
            return isinstance(v, int) and not isinstance(v, bool) and v >= 0

        ok = (
            desc.storage_type in ("u", "i", "p")
            and isinstance(desc.path_or_inline_dv, str)
            and (desc.storage_type != "u" or len(desc.path_or_inline_dv) >= _UUID_CHARS)
            and is_count(desc.size_in_bytes)
            and is_count(desc.cardinality)
            and (desc.offset is None or is_count(desc.offset))
            and (desc.max_row_index is None or isinstance(desc.max_row_index, int))
        )
        if not ok:
            raise CorruptLogError(f"malformed deletionVector {dict(d)!r}")
        return desc

    def to_dict(self) -> dict[str, Any]:
        """JSON form in delta-spark's key order; ``None`` fields are omitted."""
        d: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
            "offset": self.offset,
            "sizeInBytes": self.size_in_bytes,
            "cardinality": self.cardinality,
            "maxRowIndex": self.max_row_index,
        }
        return {k: v for k, v in d.items() if v is not None}

    @property
    def unique_id(self) -> str:
        """The spec's uniqueId: with the path, the identity of a logical file in log replay."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    def absolute_path(self, table_root: str) -> str | None:
        """Where the DV file is (``None`` for inline DVs)."""
        if self.storage_type == "i":
            return None
        if self.storage_type == "p":
            return self.path_or_inline_dv
        prefix, encoded = (
            self.path_or_inline_dv[:-_UUID_CHARS],
            self.path_or_inline_dv[-_UUID_CHARS:],
        )
        raw = z85_decode(encoded)
        if len(raw) != 16:
            raise CorruptLogError(f"deletion vector path {self.path_or_inline_dv!r} has no UUID")
        file_id = uuid.UUID(bytes=raw)
        # the prefix is a directory below the root: never absolute, never climbing out
        if prefix and posixpath.normpath(f"{prefix}/x").startswith(("/", "../")):
            raise CorruptLogError(
                f"deletion vector path {self.path_or_inline_dv!r} leads outside the table"
            )
        root = table_root.rstrip("/")
        directory = f"{root}/{prefix}" if prefix else root
        return f"{directory}/deletion_vector_{file_id}.bin"


# --------------------------------------------------------------------------- bitmaps


def _roaring32_end(buf: bytes, pos: int) -> tuple[int, int]:
    """End offset and cardinality of the 32-bit portable RoaringBitmap starting at ``pos``.

    The 64-bit format has no per-bucket lengths, so finding the next bucket means
    walking this header (RoaringFormatSpec); container bodies are left to pyroaring.
    """
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie & 0xFFFF == _COOKIE_RUN:
        count = (cookie >> 16) + 1
        run_flags = buf[pos + 4 : pos + 4 + (count + 7) // 8]
        pos += 4 + len(run_flags)
        has_offsets = count >= 4
    elif cookie == _COOKIE_NO_RUN:
        (count,) = struct.unpack_from("<I", buf, pos + 4)
        if count > 65536:
            raise CorruptLogError(f"RoaringBitmap claims {count} containers")
        run_flags, pos, has_offsets = b"", pos + 8, True
    else:
        raise CorruptLogError(f"not a RoaringBitmap (cookie {cookie:#x})")
    header = struct.unpack_from(f"<{2 * count}H", buf, pos)
    keys = header[0::2]
    if any(a >= b for a, b in itertools.pairwise(keys)):
        raise CorruptLogError("RoaringBitmap container keys are not ascending")
    pos += (8 if has_offsets else 4) * count
    cardinality = 0
    for i, card_minus_one in enumerate(header[1::2]):
        card = card_minus_one + 1
        cardinality += card
        if run_flags and run_flags[i >> 3] >> (i & 7) & 1:
            (runs,) = struct.unpack_from("<H", buf, pos)
            pos += 2 + 4 * runs
        else:
            pos += 2 * card if card <= 4096 else 8192
    if pos > len(buf):
        raise CorruptLogError("RoaringBitmap is truncated")
    return pos, cardinality


def _buckets(data: bytes) -> tuple[list[tuple[int, bytes]], int, bool]:
    """(key, 32-bit bitmap) per bucket, total cardinality, and whether ``data`` is portable."""
    if len(data) < 4:
        raise CorruptLogError(f"bitmap of {len(data)} bytes has no magic number")
    magic = struct.unpack_from("<I", data)[0]
    buckets: list[tuple[int, bytes]] = []
    total = 0
    if magic == PORTABLE_MAGIC:
        (count,) = struct.unpack_from("<Q", data, 4)
        pos, previous = 12, -1
        for _ in range(count):
            (key,) = struct.unpack_from("<I", data, pos)
            if key >> 31 or key <= previous:
                raise CorruptLogError(f"bad bucket key {key} (after {previous})")
            end, card = _roaring32_end(data, pos + 4)
            buckets.append((key, data[pos + 4 : end]))
            total, pos, previous = total + card, end, key
    elif NATIVE_MAGIC in (magic, struct.unpack_from(">I", data)[0]):
        order = "<" if magic == NATIVE_MAGIC else ">"  # the spec's example is big-endian
        (count,) = struct.unpack_from(f"{order}I", data, 4)
        pos = 8
        for key in range(count):
            (size,) = struct.unpack_from(f"{order}I", data, pos)
            end, card = _roaring32_end(data, pos + 4)
            if end != pos + 4 + size:
                raise CorruptLogError(f"bucket {key} is {end - pos - 4} bytes, header says {size}")
            buckets.append((key, data[pos + 4 : end]))
            total, pos = total + card, end
    else:
        raise CorruptLogError(f"unknown deletion vector magic number {magic}")
    if pos != len(data):
        raise CorruptLogError(f"{len(data) - pos} unexpected bytes after the bitmap")
    return buckets, total, magic == PORTABLE_MAGIC


def deserialize_bitmap(data: bytes) -> BitMap64:
    """Row indexes from the spec's bitmap format (magic number + portable 64-bit Roaring)."""
    try:
        buckets, cardinality, portable = _buckets(data)
        if portable:
            blob = data[4:]
        else:
            parts = [struct.pack("<I", key) + body for key, body in buckets]
            blob = struct.pack("<Q", len(buckets)) + b"".join(parts)
        bitmap = BitMap64.deserialize(blob)
    except (struct.error, IndexError, ValueError) as e:
        raise CorruptLogError(f"malformed deletion vector bitmap: {e}") from e
    if len(bitmap) != cardinality:
        raise CorruptLogError(f"bitmap holds {len(bitmap)} rows, its header says {cardinality}")
    return bitmap


def to_bitmap64(rows: BitMap64 | Iterable[int]) -> BitMap64:
    """A fresh BitMap64 of ``rows``, checked to be valid row indexes (a numpy array goes
    in through a buffer: 3x faster than pyroaring's loop over the array's items)."""
    import numpy as np  # here: the log's readers (the CLI among them) never need numpy

    if isinstance(rows, AbstractBitMap):  # 32-bit pyroaring: widen without a Python loop
        rows = np.frombuffer(rows.to_array(), dtype=np.uint32)
    try:
        if isinstance(rows, AbstractBitMap64):
            bitmap = BitMap64(rows)  # a C-level copy: the caller's bitmap stays untouched
        elif isinstance(rows, np.ndarray):
            if rows.size and (rows.dtype.kind not in "iu" or rows.min() < 0):
                raise DeltaIllegalArgumentException("row indexes must be non-negative integers")
            bitmap = BitMap64(array.array("Q", rows.astype(np.uint64, copy=False).tobytes()))
        else:
            bitmap = BitMap64(rows)
    except (OverflowError, TypeError) as e:
        message = f"row indexes must be non-negative integers: {e}"
        raise DeltaIllegalArgumentException(message) from None
    if bitmap and bitmap.max() > MAX_ROW_INDEX:
        raise DeltaIllegalArgumentException(f"row index {bitmap.max()} > {MAX_ROW_INDEX}")
    return bitmap


def _serialize(bitmap: BitMap64) -> bytes:
    """Spark's bytes for ``bitmap`` (which is run-optimised in place)."""
    bitmap.run_optimize()  # delta-spark's BitmapAggregator does this before writing
    raw = bitmap.serialize()  # CRoaring's portable form skips empty buckets; Spark does not
    n_buckets = (bitmap.max() >> 32) + 1 if bitmap else 0
    if 12 + 12 * n_buckets + len(raw) > _MAX_FILE_SIZE:  # Spark refuses these too
        raise DeltaIllegalArgumentException(f"a bitmap up to row {bitmap.max()} is too big")
    out = [struct.pack("<IQ", PORTABLE_MAGIC, n_buckets)]
    pos, next_key = 8, 0
    for _ in range(struct.unpack_from("<Q", raw)[0]):
        (key,) = struct.unpack_from("<I", raw, pos)
        out.extend(struct.pack("<I", k) + _EMPTY_BUCKET for k in range(next_key, key))
        end, _ = _roaring32_end(raw, pos + 4)
        out.append(raw[pos:end])
        pos, next_key = end, key + 1
    return b"".join(out)


def serialize_bitmap(rows: BitMap64 | Iterable[int]) -> bytes:
    """The spec's bitmap bytes for ``rows``, byte-identical to delta-spark's."""
    return _serialize(to_bitmap64(rows))


# --------------------------------------------------------------------------- reading


def _read_framed(store: LogStore, path: str, offset: int, size: int) -> bytes:
    """The checked bitmap bytes of the DV at ``offset`` in the file at ``path``."""
    where = f"deletion vector file {path} (offset {offset}, {size} bytes)"
    try:
        version = store.read_range(path, 0, 1)
        frame = store.read_range(path, offset, size + 8)
    except FileNotFoundError:
        raise CorruptLogError(f"{where} does not exist") from None
    except EOFError as e:
        raise CorruptLogError(f"{where} is truncated: {e}") from None
    if version != bytes([FILE_FORMAT_VERSION]):
        raise CorruptLogError(f"{where}: unknown format version {version!r}")
    if len(frame) != size + 8:
        raise CorruptLogError(f"{where} is truncated")
    (stored_size,) = struct.unpack_from(">I", frame)
    if stored_size != size:
        raise CorruptLogError(f"{where}: the file says the DV is {stored_size} bytes")
    data = frame[4 : 4 + size]
    (checksum,) = struct.unpack_from(">I", frame, 4 + size)
    if zlib.crc32(data) != checksum:
        raise CorruptLogError(f"{where}: CRC-32 mismatch")
    return data


def read_deletion_vector(
    descriptor: DeletionVectorDescriptor, table_root: str, store: LogStore
) -> BitMap64:
    """The deleted row indexes ``descriptor`` points at, after every integrity check."""
    if descriptor.storage_type == "i":
        where = f"inline deletion vector {descriptor.path_or_inline_dv!r}"
        if descriptor.size_in_bytes == 0 and descriptor.cardinality == 0:
            return BitMap64()  # delta-spark's DeletionVectorDescriptor.EMPTY
        try:
            data = z85_decode(descriptor.path_or_inline_dv)
        except CorruptLogError as e:
            raise CorruptLogError(f"{where}: {e}") from None
        if len(data) < descriptor.size_in_bytes:
            raise CorruptLogError(f"{where} is shorter than {descriptor.size_in_bytes} bytes")
        data = data[: descriptor.size_in_bytes]
    else:
        path = descriptor.absolute_path(table_root)
        assert path is not None
        offset = descriptor.offset or 0
        where = f"deletion vector file {path} (offset {offset})"
        data = _read_framed(store, path, offset, descriptor.size_in_bytes)
    try:
        bitmap = deserialize_bitmap(data)
    except CorruptLogError as e:
        raise CorruptLogError(f"{where}: {e}") from e
    if len(bitmap) != descriptor.cardinality:
        raise CorruptLogError(
            f"{where} holds {len(bitmap)} rows, its descriptor says {descriptor.cardinality}"
        )
    return bitmap


def deleted_row_indexes(
    descriptor: DeletionVectorDescriptor, table_root: str, store: LogStore
) -> np.ndarray:
    """Sorted int64 array of the deleted row indexes (no Python loop; for Arrow/Spark masks)."""
    import numpy as np

    return np.frombuffer(read_deletion_vector(descriptor, table_root, store).to_array(), np.int64)


# --------------------------------------------------------------------------- writing


def _descriptor(
    kind: str, path: str, offset: int | None, data: bytes, rows: BitMap64
) -> DeletionVectorDescriptor:
    return DeletionVectorDescriptor(
        kind, path, offset, len(data), len(rows), rows.max() if rows else None
    )


def inline_descriptor(bitmap: BitMap64 | Iterable[int]) -> DeletionVectorDescriptor:
    """A storageType 'i' descriptor carrying ``bitmap`` in the log (for small vectors)."""
    rows = to_bitmap64(bitmap)
    data = _serialize(rows)
    return _descriptor("i", z85_encode(data), None, data, rows)


class DeletionVectorWriter:
    """Packs several DVs into one new ``deletion_vector_<uuid>.bin``, as Spark does per task.

    Descriptors returned by :meth:`add` are only valid once :meth:`close` has written the
    file (put-if-absent, so a UUID clash can never overwrite another writer's DVs). As a
    context manager it writes on success and writes nothing if the block raised.
    """

    inline_descriptor = staticmethod(inline_descriptor)

    def __init__(self, table_root: str, store: LogStore, prefix_length: int = 0) -> None:
        if prefix_length < 0:
            raise DeltaIllegalArgumentException(f"prefix_length {prefix_length} < 0")
        prefix = "".join(secrets.choice(_PREFIX_CHARS) for _ in range(prefix_length))
        self._encoded = prefix + z85_encode(uuid.uuid4().bytes)
        self._store = store
        self._frames: list[bytes] = [bytes([FILE_FORMAT_VERSION])]
        self._size = 1
        self._closed = False
        path = DeletionVectorDescriptor("u", self._encoded, None, 0, 0).absolute_path(table_root)
        assert path is not None
        self.path: str = path
        """Absolute path of the file this writer creates (to clean up after an abort)."""

    def add(self, bitmap: BitMap64 | Iterable[int]) -> DeletionVectorDescriptor:
        """Stage one DV and return its exact descriptor."""
        if self._closed:
            raise DeltaError(f"deletion vector writer for {self.path} is closed")
        rows = to_bitmap64(bitmap)
        data = _serialize(rows)
        frame = struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
        if self._size + len(frame) > _MAX_FILE_SIZE:
            raise DeltaError(f"{self.path} would exceed {_MAX_FILE_SIZE} bytes; use a new writer")
        descriptor = _descriptor("u", self._encoded, self._size, data, rows)
        self._frames.append(frame)
        self._size += len(frame)
        return descriptor

    def close(self) -> None:
        """Write the file (nothing if no DV was added); later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        frames, self._frames = self._frames, []
        if len(frames) > 1:
            self._store.write_if_absent(self.path, b"".join(frames))

    def __enter__(self) -> DeletionVectorWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._closed, self._frames = True, []
