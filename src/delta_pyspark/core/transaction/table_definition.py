"""A table's definition: the one place that turns a schema, partition columns, properties
and a description into the ``metaData`` action of a new table (CREATE, a first write,
CONVERT, the core's ``create_table``) or of a redefined one (REPLACE, an overwrite that
replaces the schema), for the builder, DataFrame writes, SQL and CONVERT alike.

A redefinition keeps the table's id (PROTOCOL.md: the id is the table's identity, and a
reader's cached state must see the same table); partition columns are checked against
the schema and spelled as the schema spells them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from delta_pyspark.core.protocol.actions import Metadata, Protocol
from delta_pyspark.core.protocol.schema import StructType, parse_schema_string, schema_to_string
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.uniform.compat import creation_defaults
from delta_pyspark.exceptions import DeltaAnalysisException


def partition_names(schema: StructType, partition_columns: Sequence[str]) -> list[str]:
    """``partition_columns`` as the schema spells them (matched in any case); each must be
    a top-level column."""
    out = []
    for c in partition_columns:
        field = schema.find_field(c, case_sensitive=False)
        if field is None:
            raise DeltaAnalysisException(
                f"partition column {c!r} is not a column of the table {schema.field_names}"
            )
        out.append(field.name)
    return out


def table_metadata(
    current: Metadata | None,
    schema: StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
    *,
    description: str | None = None,
    name: str | None = None,
    keep_description: bool = False,
) -> Metadata:
    """The ``metaData`` of a new table (``current`` None: a fresh id, created now, ``name``)
    or of ``current``'s table redefined (its id and name kept; its description too when
    ``keep_description``, as an overwrite that only replaces the schema does)."""
    parts = partition_names(schema, partition_columns)
    if current is None:
        return Metadata.create(
            schema_to_string(schema),
            parts,
            creation_defaults(configuration),
            name,
            description,
            created_time=time.time_ns() // 1_000_000,
        )
    metadata = current.with_changes(
        schema_string=schema_to_string(schema),
        partition_columns=tuple(parts),
        configuration=creation_defaults(configuration),
    )
    return metadata if keep_description else metadata.with_changes(description=description)


def create_table(
    log: DeltaLog,
    schema_string: str,
    partition_columns: list[str] | None = None,
    configuration: Mapping[str, str] | None = None,
    protocol: Protocol | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Snapshot:
    """Commit version 0 of a new table (core API, no Spark involved)."""
    txn = Transaction(log, None)
    txn.update_protocol(protocol or Protocol(1, 2))
    metadata = table_metadata(
        None,
        parse_schema_string(schema_string),
        partition_columns or [],
        configuration or {},
        description=description,
        name=name,
    )
    txn.update_metadata(metadata.with_changes(schema_string=schema_string))  # as spelled
    return txn.commit("CREATE TABLE", {"partitionBy": list(partition_columns or [])})
