"""CONVERT TO DELTA: a directory of Parquet files becomes a Delta table in place.

Nothing is rewritten: the files are listed (hidden names such as ``_SUCCESS``,
``.crc`` files and ``_``-directories without ``=`` skipped, as Spark's file index
does), their Hive ``k=v`` directories are checked against the partition schema and
turned into Delta's serialized partition values, the data schema is read from the
Parquet footers (Spark's own schema when the file carries it, else the Parquet
schema; files must agree, columns missing from some files are allowed), statistics
come from the same footers (none with SQL's ``NO STATISTICS``), and version 0 is committed
with one ``add`` per file. A directory that already is a Delta table is left alone. A
Parquet table of the session catalog is converted by its directory, and its entry then
names a Delta table.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pyarrow.parquet as pq

from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.protocol.partition_values import (
    HIVE_DEFAULT_PARTITION,
    parse_partition_value,
    serialize_partition_value,
    unescape_path_name,
)
from delta_pyspark.core.protocol.schema import (
    TIMESTAMP,
    TIMESTAMP_NTZ,
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    schema_to_string,
    type_name,
)
from delta_pyspark.core.protocol.schema_arrow import from_arrow_schema, to_arrow_schema
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.stats.collection import collect_parquet_stats
from delta_pyspark.core.stats.indexed_columns import stats_settings
from delta_pyspark.core.storage.locations import join, normalise, relative_to
from delta_pyspark.core.storage.log_store import DirEntry, LogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import table_metadata
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaAnalysisException,
    DeltaError,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
    ProtocolChangedException,
)
from delta_pyspark.spark.catalog.session_catalog import lookup, refresh_delta_entry
from delta_pyspark.spark.conf import session_time_zone
from delta_pyspark.spark.files.paths import to_log_path
from delta_pyspark.spark.jvm.catalog_access import make_delta

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ParquetDirectory",
    "catalog_partition_ddl",
    "convert_to_delta",
    "parquet_directory",
    "parse_identifier",
]

SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
_IDENTIFIER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*`(.+)`\s*$", re.DOTALL)
_FOOTER_THREADS = 8


# The formats whose ``format.`path``` names a directory (delta-spark's; only Parquet converts).
_DIRECTORY_FORMATS = ("parquet", "iceberg", "delta")


def parse_identifier(identifier: str) -> tuple[str, str] | None:
    """``parquet.`/path``` (or a bare path) to ``(format, path)``; None for a table name."""
    m = _IDENTIFIER.match(identifier)
    if m and m.group(1).lower() in _DIRECTORY_FORMATS:
        fmt, path = m.group(1).lower(), m.group(2).replace("``", "`")
    elif not m and ("/" in identifier or identifier.startswith("file:")):
        fmt, path = "parquet", identifier.strip()
    else:
        return None
    return fmt, path if path.startswith("file:") else normalise(path)


def convert_to_delta(
    spark: SparkSession,
    identifier: str,
    partition_schema: Any = None,
    *,
    statistics: bool = True,
) -> str:
    """CONVERT TO DELTA of ``identifier`` in place, as delta-spark reads it: ``parquet.`path```
    (or a bare path) is a directory, anything else a Parquet table of the session catalog.
    Returns the table path.

    ``partition_schema``: None (unpartitioned; a catalog table's own partition columns), a
    DDL string (``"a INT, b STRING"``) or a pyspark StructType naming the Hive partition
    columns of the directory layout. ``statistics=False`` is SQL's ``NO STATISTICS``: the
    ``add`` actions carry no ``stats`` (reads then skip no file by them until the files are
    rewritten).
    """
    directory = parse_identifier(identifier)
    if directory is None:
        return _convert_catalog_table(spark, identifier, partition_schema, statistics)
    return _convert_directory(spark, *directory, partition_schema, statistics)


def _convert_catalog_table(
    spark: SparkSession, name: str, partition_schema: Any, statistics: bool
) -> str:
    """The Parquet table ``name``'s directory converted, then its entry made a Delta
    table's, as in delta-spark."""
    entry = lookup(spark, name)
    if entry is None or not entry.location:
        raise DeltaTableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] CONVERT TO DELTA: {name}")
    if entry.provider == "delta":
        return entry.location  # already converted: nothing to do
    if entry.provider != "parquet":
        raise DeltaAnalysisException(
            f"CONVERT TO DELTA only supports parquet tables, and {name} is a {entry.provider} table"
        )
    if partition_schema is None:
        partition_schema = catalog_partition_ddl(spark, name)
    path = _convert_directory(
        spark, "parquet", normalise(entry.location), partition_schema, statistics
    )
    make_delta(spark, entry.database, entry.table)
    refresh_delta_entry(spark, name)
    return path


