"""Raising a table's protocol on request: ``upgradeTableProtocol`` and ``addFeatureSupport``
(PROTOCOL.md "Table Features"). A request never lowers anything: versions below the
table's are kept, and a feature already supported (legacy versions imply some) changes
nothing, so neither commits. Removing a feature is ``drop_feature``'s job."""

from __future__ import annotations

import json

from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.table_features import (
    check_writable,
    features_in_use,
    implied_writer_features,
    reader_features,
    with_features,
)
from delta_pyspark.core.protocol.table_properties import KNOWN_FEATURES
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import UnsupportedFeaturesInConfigError


def upgrade_protocol(log: DeltaLog, reader_version: int, writer_version: int) -> Snapshot | None:
    """Raise the protocol to at least these versions (the new snapshot; None: no commit).
    Writer version 7 keeps the features the old versions implied, as explicit names."""
    snapshot = log.snapshot()
    old = snapshot.protocol
    reader = max(reader_version, old.min_reader_version)
    writer = max(writer_version, old.min_writer_version)
    if writer < 7:
        new = Protocol(reader, writer)
    elif reader >= 3:
        new = Protocol(3, 7, reader_features(old), implied_writer_features(old))
    else:
        new = Protocol(reader, 7, None, implied_writer_features(old))
    if new == old:
        return None
    txn = Transaction(log, snapshot)
    txn.update_protocol(new)
    return txn.commit("UPGRADE PROTOCOL", {"newProtocol": json.dumps(new.to_dict())})


def add_feature(log: DeltaLog, name: str) -> Snapshot | None:
    """Declare support for the feature ``name`` (the new snapshot; None: no commit)."""
    if name not in KNOWN_FEATURES:
        raise UnsupportedFeaturesInConfigError(
            f"[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG] unknown table feature {name!r}; "
            f"known features: {', '.join(sorted(KNOWN_FEATURES))}"
        )
    snapshot = log.snapshot()
    if name in implied_writer_features(snapshot.protocol) | reader_features(snapshot.protocol):
        return None  # supported already (legacy protocol versions imply some): no upgrade
    new = with_features(snapshot.protocol, {name})
    check_writable(new, log.table_root, features_in_use(snapshot.metadata))
    if new == snapshot.protocol:
        return None
    txn = Transaction(log, snapshot)
    txn.update_protocol(new)
    return txn.commit("ADD FEATURE", {"feature": name})
