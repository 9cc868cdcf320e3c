"""Protocol actions (PROTOCOL.md "Actions") and their Arrow layout.

Non-file actions (protocol, metaData, txn, domainMetadata, commitInfo, checkpoint
metadata, sidecar) are few per table and live as small dataclasses. File actions
(add, remove, cdc) can number in the millions, so snapshots hold them as Arrow
tables with the checkpoint's column layout (``ADD_SCHEMA``/``REMOVE_SCHEMA``);
writers build them as plain dicts with the protocol's JSON keys.

Those dicts (and every action's JSON form) have a ``TypedDict`` here, for the type checker
only: at run time they are plain dicts. Names: delta-spark's class name for an action that
lives only as a dict (``AddFile``, ``RemoveFile``, ``AddCDCFile``, ``CommitInfo``), and a
dataclass's name plus ``Json`` for the form its ``to_dict`` gives (``ProtocolJson``,
``MetadataJson``, ``DomainMetadataJson``, ``DeletionVectorJson``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, cast

import pyarrow as pa

from delta_pyspark.exceptions import CorruptLogError

STRING_MAP = pa.map_(pa.string(), pa.string())

DELETION_VECTOR_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)

ADD_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DELETION_VECTOR_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)

REMOVE_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DELETION_VECTOR_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)


class DeletionVectorJson(TypedDict):
    """A file action's ``deletionVector`` (PROTOCOL.md "Deletion Vector Descriptor Schema")."""

    storageType: str  # u (relative path) | p (absolute path) | i (inline)
    pathOrInlineDv: str
    offset: NotRequired[int]
    sizeInBytes: int
    cardinality: int
    maxRowIndex: NotRequired[int]


class AddFile(TypedDict):
    """``add``: a data file joins the table."""

    path: str
    # values are a partition's serialized values; None is a null partition value
    partitionValues: dict[str, str | None]
    size: int
    modificationTime: int
    dataChange: bool
    stats: NotRequired[str]
    tags: NotRequired[dict[str, str]]
    deletionVector: NotRequired[DeletionVectorJson]
    baseRowId: NotRequired[int]
    defaultRowCommitVersion: NotRequired[int]
    clusteringProvider: NotRequired[str]


class RemoveFile(TypedDict):
    """``remove``: a data file leaves the table (a tombstone until VACUUM); with
    ``extendedFileMetadata`` it carries the add's fields too."""

    path: str
    deletionTimestamp: NotRequired[int]
    dataChange: bool
    extendedFileMetadata: NotRequired[bool]
    partitionValues: NotRequired[dict[str, str | None]]
    size: NotRequired[int]
    stats: NotRequired[str]
    tags: NotRequired[dict[str, str]]
    deletionVector: NotRequired[DeletionVectorJson]
    baseRowId: NotRequired[int]
    defaultRowCommitVersion: NotRequired[int]


class AddCDCFile(TypedDict):
    """``cdc``: a change data file of the commit (never part of the table's rows)."""

    path: str
    partitionValues: dict[str, str | None]
    size: int
    dataChange: bool
    tags: NotRequired[dict[str, str]]


class CommitInfo(TypedDict, total=False):
    """``commitInfo``: free-form in the protocol; these are the fields delta-spark writes and
    this package writes or reads (other writers' extra fields stay in the dict)."""

    inCommitTimestamp: int
    timestamp: int
    operation: str
    operationParameters: dict[str, str | None]
    readVersion: int
    isolationLevel: str
    isBlindAppend: bool
    operationMetrics: dict[str, str]
    userMetadata: str
    engineInfo: str
    txnId: str


class ProtocolJson(TypedDict):
    """``protocol``'s JSON form (``Protocol.to_dict``)."""

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: NotRequired[list[str]]
    writerFeatures: NotRequired[list[str]]


class FormatJson(TypedDict):
    """``metaData.format``."""

    provider: str
    options: dict[str, str]