def catalog_partition_ddl(spark: SparkSession, name: str) -> str | None:
    """The partition columns of the catalog table ``name`` as DDL; None when unpartitioned."""
    parts = [c for c in spark.catalog.listColumns(name) if c.isPartition]
    return ", ".join(f"`{c.name}` {c.dataType}" for c in parts) or None


def _convert_directory(
    spark: SparkSession, fmt: str, path: str, partition_schema: Any, statistics: bool
) -> str:
    log = DeltaLog.for_table(path)
    if log.is_delta_table():
        return path  # already converted: nothing to do
    if fmt != "parquet":
        raise DeltaAnalysisException(
            f"CONVERT TO DELTA only supports parquet directories, not {fmt!r} ({fmt}.`{path}`)"
        )
    files = parquet_directory(spark, log.store, path, partition_schema, statistics)
    metadata = table_metadata(None, files.schema, files.partition_columns, {})
    txn = Transaction(log, None)
    txn.update_protocol(protocol_for(files.schema, {}))
    txn.update_metadata(metadata)
    txn.add_files(files.adds)
    try:
        txn.commit(
            "CONVERT",
            {
                "numFiles": len(files.adds),
                "partitionedBy": files.partition_columns,
                "collectStats": statistics,
                "sourceFormat": "parquet",
            },
        )
    except ProtocolChangedException:
        if log.is_delta_table():  # a concurrent CONVERT won: same outcome
            return path
        raise
    return path


@dataclass
class ParquetDirectory:
    """A directory of Parquet files as a Delta table would hold them."""

    schema: StructType  # data columns, then partition columns
    partition_columns: list[str]
    adds: list[AddFile]  # paths relative to the directory


def parquet_directory(
    spark: SparkSession, store: LogStore, path: str, partition_schema: Any, statistics: bool
) -> ParquetDirectory:
    """The files, schema and partitioning of the Parquet directory ``path`` (module doc)."""
    if not store.is_dir(path):
        raise DeltaAnalysisException(f"cannot read {path} as Parquet: no such directory")
    partitions = _partition_fields(spark, partition_schema)
    listed = _list_data_files(store, path)
    files = list(listed)
    if not files:
        raise DeltaAnalysisException(f"{path} holds no Parquet data files")
    values = _partition_values(files, partitions, session_time_zone(spark))
    footers = _read_footers(store, path, files)
    data_schema = _data_schema(footers, partitions)
    adds = _add_actions(store, listed, footers, values, data_schema if statistics else None)
    return ParquetDirectory(
        StructType(data_schema.fields + partitions.fields),
        [f.name for f in partitions.fields],
        adds,
    )


# ---------------------------------------------------------------------- listing


def _hidden(name: str, is_dir: bool) -> bool:
    """Spark's rule: ``_``/``.`` names are hidden, except ``_k=v`` partition directories."""
    if name.startswith("."):
        return True
    return name.startswith("_") and not (is_dir and "=" in name)


def _list_data_files(store: LogStore, root: str) -> dict[str, DirEntry]:
    """The non-hidden files under ``root`` by relative path (``/``-separated, sorted);
    links to files included, no link entered."""
    out = {}
    stack = [root]
    while stack:
        for entry in store.scan(stack.pop()):
            if _hidden(entry.name, entry.is_dir):
                continue
            if entry.is_dir:
                stack.append(entry.path)
            elif not entry.is_link or entry.link_to_file:
                out[relative_to(entry.path, root)] = entry
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------- partitions


