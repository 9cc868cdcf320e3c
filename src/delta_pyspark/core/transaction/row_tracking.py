"""Row tracking (PROTOCOL.md "Row Tracking"; delta-spark's RowId, RowCommitVersion,
RowTracking and MaterializedRowTrackingColumn).

While a table's protocol supports ``rowTracking`` (and ``delta.rowTrackingSuspended`` is
not true), every commit gives each new ``add`` a ``baseRowId`` above the table's row id
high-water mark (kept in the ``delta.rowTracking`` domain, raised in the same commit) and a
``defaultRowCommitVersion`` equal to the commit's version. Both are assigned per commit
attempt, so an attempt retried after a lost race takes ids above the winner's mark and the
version it finally commits at. Files re-committed without a data change keep the values
they carry (deletion-vector re-adds, RESTORE). With ``delta.enableRowTracking=true``
writers also preserve stable ids of rows they move, in the materialized columns named by
the table's configuration (the data plane writes them).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.actions import (
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    add_actions,
)
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.protocol.schema import parse_schema_string
from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.row_deletion import num_records
from delta_pyspark.exceptions import CorruptLogError, DeltaAnalysisException

FEATURE = "rowTracking"
DOMAIN = "delta.rowTracking"
HIGH_WATER_MARK_KEY = "rowIdHighWaterMark"
MISSING_HIGH_WATER_MARK = -1
# The configuration key of each materialized column's name, and the prefix of new names.
_MATERIALIZED_PREFIXES = {
    props.MATERIALIZED_ROW_ID: "_row-id-col-",
    props.MATERIALIZED_ROW_COMMIT_VERSION: "_row-commit-version-col-",
}


def is_supported(protocol: Protocol) -> bool:
    """Writers must assign fresh row ids and commit versions (the feature is listed)."""
    return supports(protocol, FEATURE)


def is_suspended(configuration: Mapping[str, str]) -> bool:
    return str(configuration.get(props.ROW_TRACKING_SUSPENDED, "")).lower() == "true"


def is_enabled(protocol: Protocol, metadata: Metadata) -> bool:
    """Readers may rely on row ids and writers preserve them (supported and enabled)."""
    conf = metadata.configuration
    enabled = str(conf.get(props.ENABLE_ROW_TRACKING, "")).lower() == "true"
    return enabled and is_supported(protocol) and not is_suspended(conf)


def materialized_column_names(metadata: Metadata, table: str) -> tuple[str, str]:
    """The columns holding preserved row ids and row commit versions (hidden from the
    schema); a table enabling row tracking without them is refused as delta-spark does."""
    names = []
    for key, what in (
        (props.MATERIALIZED_ROW_ID, "row ID"),
        (props.MATERIALIZED_ROW_COMMIT_VERSION, "row commit version"),
    ):
        name = metadata.configuration.get(key)
        if not name:
            raise DeltaAnalysisException(
                f"[DELTA_MATERIALIZED_ROW_TRACKING_COLUMN_NAME_MISSING] Materialized {what} "
                f"column name missing for {table}."
            )
        names.append(name)
    return names[0], names[1]


def with_materialized_column_names(
    protocol: Protocol, old: Metadata | None, new: Metadata
) -> Metadata:
    """``new`` with the materialized column names a table supporting row tracking needs:
    the names ``old`` (the table's current metadata) has, else fresh random ones; without
    support, none (a CLONE must not take its source's names). A name clashing with a
    column (logical or physical) is refused."""
    conf = dict(new.configuration)
    for key, prefix in _MATERIALIZED_PREFIXES.items():
        if not is_supported(protocol):
            conf.pop(key, None)
            continue
        conf[key] = (old.configuration.get(key) if old else None) or f"{prefix}{uuid.uuid4()}"
    schema = parse_schema_string(new.schema_string)
    mode = column_mapping_mode(conf)
    taken = {f.name for f in schema.fields} | {physical_name(f, mode) for f in schema.fields}
    for key in _MATERIALIZED_PREFIXES:
        if conf.get(key) in taken:
            raise DeltaAnalysisException(
                f"[DELTA_ADDING_COLUMN_WITH_INTERNAL_NAME_FAILED] Failed to add column "
                f"{conf[key]} because the name is reserved."
            )
    return new if conf == dict(new.configuration) else new.with_changes(configuration=conf)


def high_water_mark(
    domains: Iterable[DomainMetadata], default: int = MISSING_HIGH_WATER_MARK
) -> int:
    """The highest fresh row id assigned, from the ``delta.rowTracking`` domain among
    ``domains`` (a snapshot's, or a winning commit's), else ``default``."""
    for d in domains:
        if d.domain == DOMAIN and not d.removed:
            try:
                return int(json.loads(d.configuration)[HIGH_WATER_MARK_KEY])
            except (ValueError, KeyError, TypeError) as e:
                raise CorruptLogError(
                    f"domainMetadata {DOMAIN} has no valid {HIGH_WATER_MARK_KEY}: "
                    f"{d.configuration!r}"
                ) from e
    return default


def high_water_mark_domain(mark: int) -> DomainMetadata:
    return DomainMetadata(DOMAIN, json.dumps({HIGH_WATER_MARK_KEY: mark}), False)


def assign(
    protocol: Protocol,
    metadata: Metadata,
    adds: Sequence[AddFile],
    mark: int,
    version: int,
) -> tuple[list[AddFile], DomainMetadata | None]:
    """``adds`` as committed at ``version`` on a table whose high-water mark is ``mark``.

    Adds without ``baseRowId`` get the next ids (one per physical row, counted by the
    stats' ``numRecords``, which are therefore required); adds without
    ``defaultRowCommitVersion`` get ``version``. Returns them and the domain action
    raising the mark (None when no id was assigned). The input is not changed, so each
    attempt assigns afresh.
    """
    if not is_supported(protocol) or is_suspended(metadata.configuration):
        return list(adds), None
    out: list[AddFile] = []
    next_mark = mark
    for add in adds:
        if add.get("baseRowId") is not None and add.get("defaultRowCommitVersion") is not None:
            out.append(add)
            continue
        add = add.copy()
        if add.get("baseRowId") is None:
            rows = num_records(add.get("stats"))
            if rows is None:
                raise DeltaAnalysisException(
                    "[DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS] Cannot assign row IDs without "
                    f"row count statistics (file {add.get('path')} has no numRecords)."
                )
            add["baseRowId"] = next_mark + 1
            next_mark += rows
        if add.get("defaultRowCommitVersion") is None:
            add["defaultRowCommitVersion"] = version
        out.append(add)
    return out, (high_water_mark_domain(next_mark) if next_mark != mark else None)


def files_to_backfill(
    snapshot: Snapshot | None, protocol: Protocol, metadata: Metadata
) -> pa.Table | None:
    """The snapshot's files a commit must re-add (without a data change) so that they get
    row ids: those lacking them, when this commit makes the table support row tracking
    or enables it (PROTOCOL.md: every file of the version enabling it has ``baseRowId``).
    None when there is nothing to do."""
    if snapshot is None or not is_supported(protocol) or is_suspended(metadata.configuration):
        return None
    newly = not is_supported(snapshot.protocol) or (
        is_enabled(protocol, metadata) and not is_enabled(snapshot.protocol, snapshot.metadata)
    )
    files = snapshot.files
    if not newly or files.num_rows == 0:
        return None
    missing = pc.or_(
        pc.is_null(files.column("baseRowId")), pc.is_null(files.column("defaultRowCommitVersion"))
    )
    chosen = files.filter(missing)
    return chosen if chosen.num_rows else None


def backfill_actions(files: pa.Table) -> list[AddFile]:
    """``add`` actions re-committing ``files`` unchanged (``dataChange=false``), so that the
    commit assigns them row ids."""
    return add_actions(files, data_change=False)


def prepare(
    snapshot: Snapshot | None, protocol: Protocol, new_metadata: Metadata | None
) -> tuple[Metadata | None, pa.Table | None, int]:
    """What a commit settles before its first attempt: its metadata update with the
    materialized column names, the files to backfill (``files_to_backfill``) and the
    high-water mark it read."""
    old = snapshot.metadata if snapshot else None
    if new_metadata is not None:
        new_metadata = with_materialized_column_names(protocol, old, new_metadata)
    metadata = new_metadata or old
    assert metadata is not None  # a new table's commit always sets its metadata
    backfill = files_to_backfill(snapshot, protocol, metadata)
    mark = high_water_mark(snapshot.domain_metadata.values() if snapshot else ())
    return new_metadata, backfill, mark
