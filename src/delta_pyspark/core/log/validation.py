"""What a reconciled table state must satisfy before anything reads it.

Parsing checks each action's JSON types (``actions``, ``replay``); this module
checks the state those actions add up to, column-wise over the file list, so a damaged
or hostile log is reported as ``CorruptLogError`` instead of becoming wrong rows, a
read outside the table, or a destructive guess (VACUUM deleting a file an add names):

- every ``add``/``remove`` path can name a file of the table (``table_paths``: a relative
  one that is empty or leaves the root, or an absolute one naming the root or above, cannot);
- every ``add`` has a size in ``[0, 2^63)``;
- every partition column is a schema column, and every ``add`` gives each of them a
  value (possibly null; keyed by physical name under column mapping): a missing key
  would otherwise read as null silently;
- no data file is live twice (two adds of one path with different deletion vectors).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.log.arrow_buffers import int64_scalar, utf8_scalar
from delta_pyspark.core.log.logical_files import canonical_path
from delta_pyspark.core.log.replay import TableState
from delta_pyspark.core.log.table_paths import invalid_dv_paths, invalid_file_paths
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.storage.locations import normalise
from delta_pyspark.exceptions import CorruptLogError

# Names the log file (and version) an action on a data file came from; None: the state.
Locate = Callable[[str | None], str]


def validate_state(
    state: TableState,
    schema: StructType,
    table_root: str,
    where: Locate,
    appended_only: bool = False,
) -> None:
    """Raise ``CorruptLogError`` (naming the log file, the field and the data file) if
    ``state`` breaks one of the rules in this module's docstring.

    ``appended_only``: the rows before ``state.appended`` come from a state validated under
    the same metadata, so only the appended rows are checked (and checked for a clash with
    the others): a refresh after one commit stays independent of the table's size.
    """
    assert state.metadata is not None
    parts = list(state.metadata.partition_columns)
    unknown = [c for c in parts if c not in schema.field_names]
    if unknown:
        raise CorruptLogError(
            f"{where(None)}: metaData.partitionColumns names {unknown}, which the schema lacks"
        )
    files, tombstones = state.files, state.tombstones
    if appended_only:
        files = files.slice(files.num_rows - state.appended[0])
        tombstones = tombstones.slice(tombstones.num_rows - state.appended[1])
    root = normalise(table_root)
    for table, kind in ((files, "add"), (tombstones, "remove")):
        _check_paths(table, kind, root, where)
    if files.num_rows == 0:
        return
    _check_sizes(files, where)
    mode = column_mapping_mode(state.metadata.configuration)
    physical = [physical_name(schema.field(c), mode) for c in parts]
    _check_partition_values(files, physical, where)
    # a path can clash with a row that was not appended: this check sees the whole list
    _check_unique_paths(state.files, where)


def _first(table: pa.Table, mask: pa.ChunkedArray | pa.Array) -> str | None:
    """The path of the first row of ``table`` where ``mask`` is true or null, if any."""
    hits = table.column("path").filter(pc.or_kleene(mask, pc.is_null(mask)))
    return hits[0].as_py() if len(hits) else None


def _check_paths(table: pa.Table, kind: str, root: str, where: Locate) -> None:
    if table.column("path").null_count:
        raise CorruptLogError(f"{where(None)}: an {kind} action has no path")
    bad = invalid_file_paths(root, table)
    if bad:
        raise CorruptLogError(
            f"{where(bad[0])}: {kind}.path {bad[0]!r} cannot name a file of the table (empty, "
            "the root itself, or outside it)"
        )
    vectors = invalid_dv_paths(root, table)
    if vectors:
        raise CorruptLogError(
            f"{where(None)}: {kind}.deletionVector {vectors[0]!r} cannot name a file of the "
            "table (it leads outside it)"
        )


def _check_sizes(files: pa.Table, where: Locate) -> None:
    bad = _first(files, pc.less(files.column("size"), int64_scalar(0)))  # a null size counts as bad
    if bad is not None:
        raise CorruptLogError(f"{where(bad)}: add.size of {bad!r} is missing or negative")


_ENTRIES = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))


def _check_partition_values(files: pa.Table, parts: list[str], where: Locate) -> None:
    if not parts:
        return
    entries = files.column("partitionValues").cast(_ENTRIES)
    keys = pc.struct_field(pc.list_flatten(entries), "key")
    owners = pc.list_parent_indices(entries)
    for column in parts:
        rows = pc.unique(owners.filter(pc.equal(keys, utf8_scalar(column))))
        if len(rows) != files.num_rows:
            everyone = pa.chunked_array([pa.array(range(files.num_rows), pa.int64())])
            missing = pc.invert(pc.is_in(everyone, value_set=rows))
            path = _first(files, missing)
            raise CorruptLogError(
                f"{where(path)}: add {path!r} has no partition value for partition column "
                f"{column!r}"
            )


def _check_unique_paths(files: pa.Table, where: Locate) -> None:
    if files.column("deletionVector").null_count == files.num_rows:
        return  # without vectors the reconciliation key is the path: already unique
    paths = files.column("path")
    if pc.any(pc.starts_with(paths, "file:")).as_py():
        paths = pa.chunked_array([pa.array([canonical_path(p) for p in paths.to_pylist()])])
    if pc.count_distinct(paths).as_py() == files.num_rows:
        return
    counts = pc.value_counts(paths)
    twice = counts.filter(pc.greater(counts.field("counts"), int64_scalar(1)))[0]
    path = twice["values"].as_py()
    raise CorruptLogError(
        f"{where(path)}: data file {path!r} is live twice (added with two different deletion "
        "vectors and never removed once)"
    )