def _partition_fields(spark: SparkSession, partition_schema: Any) -> StructType:
    from pyspark.sql.types import StructType as SparkStruct

    from delta_pyspark.spark.types import from_spark_schema

    if partition_schema is None:
        return StructType(())
    if isinstance(partition_schema, str):
        if not partition_schema.strip():
            return StructType(())
        try:
            spark_schema = spark.createDataFrame([], partition_schema).schema
        except Exception as e:  # pyspark's parse errors
            raise DeltaIllegalArgumentException(
                f"invalid partition schema {partition_schema!r}: {str(e).splitlines()[0]}"
            ) from None
    elif isinstance(partition_schema, SparkStruct):
        spark_schema = partition_schema
    else:
        raise DeltaIllegalArgumentException(
            "partitionSchema must be a DDL string or a pyspark StructType, "
            f"not {type(partition_schema).__name__}"
        )
    fields = from_spark_schema(spark_schema).fields
    names = [f.name.lower() for f in fields]
    if len(set(names)) != len(names):
        raise DeltaAnalysisException(f"partition schema repeats a column: {partition_schema!r}")
    return StructType(tuple(StructField(f.name, f.type, True, {}) for f in fields))


def _partition_values(
    files: list[str], partitions: StructType, time_zone: str
) -> list[dict[str, str | None]]:
    """Each file's partition values in Delta's serialized form, from its directories."""
    cache: dict[str, dict[str, str | None]] = {}
    out = []
    for rel in files:
        directory = rel.rpartition("/")[0]
        if directory not in cache:
            cache[directory] = _directory_values(directory, rel, partitions, time_zone)
        out.append(cache[directory])
    return out


def _directory_values(
    directory: str, example: str, partitions: StructType, time_zone: str
) -> dict[str, str | None]:
    found: dict[str, str] = {}
    for segment in directory.split("/") if directory else []:
        if "=" not in segment:
            continue
        key, _, raw = segment.partition("=")
        found[unescape_path_name(key).lower()] = raw
    expected = [f.name for f in partitions.fields]
    if sorted(found) != sorted(n.lower() for n in expected):
        seen = ", ".join(sorted(found)) or "none"
        raise DeltaAnalysisException(
            f"file {example} does not match the partition schema: expected partition "
            f"column(s) {', '.join(expected) or 'none'} in its directories, found {seen}"
        )
    return {
        f.name: _serialize(found[f.name.lower()], f.type, f.name, example, time_zone)
        for f in partitions.fields
    }


def _serialize(raw: str, dtype: DataType, column: str, example: str, time_zone: str) -> str | None:
    """A Hive directory value as Delta stores it (typed, normalised, timestamps in UTC)."""
    if raw == HIVE_DEFAULT_PARTITION:
        return None
    text = unescape_path_name(raw)
    try:
        if dtype == TIMESTAMP:  # Hive spells them in the session time zone, without offset
            local = parse_partition_value(text, TIMESTAMP_NTZ)
            value = local.replace(tzinfo=_zone(time_zone)) if local else None
        else:
            value = parse_partition_value(text, dtype)
        return serialize_partition_value(value, dtype)
    except (CorruptLogError, DeltaError, ValueError):
        raise DeltaAnalysisException(
            f"partition value {text!r} of column {column} (file {example}) is not a valid "
            f"{type_name(dtype)}"
        ) from None


def _zone(name: str) -> dt.tzinfo:
    """Spark's session time zone: a region id or a fixed offset such as ``+01:00``."""
    m = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?", name.strip())
    if m:
        minutes = int(m.group(2)) * 60 + int(m.group(3) or 0)
        return dt.timezone(dt.timedelta(minutes=minutes if m.group(1) == "+" else -minutes))
    return ZoneInfo(name)


# ---------------------------------------------------------------------- schema


