"""ALTER TABLE ... DROP FEATURE: remove a feature's traces from the table, then commit the
protocol without it (delta-spark's AlterTableDropFeatureDeltaCommand; which features may go
and what counts as a trace is ``feature_removal.py``).

Steps: the pre-downgrade commits (``_PRE_DOWNGRADE``) make the latest version clean; a
writer feature then drops at once. A reader-writer feature drops with checkpoint protection
(delta-spark's default, its ``tableFeatures.fastDropFeature.enabled``), or with ``TRUNCATE
HISTORY`` (or that conf off) by delta-spark's earlier two-step journey: the first call cleans
the latest version and fails asking to wait for the retention period; a later call truncates
the expired history and drops the feature when no version left uses it.

Rewriting data files (purging deletion vectors, rewriting narrower types) needs the data
plane: the caller passes those steps as ``DataRewrites``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from delta_pyspark.core.commands import feature_removal as fr
from delta_pyspark.core.commands.alter_table import set_properties, unset_properties
from delta_pyspark.core.log.checkpoint import write_checkpoint
from delta_pyspark.core.log.metadata_cleanup import (
    PROTECTION_VERSION_KEY,
    cleanup_expired_logs,
    protected_before,
)
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.schema import schema_to_string
from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.core.protocol.type_widening import has_type_changes, without_type_changes
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import (
    CannotDropCheckConstraintFeatureError,
    DeltaUnsupportedOperationException,
    FeatureDropCheckpointProtectionWaitError,
    FeatureDropConflictRevalidationError,
    FeatureDropHistoricalVersionsExistError,
    FeatureDropWaitForRetentionPeriodError,
    FileAlreadyExistsError,
)


@dataclass(frozen=True)
class DataRewrites:
    """The data plane's rewrites, each committing one REORG of the latest version:
    ``purge`` the files with deletion vectors, ``narrow_types`` the files holding a column
    in a narrower type than the table's, ``logical_names`` every file into files whose
    columns have the logical names (with the metadata without column mapping)."""

    purge: Callable[[DeltaLog], None] | None = None
    narrow_types: Callable[[DeltaLog], None] | None = None
    logical_names: Callable[[DeltaLog], None] | None = None


_MINUTE_MS = 60_000


def drop_feature(
    log: DeltaLog,
    name: str,
    truncate_history: bool = False,
    fast: bool = True,
    rewrites: DataRewrites = DataRewrites(),
) -> None:
    """Drop feature ``name`` from the table's protocol, or raise delta-spark's error.

    ``fast``: drop a reader-writer feature with checkpoint protection (unless
    ``truncate_history``).
    """
    feature = fr.feature_to_drop(log.snapshot().protocol, name, truncate_history)
    changed = _PRE_DOWNGRADE.get(feature.name, _nothing)(log, rewrites)
    if not feature.history_protection:
        _downgrade(log, feature, truncate_history, protect=False)
    elif truncate_history or not fast:
        _drop_truncating_history(log, feature, changed, truncate_history)
    else:
        for _ in range(fr.BARRIER_CHECKPOINTS):
            _empty_commit_and_checkpoint(log)
        _downgrade(log, feature, truncate_history, protect=True)
        _checkpoint(log, log.snapshot())


def _drop_truncating_history(
    log: DeltaLog, feature: fr.RemovableFeature, changed: bool, truncate: bool
) -> None:
    """The history-truncation journey (see the module docstring)."""
    _empty_commit_and_checkpoint(log)  # a clean checkpoint the next attempt can truncate to
    snapshot = log.snapshot()
    conf = snapshot.configuration
    retention = f"{props.LOG_RETENTION}={conf.get(props.LOG_RETENTION, 'interval 30 days')}"
    truncation = conf.get(fr.TRUNCATE_RETENTION_KEY, "interval 24 hours")
    if changed:
        raise FeatureDropWaitForRetentionPeriodError(
            f"Dropping {feature.name} was partially successful. The feature is now no longer "
            "used in the current version of the table. However, the feature is still present "
            "in historical versions of the table. The table feature cannot be dropped from "
            "the table protocol until these historical versions have expired. To drop the "
            "table feature from the protocol, please wait for the historical versions to "
            "expire, and then repeat this command. The retention period for historical "
            f"versions is currently configured as {retention}. Alternatively, please wait "
            f"for the TRUNCATE HISTORY retention period to expire ({truncation}) and then run: "
            "ALTER TABLE table_name DROP FEATURE feature_name TRUNCATE HISTORY"
        )
    _check_clean(feature, snapshot)
    cleanup_expired_logs(
        log.store,
        snapshot.segment.log_dir,
        fr.truncate_retention_ms(conf) if truncate else props.log_retention_ms(conf),
        granularity_ms=_MINUTE_MS if truncate else 86_400_000,
        protect_before=protected_before(snapshot.protocol, conf),
    )
    if fr.history_uses_feature(log, feature, snapshot):
        raise FeatureDropHistoricalVersionsExistError(
            f"Cannot drop {feature.name} because the Delta log contains historical versions "
            f"that use the feature. Please wait until the history retention period "
            f"({retention}) has passed since the feature was last active. Alternatively, "
            f"please wait for the TRUNCATE HISTORY retention period to expire ({truncation}) "
            "and then run: ALTER TABLE table_name DROP FEATURE feature_name TRUNCATE HISTORY"
        )
    _downgrade(log, feature, truncate, protect=False)


def _check_clean(feature: fr.RemovableFeature, snapshot: Snapshot) -> None:
    traces = feature.traces(snapshot)
    if traces:
        raise FeatureDropConflictRevalidationError(
            "Cannot drop feature because a concurrent transaction modified the table. "
            f"Please try the operation again. (version {snapshot.version} of "
            f"{snapshot.table_root} uses {feature.name}: {'; '.join(traces)})"
        )


def _downgrade(log: DeltaLog, feature: fr.RemovableFeature, truncate: bool, protect: bool) -> None:
    """The protocol downgrade commit; a concurrent winner is checked again for the feature's
    traces before the commit moves past it (delta-spark's revalidation)."""
    snapshot = log.snapshot()
    _check_clean(feature, snapshot)
    txn = Transaction(log, snapshot)
    txn.update_protocol(fr.protocol_without(snapshot.protocol, feature.name, protect))
    protect_before = snapshot.version + 1 if protect else None
    txn.update_metadata(fr.downgrade_metadata(snapshot.metadata, feature, protect_before))
    txn.prepare_commit(
        "DROP FEATURE", {"featureName": feature.name, "truncateHistory": truncate}, None, None
    )
    while True:
        data = txn.next_attempt()
        try:
            log.write_commit(txn.pending_version, data)
            break
        except FileAlreadyExistsError:
            _check_clean(feature, log.snapshot())
            txn.rebase_past_winners()
    txn.finish_commit()


def _empty_commit_and_checkpoint(log: DeltaLog) -> None:
    snapshot = Transaction(log, log.snapshot()).commit("EMPTY COMMIT")
    _checkpoint(log, snapshot)


def _checkpoint(log: DeltaLog, snapshot: Snapshot) -> None:
    """A checkpoint of ``snapshot``: v2 only while the table's policy asks for v2."""
    conf = snapshot.configuration
    v2 = supports(snapshot.protocol, "v2Checkpoint") and fr.v2_policy(conf)
    write_checkpoint(log.store, snapshot.segment.log_dir, snapshot.state, v2=v2)


# ---------------------------------------------------------------- pre-downgrade commands
# Each makes the latest version free of the feature's traces; True when it changed anything.


def _nothing(_log: DeltaLog, _rewrites: DataRewrites) -> bool:
    return False


def _needs(step: Callable[[DeltaLog], None] | None, what: str) -> Callable[[DeltaLog], None]:
    if step is None:
        raise DeltaUnsupportedOperationException(
            f"dropping this feature needs {what}, which only the Spark data plane does: "
            "use DeltaTable.dropFeatureSupport or ALTER TABLE ... DROP FEATURE"
        )
    return step


def _deletion_vectors(log: DeltaLog, rewrites: DataRewrites) -> bool:
    """Stop new vectors (unset the property), purge the files that have one, and keep the
    vector files older versions need from other clients' VACUUM (``dv_tombstones``)."""
    snapshot = log.snapshot()
    traces = bool(fr.REMOVABLE["deletionVectors"].traces(snapshot))
    if props.ENABLE_DELETION_VECTORS in snapshot.configuration:
        unset_properties(log, [props.ENABLE_DELETION_VECTORS], if_exists=True)
    if fr.REMOVABLE["deletionVectors"].traces(log.snapshot()):
        _needs(rewrites.purge, "purging deletion vectors")(log)
    # also when the table looked clean: vectors may have gone before this command ran
    snapshot = log.snapshot()
    removes = fr.dv_tombstones(snapshot, int(time.time() * 1000))
    if removes:
        txn = Transaction(log, snapshot)
        txn.remove_files(removes)
        txn.commit("DELETION VECTOR TOMBSTONES", None, {"dvTombstones": len(removes)})
    return traces


def _check_constraints(log: DeltaLog, _rewrites: DataRewrites) -> bool:
    names = fr.constraint_names(log.snapshot())
    if names:
        raise CannotDropCheckConstraintFeatureError(
            "Cannot drop the CHECK constraints table feature. The following constraints "
            f"must be dropped first: {', '.join(names)}."
        )
    return False


def _column_mapping(log: DeltaLog, rewrites: DataRewrites) -> bool:
    """Rewrite the data with logical column names, in the commit that turns mapping off."""
    if not fr.REMOVABLE["columnMapping"].traces(log.snapshot()):
        return False
    _needs(rewrites.logical_names, "rewriting data files with logical column names")(log)
    return True


def _type_widening(log: DeltaLog, rewrites: DataRewrites) -> bool:
    """Unset ``delta.enableTypeWidening``, rewrite the files holding narrower types, then
    remove the schema's ``delta.typeChanges``."""
    snapshot = log.snapshot()
    if not fr.REMOVABLE["typeWidening"].traces(snapshot):
        return False
    if props.TYPE_WIDENING in snapshot.configuration:
        unset_properties(log, [props.TYPE_WIDENING], if_exists=True)
    if has_type_changes(log.snapshot().schema):
        _needs(rewrites.narrow_types, "rewriting files of narrower types")(log)
        snapshot = log.snapshot()
        txn = Transaction(log, snapshot)
        cleaned = schema_to_string(without_type_changes(snapshot.schema))
        txn.update_metadata(snapshot.metadata.with_changes(schema_string=cleaned))
        txn.commit("DROP FEATURE TYPE CHANGES", {"featureName": "typeWidening"})
    return True


def _v2_checkpoint(log: DeltaLog, _rewrites: DataRewrites) -> bool:
    if not fr.v2_policy(log.snapshot().configuration):
        return False
    set_properties(log, {"delta.checkpointPolicy": "classic"})
    return True


def _in_commit_timestamps(log: DeltaLog, _rewrites: DataRewrites) -> bool:
    """Turn in-commit timestamps off and remove their enablement properties."""
    snapshot = log.snapshot()
    if not fr.REMOVABLE["inCommitTimestamp"].traces(snapshot):
        return False
    provenance = (props.ICT_ENABLEMENT_VERSION, props.ICT_ENABLEMENT_TIMESTAMP)
    conf = {k: v for k, v in snapshot.configuration.items() if k not in provenance}
    if props.IN_COMMIT_TIMESTAMPS in conf:
        conf[props.IN_COMMIT_TIMESTAMPS] = "false"
    txn = Transaction(log, snapshot)
    txn.update_metadata(snapshot.metadata.with_changes(configuration=conf))
    txn.commit("UNSET TBLPROPERTIES", {"properties": sorted(provenance), "ifExists": True})
    return True


def _checkpoint_protection(log: DeltaLog, _rewrites: DataRewrites) -> bool:
    """Truncate the history before the protected version (24-hour retention), then unset the
    property; fails while that history is too young to go."""
    snapshot = log.snapshot()
    boundary = protected_before(snapshot.protocol, snapshot.configuration)
    if not fr.history_truncated_before(log, boundary):
        _empty_commit_and_checkpoint(log)
        latest = log.snapshot()
        cleanup_expired_logs(
            log.store,
            latest.segment.log_dir,
            fr.truncate_retention_ms(latest.configuration),
            granularity_ms=_MINUTE_MS,
            protect_before=boundary,  # all of it in one go, or nothing
        )
        if not fr.history_truncated_before(log, boundary):
            truncation = latest.configuration.get(fr.TRUNCATE_RETENTION_KEY, "interval 24 hours")
            raise FeatureDropCheckpointProtectionWaitError(
                "The operation did not succeed because there are still traces of dropped "
                "features in the table history. CheckpointProtection cannot be dropped until "
                "these historical versions have expired. To drop CheckpointProtection, please "
                "wait for the historical versions to expire, and then repeat this command. "
                f"The retention period for historical versions is currently configured to "
                f"{truncation}."
            )
    if PROTECTION_VERSION_KEY in log.snapshot().configuration:
        unset_properties(log, [PROTECTION_VERSION_KEY], if_exists=True)
    return False


_PRE_DOWNGRADE: Mapping[str, Callable[[DeltaLog, DataRewrites], bool]] = {
    "deletionVectors": _deletion_vectors,
    "checkConstraints": _check_constraints,
    "columnMapping": _column_mapping,
    "typeWidening": _type_widening,
    "typeWidening-preview": _type_widening,
    "v2Checkpoint": _v2_checkpoint,
    "inCommitTimestamp": _in_commit_timestamps,
    "checkpointProtection": _checkpoint_protection,
}
