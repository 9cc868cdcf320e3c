"""Which protocols this package may write (Spark-free): features whose rules bind only the
columns that carry them do not block a table that supports them idle, and the protocol a set
of properties needs comes from the property registry."""

from __future__ import annotations

import json

from delta_pyspark.core.protocol.actions import Metadata, Protocol
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.protocol.table_features import (
    check_writable,
    features_in_use,
    protocol_for,
    with_features,
)

PLAIN = json.dumps(
    {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
)
GENERATED = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long", "nullable": True, "metadata": {}},
            {
                "name": "b",
                "type": "long",
                "nullable": True,
                "metadata": {"delta.generationExpression": "a + 1"},
            },
        ],
    }
)


def test_idle_generated_columns_support_does_not_block_writes() -> None:
    # what adding a feature to a (1, 4) table gives: its implied features made explicit
    protocol = with_features(Protocol(1, 4), {"deletionVectors"})
    assert protocol.writer_features is not None
    assert "generatedColumns" in protocol.writer_features
    check_writable(protocol, "t", features_in_use(Metadata.create(PLAIN)))
    # generated columns in use: writable too, now that writers enforce them
    assert features_in_use(Metadata.create(GENERATED)) == {"generatedColumns"}
    check_writable(protocol, "t", features_in_use(Metadata.create(GENERATED)))


def test_protocol_for_properties_follows_the_registry() -> None:
    schema = StructType.from_json(json.loads(PLAIN))
    widened = protocol_for(schema, {"delta.enableTypeWidening": "true"})
    assert widened.writer_features is not None and "typeWidening" in widened.writer_features
    assert widened.reader_features is not None and "typeWidening" in widened.reader_features
    assert protocol_for(schema, {"delta.appendOnly": "true"}) == Protocol(1, 2)
    # the weakest form, as delta-spark's: (1, 4) would also claim checkConstraints and
    # generatedColumns; (1, 3) holds exactly appendOnly, invariants and checkConstraints
    assert protocol_for(schema, {"delta.enableChangeDataFeed": "true"}) == Protocol(
        1, 7, None, frozenset({"appendOnly", "invariants", "changeDataFeed"})
    )
    assert protocol_for(schema, {"delta.constraints.c": "true"}) == Protocol(1, 3)
    mapped = protocol_for(schema, {"delta.columnMapping.mode": "name"})
    assert mapped == Protocol(2, 7, None, frozenset({"appendOnly", "invariants", "columnMapping"}))
    assert protocol_for(schema, {"delta.enableTypeWidening": "false"}) == Protocol(1, 2)