class MetadataJson(TypedDict):
    """``metaData``'s JSON form (``Metadata.to_dict``)."""

    id: str
    name: NotRequired[str]
    description: NotRequired[str]
    format: FormatJson
    schemaString: str
    partitionColumns: list[str]
    configuration: dict[str, str]
    createdTime: NotRequired[int]


class DomainMetadataJson(TypedDict):
    """``domainMetadata``'s JSON form (``DomainMetadata.to_dict``)."""

    domain: str
    configuration: str
    removed: bool


_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)


def _require(d: Mapping[str, Any], key: str, action: str) -> Any:
    if key not in d or d[key] is None:
        raise CorruptLogError(f"{action} action is missing required field {key!r}")
    return d[key]


def _string(d: Mapping[str, Any], key: str, action: str, required: bool = False) -> str | None:
    """Field ``key`` as a string (None when absent and optional); anything else is corrupt."""
    value = _require(d, key, action) if required else d.get(key)
    if value is None or isinstance(value, str):
        return value
    raise CorruptLogError(f"{action}.{key} must be a string, not {type(value).__name__}")


def _long(
    d: Mapping[str, Any], key: str, action: str, required: bool = False, minimum: int = 0
) -> int | None:
    """Field ``key`` as an integer in ``[minimum, 2^63)`` (a JSON long), or None if optional."""
    value = _require(d, key, action) if required else d.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptLogError(f"{action}.{key} must be an integer, not {type(value).__name__}")
    if not minimum <= value <= _INT64_MAX:
        raise CorruptLogError(f"{action}.{key} = {value} is out of range")
    return value


def _string_map(d: Mapping[str, Any], key: str, action: str) -> dict[str, str]:
    """Field ``key`` as a map of strings (empty when absent)."""
    value = d.get(key)
    if not value:  # absent, or an empty map (read back from Parquet as an empty list)
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise CorruptLogError(f"{action}.{key} must be a map of strings")
    return dict(value)


def _string_list(d: Mapping[str, Any], key: str, action: str) -> list[str] | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CorruptLogError(f"{action}.{key} must be a list of strings")
    return value


