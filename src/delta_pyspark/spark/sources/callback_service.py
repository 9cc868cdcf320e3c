"""Delta tables inside Spark's planner: the Python side of the JVM's ``delta`` source.

Spark resolves ``format("delta")`` and ``delta.`path``` in SQL to the JVM helper's
``DeltaSource``: a Parquet relation whose ``DeltaFileIndex`` asks this module, over py4j's
callback server, for the files of every scan. So each action reads the table's current
snapshot (time travel pins one), Spark's filters reach the log's stats-based skipping in every
plan shape (SQL, views, joins, filters after projections), and Spark prunes partitions
(dynamically too), pushes filters down and splits files as for any file source.

Protocol (``DeltaTables.java``): ``open`` resolves a table for a new relation and answers its
schema; ``listFiles`` answers the kept files as one bytes blob (path, size, modification time,
deleted rows and the log's partition value strings, NUL-separated, grouped by partition), with
the split size that packs them into whole waves of tasks (``scan.even_split_bytes``). Filters
arrive as Spark's SQL text and are parsed into the core's ``Expr``; what the parser does not
model prunes nothing. Errors are answered as text (prefix ``E``) that the JVM raises as an
``AnalysisException`` carrying a token under which the original exception waits, and
``jvm.errors.convert_errors`` gives the user that typed exception back.

Deletion vectors: a relation over a table that supports them reads with the JVM helper's
``DeletionVectorParquetFormat``, and each listed file carries its deleted rows (a roaring
bitmap) to the reader. Column mapping: the relation's schema has the logical names, and its
format (``ColumnMappedParquetFormat``, or the deletion-vector one) asks the files for the
physical names; partition values and statistics are looked up by physical name.

The module is a little over 500 lines because it is the whole Python side of one JVM
interface (``DeltaTables.java``): splitting it would split the callbacks of one protocol.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import unquote, urlparse
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.expressions.nodes import and_all
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.log.table_paths import data_file_path
from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
    physical_name,
    to_physical_schema,
)
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    read_deletion_vector,
)
from delta_pyspark.core.protocol.schema import StructType, read_schema
from delta_pyspark.core.protocol.type_widening import needs_row_reader
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms, split_path_suffix
from delta_pyspark.core.storage.locations import to_local_path
from delta_pyspark.core.storage.log_store import log_store_for, table_root_of
from delta_pyspark.core.transaction import row_tracking
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
    DeltaPathNotFoundError,
    DeltaPlannerUnsupportedError,
    DeltaSchemaChangedError,
    DeltaTableNotFoundError,
)
from delta_pyspark.spark.catalog.managed_tables import execution_snapshot
from delta_pyspark.spark.commands.write_command import WriteRequest, write_delta
from delta_pyspark.spark.files.scan import DeltaFileNotFoundError, ScanReport, even_split_bytes
from delta_pyspark.spark.jvm.bridge import (
    java_frame,
    python_frame,
    python_session,
    read_through_jvm,
)
from delta_pyspark.spark.jvm.connect import replay_write
from delta_pyspark.spark.jvm.errors import convert_errors, pass_on_jvm_error
from delta_pyspark.spark.jvm.helpers import listed_tables_of, serve_delta_source
from delta_pyspark.spark.jvm.hooks import classic_in_callbacks
from delta_pyspark.spark.sources import change_feed, streaming
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EXTENSIONS = "deltapyspark.DeltaSparkExtensions"
PARTITION_COLUMNS_OPTION = "__partition_columns"  # how Spark hands partitionBy to a V1 source
_NULL = "\x01"  # a null partition value in a listing (the log's strings never hold it)


def time_travel(
    path: str, options: dict[str, str], time_zone: str
) -> tuple[str, int | None, int | None]:
    """``(table path, version, timestamp ms)`` a read of ``path`` with ``options`` asks for:
    ``versionAsOf``/``timestampAsOf`` options or a ``@v``/``@ts`` path suffix (None: latest)."""
    tz = ZoneInfo(time_zone)
    path, version, ts = split_path_suffix(path, tz)
    lowered = {k.lower(): v for k, v in options.items()}
    if "versionasof" in lowered:
        version = int(lowered["versionasof"])
    if "timestampasof" in lowered:
        ts = parse_timestamp_ms(lowered["timestampasof"], tz)
    if version is not None and ts is not None:
        raise DeltaIllegalArgumentException("give either versionAsOf or timestampAsOf, not both")
    return path, version, ts


def check_files_exist(snapshot: Snapshot) -> None:
    """Raise ``DeltaFileNotFoundError`` when a file of ``snapshot`` is gone from storage.

    For time travel, whose old versions VACUUM removes files of: Spark would only fail when a
    task opens the file, with an error that does not say why it is missing.
    """
    store = log_store_for(snapshot.table_root)
    for path in snapshot.files.column("path").to_pylist():
        full = data_file_path(snapshot.table_root, path)
        if not store.exists(full):
            raise DeltaFileNotFoundError(
                f"{full} of version {snapshot.version} is missing from storage. It was "
                "probably deleted by VACUUM or by hand; restore it or time travel to a "
                "version that does not reference it."
            )


def _supports_vectors(snapshot: Snapshot) -> bool:
    """Whether files of ``snapshot`` (or of later versions) may have deletion vectors."""
    features = snapshot.protocol.reader_features or frozenset()
    return "deletionVectors" in features or _has_vectors(snapshot.files)


def _has_vectors(files: pa.Table) -> bool:
    """Whether a file of ``files`` has rows to leave out (its vector, or change data's)."""
    column = "deletedRows" if "deletedRows" in files.column_names else "deletionVector"
    return bool(pc.any(pc.is_valid(files.column(column))).as_py())


@dataclass
class _Relation:
    """One relation Spark made over a table (small: snapshots are shared, see ``DeltaTables``)."""

    root: str
    version: int | None  # pinned by time travel
    schema: StructType
    partition_columns: list[str]
    vectors: bool  # its format drops the rows deletion vectors mark
    report: ScanReport | None = None
    fixed: pa.Table | None = None  # a micro-batch's files (no listing of a snapshot)
    extra: tuple[str, ...] = ()  # partition columns besides the table's (change data)
    row_tracking: bool = False  # its files are listed with their row tracking constants


@classic_in_callbacks
class DeltaTables:
    """The JVM's ``deltapyspark.DeltaTables``: the Python core answering ``DeltaFileIndex``.

    Relations live as long as the process (the JVM does not say when it drops one), so they hold
    no snapshot: the latest snapshot of each table is kept once and brought up to date
    incrementally at each listing, and a few time-travel snapshots are kept besides.
    """

    _PINNED_KEPT = 8

    def __init__(self) -> None:
        self._relations: dict[str, _Relation] = {}
        self._pinned: OrderedDict[tuple[str, int], Snapshot] = OrderedDict()
        self._ids = itertools.count()
        self._lock = threading.RLock()

    def resolve(self, path: str, options: dict[str, str], time_zone: str) -> tuple[Snapshot, bool]:
        """The snapshot a read of ``path`` with ``options`` starts from, and whether time
        travel pins it."""
        root, version, ts = time_travel(path, options, time_zone)
        log = DeltaLog(root)
        try:
            if ts is not None:
                version = log.snapshot_at_timestamp(ts).version
            return self._snapshot(log.table_root, version), version is not None
        except DeltaTableNotFoundError:
            store = log.store
            if store.is_dir(log.table_root) or store.exists(log.table_root):  # a prefix on S3
                raise
            raise DeltaPathNotFoundError(
                f"[PATH_NOT_FOUND] Path does not exist: {log.table_root}"
            ) from None

    def _snapshot(self, root: str, version: int | None) -> Snapshot:
        with self._lock:
            if version is None:
                log = DeltaLog.for_table(root)
                return execution_snapshot(log) or log.snapshot()
            key = (root, version)
            snapshot = self._pinned.pop(key, None) or DeltaLog(root).snapshot(version)
            self._pinned[key] = snapshot
            while len(self._pinned) > self._PINNED_KEPT:
                self._pinned.popitem(last=False)
            return snapshot

    def _open_changes(self, token: str) -> str:
        snapshot, files, in_files = change_feed.take_registered(token)
        data, parts, physical = change_feed.relation_schemas(snapshot, in_files)
        table_id = str(next(self._ids))
        extra = tuple(f.name for f in change_feed.extra_fields(in_files))
        vectors = _has_vectors(files)
        self._relations[table_id] = _Relation(
            snapshot.table_root, snapshot.version, snapshot.schema, [], vectors, None, files, extra
        )
        return _opened(table_id, snapshot, data, parts, vectors, physical)

    def open(self, path: str, options: str, timeZone: str) -> str:
        try:
            opts = _options(options)
            if change_feed.CHANGES_OPTION in opts:
                return self._open_changes(opts[change_feed.CHANGES_OPTION])
            fixed = None
            if streaming.END_OPTION in opts:
                snapshot, fixed = streaming.batch_files(to_local_path(path), opts)
                pinned = True
            else:
                snapshot, pinned = self.resolve(path, opts, timeZone)
                if pinned:
                    check_files_exist(snapshot)
            schema = snapshot.schema
            mode = column_mapping_mode(snapshot.configuration)
            physical = None if mode == "none" else to_physical_schema(schema, mode).to_json()
            parts = snapshot.partition_columns
            table_id = str(next(self._ids))
            vectors = _supports_vectors(snapshot) or (fixed is not None and _has_vectors(fixed))
            row_ids = None
            if fixed is None and row_tracking.is_enabled(snapshot.protocol, snapshot.metadata):
                row_ids = row_tracking.materialized_column_names(
                    snapshot.metadata, snapshot.table_root
                )
            self._relations[table_id] = _Relation(
                snapshot.table_root,
                snapshot.version if pinned else None,
                schema,
                parts,
                vectors,
                fixed=fixed,
                row_tracking=row_ids is not None,
            )
            part_schema = StructType(tuple(schema.field(c) for c in parts))
            return _opened(table_id, snapshot, schema, part_schema, vectors, physical, row_ids)
        except Exception as e:  # answered as text: the JVM raises it as an AnalysisException
            return answer_error(e)

    def listFiles(self, tableId: str, filters: str, timeZone: str, packing: str) -> bytes:
        try:
            relation = self._relations[tableId]
            snapshot = self._snapshot(relation.root, relation.version)
            if relation.fixed is not None:  # a micro-batch: Spark filters its rows
                files = relation.fixed
            else:
                _check_compatible(relation, snapshot)
                predicate = and_all(parse_predicate(f) for f in filters.split("\0") if f)
                files = prune_files(snapshot, predicate, timeZone)
            if not relation.vectors and _has_vectors(files):
                raise DeltaPlannerUnsupportedError(
                    f"{snapshot.table_root} (version {snapshot.version}): deletion vectors "
                    "were enabled since this DataFrame was created: create it again"
                )
            relation.report = ScanReport(snapshot.version, snapshot.num_files, files.num_rows)
            split = None
            if packing:
                limit, open_cost, slots = map(int, packing.split(","))
                split = even_split_bytes(files.column("size"), limit, open_cost, slots)
            head = f"O{split or ''}\0{'r' if relation.row_tracking else ''}\0".encode()
            return head + _encode(snapshot, files, relation.extra, relation.row_tracking)
        except Exception as e:
            return answer_error(e).encode()

    def changes(self, session: Any, path: str, options: str, timeZone: str) -> Any:
        """A change data feed read (``readChangeFeed``): the JVM ``Dataset`` of its rows,
        which ``ChangeFeedRelation`` scans, or an error answer."""
        try:
            spark = python_session(session)
            opts = _options(options)
            if streaming.END_OPTION in opts:  # a change feed stream's micro-batch
                batch = streaming.change_batch(to_local_path(path), opts)
                return java_frame(change_feed.changes_frame(spark, *batch))
            return java_frame(
                change_feed.read_change_feed(spark, to_local_path(path), opts, timeZone)
            )
        except Exception as e:
            return answer_error(e)

    def write(self, session: Any, path: str, mode: str, options: str, data: Any) -> str:
        """A write Spark planned (``save``, CTAS, a SQL insert) as the Python write command."""
        try:
            if not path:
                raise DeltaIllegalArgumentException("save() on a delta writer needs a path")
            spark = python_session(session)
            opts = _options(options)
            opts.pop("path", None)
            partitions = opts.pop(PARTITION_COLUMNS_OPTION, None)
            request = WriteRequest(mode, json.loads(partitions) if partitions else None, opts)
            # Spark names a catalog table's location as a URI (file:/...)
            write_delta(spark, python_frame(data, spark), to_local_path(path), request)
            return "O"
        except Exception as e:
            return answer_error(e)

    # ------------------------------------------------------------ streaming

    def streamSchema(self, path: str, options: str) -> str:
        try:
            spark_json, log_schema = streaming.stream_schema(to_local_path(path), _options(options))
            return f"O{spark_json}\0{log_schema}"
        except Exception as e:
            return answer_error(e)

    def streamOffset(
        self,
        path: str,
        options: str,
        schemaString: str,
        start: str,
        limited: bool,
        endVersion: int,
    ) -> str:
        try:
            return "O" + streaming.stream_offset(
                to_local_path(path), _options(options), schemaString, start, limited, endVersion
            )
        except Exception as e:
            return answer_error(e)

    def latestVersion(self, path: str) -> str:
        try:
            return f"O{streaming.latest_version(to_local_path(path))}"
        except Exception as e:
            return answer_error(e)

    def writeStream(
        self,
        session: Any,
        path: str,
        batchId: int,
        queryId: str,
        outputMode: str,
        options: str,
        data: Any,
    ) -> str:
        try:
            spark = python_session(session)
            opts = _options(options)
            opts.pop("path", None)
            opts.pop("checkpointLocation", None)
            partitions = opts.pop(PARTITION_COLUMNS_OPTION, None)
            streaming.write_stream(
                spark,
                python_frame(data, spark),
                to_local_path(path),
                batchId,
                queryId,
                outputMode,
                opts,
                json.loads(partitions) if partitions else None,
            )
            return "O"
        except Exception as e:
            return answer_error(e)

    def connectWrite(self, planner: Any, command: bytes) -> str:
        try:
            replay_write(planner, bytes(command))
            return "O"
        except Exception as e:
            return answer_error(e)

    def report(self, table_id: str) -> ScanReport | None:
        relation = self._relations.get(table_id)
        return relation.report if relation is not None else None

    class Java:
        implements: ClassVar[list[str]] = ["deltapyspark.DeltaTables"]


def _opened(
    table_id: str,
    snapshot: Snapshot,
    schema: StructType,
    part_schema: StructType,
    vectors: bool,
    physical: dict[str, Any] | None,
    row_ids: tuple[str, str] | None = None,
) -> str:
    """``open``'s answer (see ``DeltaTables.java``); ``physical``: the physical schema
    under column mapping; ``row_ids``: the materialized row tracking columns, when the
    relation's ``_metadata`` carries row ids."""
    return "O" + "\0".join(
        [
            table_id,
            snapshot.table_root,
            to_spark_type(read_schema(schema)).json(),
            to_spark_type(part_schema).json(),
            str(snapshot.size_in_bytes),
            "dv" if vectors else "",
            json.dumps(physical) if physical else "",
            "rows" if needs_row_reader(schema) else "",
            *(row_ids or ("", "")),
        ]
    )


def _options(encoded: str) -> dict[str, str]:
    """Options as the JVM encodes them: ``key NUL value NUL ...``."""
    fields = encoded.split("\0")[:-1]
    return dict(zip(fields[::2], fields[1::2], strict=True))


def _check_compatible(relation: _Relation, now: Snapshot) -> None:
    """The relation's schema was fixed at analysis: ``now`` must still hold each of its columns,
    with its type, and the same partition columns."""
    changes = []
    for old in relation.schema.fields:
        new = now.schema.find_field(old.name, case_sensitive=False)
        if new is None:
            changes.append(f"column {old.name!r} was dropped")
        elif new.type != old.type:
            changes.append(f"column {old.name!r} changed type")
    if now.partition_columns != relation.partition_columns:
        changes.append("the partition columns changed")
    if changes:
        raise DeltaSchemaChangedError(
            f"the schema of the Delta table at {now.table_root} changed incompatibly since this "
            f"DataFrame was created (now version {now.version}: {'; '.join(changes)}): create "
            "the DataFrame again"
        )


def _encode(
    snapshot: Snapshot, files: pa.Table, extra: tuple[str, ...] = (), row_ids: bool = False
) -> bytes:
    """``files`` as ``DeltaFileIndex`` parses them, files of one partition adjacent;
    ``extra``: partition columns besides the table's (their values are in the files');
    ``row_ids``: each file with its base row id and default row commit version."""
    root = snapshot.table_root
    mode = column_mapping_mode(snapshot.configuration)
    parts = [physical_name(snapshot.schema.field(c), mode) for c in snapshot.partition_columns]
    parts += extra
    paths = files.column("path").to_pylist()
    sizes = files.column("size").to_pylist()
    mtimes = files.column("modificationTime").to_pylist()
    vectors = [""] * len(paths)
    if "deletedRows" in files.column_names:  # change data: the rows to leave out, serialized
        for i, rows in enumerate(files.column("deletedRows").to_pylist()):
            vectors[i] = base64.b64encode(rows).decode() if rows is not None else ""
    elif _has_vectors(files):
        store = log_store_for(root)
        for i, dv in enumerate(files.column("deletionVector").to_pylist()):
            if dv is not None:
                rows = read_deletion_vector(DeletionVectorDescriptor.from_dict(dv), root, store)
                vectors[i] = base64.b64encode(rows.serialize()).decode()
    if parts:
        values = [
            tuple(v if v else _NULL for v in map(dict(pv or []).get, parts))
            for pv in files.column("partitionValues").to_pylist()
        ]
    else:
        values = [()] * len(paths)
    if row_ids:
        constants = [
            f"{_text(base)}\0{_text(version)}\0"
            for base, version in zip(
                files.column("baseRowId").to_pylist(),
                files.column("defaultRowCommitVersion").to_pylist(),
                strict=True,
            )
        ]
    else:
        constants = [""] * len(paths)
    rows = zip(values, paths, sizes, mtimes, vectors, constants, strict=True)
    out = []
    for pv, path, size, mtime, vector, constant in sorted(rows) if parts else rows:
        out.append(f"{data_file_path(root, path)}\0{size}\0{mtime}\0{vector}\0{constant}")
        out.extend(f"{v}\0" for v in pv)
    return "".join(out).encode()


def _text(value: int | None) -> str:
    return "" if value is None else str(value)


TABLES = DeltaTables()


# A failure of ``open``/``listFiles`` reaches the JVM as text and comes back to Python as
# an AnalysisException; the text carries a token under which the original exception waits,
# so the user catches the same typed error (``CorruptLogError``, ...) a Python read raises.
_FAILURES: OrderedDict[str, BaseException] = OrderedDict()
_FAILURES_KEPT = 64
_FAILURES_LOCK = threading.Lock()
_TOKEN = re.compile(r"\[delta-pyspark failure ([0-9a-f]{16})\]")


def answer_error(error: BaseException) -> str:
    token = secrets.token_hex(8)
    with _FAILURES_LOCK:
        _FAILURES[token] = error
        while len(_FAILURES) > _FAILURES_KEPT:
            _FAILURES.popitem(last=False)
    message = f"{type(error).__name__}: {error} [delta-pyspark failure {token}]"
    pass_on_jvm_error(token, message, error)
    return f"E{message}"


def _original_failure(message: str) -> BaseException | None:
    """The Python exception behind a JVM error message carrying one of our answers' tokens,
    or ``DeltaFileNotFoundError`` for Spark's failure to open a missing file of a Delta
    table."""
    found = _TOKEN.search(message)
    if found is None:
        return _missing_table_file(message)
    with _FAILURES_LOCK:
        return _FAILURES.get(found.group(1))


# Spark's scan opening a file that storage lacks: FAILED_READ_FILE.FILE_NOT_EXIST
_FILE_NOT_EXIST = re.compile(r"\[FAILED_READ_FILE\.FILE_NOT_EXIST\][^\n]*? file (\S+?)\. ")


def _missing_table_file(message: str) -> DeltaFileNotFoundError | None:
    """The typed error for a scan's missing data file, when the file is in a Delta table
    (a table's file vanished: vacuumed by another engine, deleted by hand); the log still
    names it, so every read of this version fails until it is restored."""
    found = _FILE_NOT_EXIST.search(message)
    if found is None:
        return None
    uri = found.group(1)
    file = unquote(urlparse(uri).path) if uri.startswith("file:") else unquote(uri)
    root = table_root_of(file)
    if root is None:
        return None
    return DeltaFileNotFoundError(
        f"{file} of the Delta table at {root} is missing from storage: the table's log "
        "names it, so reads of this version fail. It was deleted by hand or by another "
        "engine; restore the file, RESTORE the table to a version that does not name it, "
        "or set spark.sql.files.ignoreMissingFiles=true to read what is left."
    )


def enable(spark: SparkSession) -> bool:
    """Register this process's ``DeltaTables`` with the session's JVM (idempotent); False when
    the session cannot read through the planner (no helper jar or no session extension)."""
    extensions = spark.sparkContext.getConf().get("spark.sql.extensions", "") or ""
    if EXTENSIONS not in extensions:
        return False
    convert_errors(_original_failure)
    return serve_delta_source(spark, TABLES)


def load(spark: SparkSession, path: str, options: dict[str, str]) -> DataFrame:
    """``spark.read.format("delta").options(options).load(path)`` as Spark itself resolves it."""
    return read_through_jvm(spark, "delta", path, options)


def scan_report(df: DataFrame) -> ScanReport | None:
    """Files kept by the listing of the (first) Delta table ``df`` reads through the planner,
    planning ``df`` if no action did yet (None: ``df`` reads no such table)."""
    for table_id in listed_tables_of(df):
        report = TABLES.report(table_id)
        if report is not None:
            return report
    return None