def _read_footers(store: LogStore, root: str, files: list[str]) -> list[pq.FileMetaData]:
    def read(rel: str) -> pq.FileMetaData:
        try:
            return store.read_footer(join(root, rel))
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError for non-Parquet
            raise DeltaAnalysisException(
                f"cannot convert: {rel} is not a readable Parquet file ({e})"
            ) from None

    with ThreadPoolExecutor(max_workers=_FOOTER_THREADS) as pool:
        return list(pool.map(read, files))


def _file_schema(meta: pq.FileMetaData) -> StructType:
    """A file's schema: Spark's (exact types) if the writer was Spark, else Parquet's."""
    kv = meta.metadata or {}
    if SPARK_SCHEMA_KEY in kv:
        return StructType.from_json(json.loads(kv[SPARK_SCHEMA_KEY]))
    return from_arrow_schema(meta.schema.to_arrow_schema())


def _nullable(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType(tuple(StructField(f.name, _nullable(f.type), True, {}) for f in dt))
    if isinstance(dt, ArrayType):
        return ArrayType(_nullable(dt.element_type), True)
    if isinstance(dt, MapType):
        return MapType(_nullable(dt.key_type), _nullable(dt.value_type), True)
    return dt


def _merge(a: DataType, b: DataType, path: str) -> DataType:
    """Union of two file schemas: structs gain fields, every other type must be equal."""
    if isinstance(a, StructType) and isinstance(b, StructType):
        by_name = {f.name.lower(): f for f in b.fields}
        fields = []
        for f in a.fields:
            other = by_name.pop(f.name.lower(), None)
            sub = f"{path}.{f.name}" if path else f.name
            fields.append(
                f if other is None else StructField(f.name, _merge(f.type, other.type, sub))
            )
        fields += [f for f in b.fields if f.name.lower() in by_name]
        return StructType(tuple(fields))
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(_merge(a.element_type, b.element_type, f"{path}[]"), True)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return MapType(
            _merge(a.key_type, b.key_type, f"{path}.key"),
            _merge(a.value_type, b.value_type, f"{path}.value"),
            True,
        )
    if a != b:
        raise DeltaAnalysisException(
            f"cannot convert: the Parquet files disagree on the type of column {path} "
            f"({type_name(a)} vs {type_name(b)})"
        )
    return a


def _data_schema(footers: list[pq.FileMetaData], partitions: StructType) -> StructType:
    distinct: dict[str, StructType] = {}
    for meta in footers:
        schema = _nullable(_file_schema(meta))
        assert isinstance(schema, StructType)
        distinct.setdefault(schema_to_string(schema), schema)
    merged: DataType = StructType(())
    for schema in distinct.values():
        merged = _merge(merged, schema, "")
    assert isinstance(merged, StructType)
    clash = {f.name.lower() for f in merged.fields} & {f.name.lower() for f in partitions}
    if clash:
        raise DeltaAnalysisException(
            f"cannot convert: partition column(s) {', '.join(sorted(clash))} also appear "
            "inside the data files"
        )
    if not merged.fields:
        raise DeltaAnalysisException("cannot convert: the Parquet files have no columns")
    return merged


# ---------------------------------------------------------------------- actions


def _add_actions(
    store: LogStore,
    files: dict[str, DirEntry],
    footers: list[pq.FileMetaData],
    values: list[dict[str, str | None]],
    stats_schema: StructType | None,
) -> list[AddFile]:
    """``add`` actions as the writer builds them: URI-encoded relative path, and the stats of
    each footer over ``stats_schema`` (the data columns; None: no stats)."""
    arrow_schema = None if stats_schema is None else to_arrow_schema(stats_schema)
    num_indexed, stats_cols = stats_settings({})
    adds: list[AddFile] = []
    for (rel, entry), meta, partition_values in zip(files.items(), footers, values, strict=True):
        st = store.status(entry.path) if entry.is_link else entry
        add: AddFile = {
            "path": to_log_path(rel),
            "partitionValues": partition_values,
            "size": st.size,
            "modificationTime": st.modification_time,
            "dataChange": True,
        }
        if arrow_schema is not None:
            add["stats"] = collect_parquet_stats(meta, arrow_schema, num_indexed, stats_cols)
        adds.append(add)
    return adds