@dataclass(frozen=True)
class Protocol:
    """Reader/writer versions and, from (3, 7), the explicit feature lists."""

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Protocol:
        rf = _string_list(d, "readerFeatures", "protocol")
        wf = _string_list(d, "writerFeatures", "protocol")
        reader = _long(d, "minReaderVersion", "protocol", required=True, minimum=1)
        writer = _long(d, "minWriterVersion", "protocol", required=True, minimum=1)
        assert reader is not None and writer is not None
        return cls(
            reader,
            writer,
            frozenset(rf) if rf is not None else None,
            frozenset(wf) if wf is not None else None,
        )

    def to_dict(self) -> ProtocolJson:
        d: ProtocolJson = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            d["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            d["writerFeatures"] = sorted(self.writer_features)
        return d


@dataclass(frozen=True)
class Metadata:
    """The ``metaData`` action: schema, partitioning and table properties."""

    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict)
    created_time: int | None = None

    @classmethod
    def create(
        cls,
        schema_string: str,
        partition_columns: list[str] | tuple[str, ...] = (),
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        created_time: int | None = None,
    ) -> Metadata:
        return cls(
            id=str(uuid.uuid4()),
            schema_string=schema_string,
            partition_columns=tuple(partition_columns),
            configuration=dict(configuration or {}),
            name=name,
            description=description,
            created_time=created_time,
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Metadata:
        fmt = d.get("format") or {}
        if not isinstance(fmt, Mapping):
            raise CorruptLogError("metaData.format must be an object")
        return cls(
            id=str(_string(d, "id", "metaData", required=True)),
            # Validated when the snapshot's final metadata is known: some writers emit
            # a schemaless metaData first and the real one in a later commit.
            schema_string=_string(d, "schemaString", "metaData") or "",
            partition_columns=tuple(_string_list(d, "partitionColumns", "metaData") or ()),
            configuration=_string_map(d, "configuration", "metaData"),
            name=_string(d, "name", "metaData"),
            description=_string(d, "description", "metaData"),
            format_provider=_string(fmt, "provider", "metaData.format") or "parquet",
            format_options=_string_map(fmt, "options", "metaData.format"),
            created_time=_long(d, "createdTime", "metaData", minimum=_INT64_MIN),
        )

    def to_dict(self) -> MetadataJson:
        # built key by key: the JSON keeps delta-spark's order (name and description first)
        d: dict[str, Any] = {"id": self.id}
        if self.name is not None:
            d["name"] = self.name
        if self.description is not None:
            d["description"] = self.description
        d["format"] = FormatJson(provider=self.format_provider, options=dict(self.format_options))
        d["schemaString"] = self.schema_string
        d["partitionColumns"] = list(self.partition_columns)
        d["configuration"] = dict(self.configuration)
        if self.created_time is not None:
            d["createdTime"] = self.created_time
        return cast(MetadataJson, d)

    def with_changes(self, **changes: Any) -> Metadata:
        """A copy with some fields replaced (metadata is immutable per version)."""
        values = {**self.__dict__, **changes}
        return Metadata(**values)


@dataclass(frozen=True)
class SetTransaction:
    """``txn``: the last version an application committed (idempotent writes)."""

    app_id: str
    version: int
    last_updated: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SetTransaction:
        version = _long(d, "version", "txn", required=True, minimum=_INT64_MIN)
        assert version is not None
        return cls(
            str(_string(d, "appId", "txn", required=True)),
            version,
            _long(d, "lastUpdated", "txn", minimum=_INT64_MIN),
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"appId": self.app_id, "version": self.version}
        if self.last_updated is not None:
            d["lastUpdated"] = self.last_updated
        return d


@dataclass(frozen=True)
class DomainMetadata:
    """``domainMetadata``: a named configuration string; ``removed`` is a tombstone."""

    domain: str
    configuration: str
    removed: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DomainMetadata:
        removed = d.get("removed", False)
        if not isinstance(removed, bool):
            raise CorruptLogError("domainMetadata.removed must be a boolean")
        return cls(
            str(_string(d, "domain", "domainMetadata", required=True)),
            _string(d, "configuration", "domainMetadata") or "",
            removed,
        )

    def to_dict(self) -> DomainMetadataJson:
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}


@dataclass(frozen=True)
class Sidecar:
    """A v2 checkpoint's pointer to a Parquet file of add/remove actions."""

    path: str
    size_in_bytes: int
    modification_time: int
    tags: Mapping[str, str] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sidecar:
        return cls(
            str(_string(d, "path", "sidecar", required=True)),
            _long(d, "sizeInBytes", "sidecar") or 0,
            _long(d, "modificationTime", "sidecar", minimum=_INT64_MIN) or 0,
            _string_map(d, "tags", "sidecar") if d.get("tags") is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "sizeInBytes": self.size_in_bytes,
            "modificationTime": self.modification_time,
        }
        if self.tags is not None:
            d["tags"] = dict(self.tags)
        return d


def _nullable_string_map(d: Mapping[str, Any], key: str, action: str) -> None:
    value = d.get(key)
    if value is None:
        return
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()
    ):
        raise CorruptLogError(f"{action}.{key} must be a map of strings")


# The fields PROTOCOL.md marks required for each file action (``path`` first).
REQUIRED_FIELDS = {
    "add": ("path", "partitionValues", "size", "modificationTime", "dataChange"),
    "remove": ("path", "dataChange"),
    "cdc": ("path", "partitionValues", "size", "dataChange"),
}


def check_file_action(kind: str, body: Mapping[str, Any]) -> None:
    """Raise ``CorruptLogError`` naming the field if an ``add``/``remove``/``cdc`` action
    lacks a required field or has one of the wrong JSON type or range (what the Arrow
    layout alone cannot tell apart, e.g. a size past 2^63 or a boolean given as a string)."""
    if not isinstance(body.get("path"), str):
        raise CorruptLogError(f"{kind} action without a path")
    for key in REQUIRED_FIELDS[kind]:
        _require(body, key, kind)
    # ranges beyond a long's are for the state (``log.validation``), as for both parsers
    for key in ("size", "modificationTime", "deletionTimestamp"):
        _long(body, key, kind, minimum=_INT64_MIN)
    for key in ("baseRowId", "defaultRowCommitVersion"):
        _long(body, key, kind, minimum=_INT64_MIN)
    for key in ("dataChange", "extendedFileMetadata"):
        if body.get(key) is not None and not isinstance(body[key], bool):
            raise CorruptLogError(f"{kind}.{key} must be a boolean")
    for key in ("partitionValues", "tags"):
        _nullable_string_map(body, key, kind)
    _string(body, "stats", kind)
    dv = body.get("deletionVector")
    if dv is not None and not isinstance(dv, Mapping):
        raise CorruptLogError(f"{kind}.deletionVector must be an object")


def commit_timestamp(commit_info: Mapping[str, Any] | None) -> int | None:
    """``inCommitTimestamp`` if present, else the writer's ``timestamp``."""
    if not commit_info:
        return None
    ts = commit_info.get("inCommitTimestamp", commit_info.get("timestamp"))
    return int(ts) if ts is not None else None


def file_actions_to_arrow(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """File action dicts (protocol JSON keys) to an Arrow table; maps become map arrays."""
    cleaned = []
    names = schema.names
    for row in rows:
        out = {k: row.get(k) for k in names}
        for key in ("partitionValues", "tags"):
            value = out.get(key)
            if isinstance(value, dict):
                out[key] = list(value.items())
        cleaned.append(out)
    try:
        return pa.Table.from_pylist(cleaned, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
        raise CorruptLogError(f"malformed file action: {e}") from e


def encode_action(kind: str, body: Mapping[str, Any]) -> str:
    """One newline-free JSON line ``{"kind": body}`` as commits store actions."""
    return json.dumps({kind: body}, separators=(",", ":"), ensure_ascii=False)


def add_actions(files: pa.Table, data_change: bool = True) -> list[AddFile]:
    """``add`` action dicts (protocol JSON keys) for rows of a snapshot file table."""
    names = [n for n in ADD_SCHEMA.names if n in files.column_names]
    out: list[AddFile] = []
    for row in files.select(names).to_pylist():
        action: dict[str, Any] = {}
        for key in names:
            value = row[key]
            if value is None:
                continue
            if key in ("partitionValues", "tags"):
                value = dict(value)
            action[key] = value
        action.setdefault("partitionValues", {})
        action["dataChange"] = data_change
        if action.get("deletionVector"):
            action["deletionVector"] = {
                k: v for k, v in action["deletionVector"].items() if v is not None
            }
        out.append(cast(AddFile, action))  # the layout's columns: an add's fields
    return out


def remove_actions(
    files: pa.Table, data_change: bool = True, timestamp: int | None = None
) -> list[RemoveFile]:
    """``remove`` actions (extended file metadata) for rows of a snapshot file table."""
    import time

    ts = int(time.time() * 1000) if timestamp is None else timestamp
    out: list[RemoveFile] = []
    cols = [
        c
        for c in (
            "path",
            "partitionValues",
            "size",
            "stats",
            "tags",
            "deletionVector",
            "baseRowId",
            "defaultRowCommitVersion",
        )
        if c in files.column_names
    ]
    for row in files.select(cols).to_pylist():
        action: RemoveFile = {
            "path": row["path"],
            "deletionTimestamp": ts,
            "dataChange": data_change,
            "extendedFileMetadata": True,
            "partitionValues": dict(row.get("partitionValues") or []),
            "size": row.get("size"),
        }
        for key in ("stats", "deletionVector", "baseRowId", "defaultRowCommitVersion"):
            if row.get(key) is not None:
                action[key] = row[key]
        if row.get("tags"):
            action["tags"] = dict(row["tags"])
        out.append(action)
    return out
