"""Liquid clustering in the core (Spark-free): checks of clustering columns, the
``delta.clustering`` domain and protocol, reading the columns back (also the PROTOCOL.md and
delta-spark 3.0 spellings), ALTER CLUSTER BY commits, and which files OPTIMIZE reclusters."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from delta_pyspark.core.commands import clustering
from delta_pyspark.core.protocol.actions import DomainMetadata, Metadata, Protocol
from delta_pyspark.core.protocol.schema import parse_schema_string
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import DeltaAnalysisException

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {
                "name": "n",
                "type": {
                    "type": "struct",
                    "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}],
                },
                "nullable": True,
                "metadata": {},
            },
            {"name": "s", "type": "string", "nullable": True, "metadata": {}},
            {"name": "flag", "type": "boolean", "nullable": True, "metadata": {}},
            {"name": "d", "type": "date", "nullable": True, "metadata": {}},
        ],
    }
)


def _resolve(names: list[str], partitions: tuple[str, ...] = (), **conf: str) -> list[str]:
    columns = clustering.resolve_columns(names, parse_schema_string(SCHEMA), partitions, conf)
    return [c.name for c in columns]


def test_resolve_columns_spells_names_as_the_schema_does() -> None:
    assert _resolve(["ID", "n.X", "s", "d"]) == ["id", "n.x", "s", "d"]
    assert _resolve([]) == []


@pytest.mark.parametrize(
    ("names", "partitions", "conf", "message"),
    [
        (["id"], ("s",), {}, "[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] Clustering and partitioning"),
        (
            ["id", "s", "d", "n.x", "id"],
            (),
            {},
            "[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] CLUSTER BY supports up to 4 clustering "
            "columns, but the table has 5 clustering columns.",
        ),
        (["zz"], (), {}, "[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column zz"),
        (["n"], (), {}, "[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column n"),  # a struct
        (["id", "ID"], (), {}, "[DELTA_DUPLICATE_COLUMNS_FOUND]"),
        (
            ["flag"],
            (),
            {},
            "[DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED] CLUSTER BY is not supported "
            "because the following column(s): flag : BOOLEAN don't support data skipping.",
        ),
        (
            ["id", "s"],
            (),
            {"delta.dataSkippingNumIndexedCols": "2"},
            "[DELTA_CLUSTERING_COLUMN_MISSING_STATS] Clustering requires clustering columns to "
            "have stats. Couldn't find clustering column(s) 's' in stats schema",
        ),
        (
            ["id"],
            (),
            {"delta.dataSkippingStatsColumns": "s,n.x"},
            "Couldn't find clustering column(s) 'id'",
        ),
    ],
)
def test_resolve_columns_refusals(
    names: list[str], partitions: tuple[str, ...], conf: dict[str, str], message: str
) -> None:
    with pytest.raises(DeltaAnalysisException) as e:
        _resolve(names, partitions, **conf)
    assert message in str(e.value)


def test_stats_columns_may_name_the_clustering_columns() -> None:
    conf = {"delta.dataSkippingStatsColumns": "s,n.x"}
    assert _resolve(["n.x", "s"], **conf) == ["n.x", "s"]
    assert _resolve(["d"], **{"delta.dataSkippingNumIndexedCols": "-1"}) == ["d"]


def test_domain_and_protocol() -> None:
    columns = clustering.resolve_columns(["n.x", "id"], parse_schema_string(SCHEMA), (), {})
    domain = clustering.domain_metadata(columns)
    assert domain.domain == "delta.clustering" and domain.removed is False
    assert json.loads(domain.configuration) == {
        "clusteringColumns": [["n", "x"], ["id"]],
        "domainName": "delta.clustering",
    }
    protocol = clustering.clustered_protocol(Protocol(1, 2))
    assert protocol.min_writer_version == 7
    assert protocol.writer_features == frozenset(
        {"appendOnly", "invariants", "clustering", "domainMetadata"}
    )
    assert clustering.is_clustered(protocol) and not clustering.is_clustered(Protocol(1, 2))
    assert clustering.clustered_protocol(protocol) is protocol


def _metadata(configuration: dict[str, str] | None = None, schema: str = SCHEMA) -> Metadata:
    return Metadata.create(schema, [], configuration or {}, created_time=0)


@pytest.mark.parametrize(
    ("domain", "config", "expected"),
    [
        ("delta.clustering", {"clusteringColumns": [["n", "x"], ["s"]]}, ["n.x", "s"]),
        ("delta.clustering", {"clusteringColumns": ["id", "s"]}, ["id", "s"]),  # PROTOCOL.md
        ("delta.clustering", {"clusteringColumns": []}, []),
        ("delta.liquid", {"clusteringColumns": [{"physicalName": ["id"]}]}, ["id"]),
    ],
)
def test_clustering_columns_read_every_spelling(
    domain: str, config: dict[str, object], expected: list[str]
) -> None:
    domains = {domain: DomainMetadata(domain, json.dumps(config))}
    found = clustering.clustering_columns(domains, _metadata())
    assert found is not None and [c.name for c in found] == expected
    assert clustering.clustering_columns({}, _metadata()) is None
    removed = {domain: DomainMetadata(domain, json.dumps(config), removed=True)}
    assert clustering.clustering_columns(removed, _metadata()) is None


def test_clustering_columns_map_physical_names_to_logical() -> None:
    fields = [
        {
            "name": "Logical",
            "type": "long",
            "nullable": True,
            "metadata": {
                "delta.columnMapping.id": 1,
                "delta.columnMapping.physicalName": "col-abc",
            },
        }
    ]
    schema = json.dumps({"type": "struct", "fields": fields})
    metadata = _metadata({"delta.columnMapping.mode": "name"}, schema)
    config = json.dumps({"clusteringColumns": [["col-abc"]]})
    found = clustering.clustering_columns(
        {"delta.clustering": DomainMetadata("delta.clustering", config)}, metadata
    )
    assert found == [clustering.ClusteringColumn(("Logical",), ("col-abc",))]
    columns = clustering.resolve_columns(
        ["logical"], parse_schema_string(schema), (), metadata.configuration
    )
    assert json.loads(clustering.domain_metadata(columns).configuration)["clusteringColumns"] == [
        ["col-abc"]
    ]


def test_requested_names() -> None:
    assert clustering.requested_names('["a", "b.c"]', None) == ["a", "b.c"]
    props = json.dumps({"clusteringColumns": '[["a"],["b","c"],["x.y"]]', "k": "v"})
    assert clustering.requested_names(None, props) == ["a", "b.c", "`x.y`"]
    assert clustering.requested_names(None, json.dumps({"k": "v"})) is None
    assert clustering.requested_names(None, None) is None


def test_files_to_cluster() -> None:
    files = pa.table({"path": ["a", "b", "c"], "clusteringProvider": ["liquid", None, "other"]})
    assert clustering.files_to_cluster(files, full=False).to_pylist() == [False, True, False]
    assert clustering.files_to_cluster(files, full=True).to_pylist() == [True, True, True]


@pytest.fixture
def log(tmp_path: Path) -> DeltaLog:
    log = DeltaLog(str(tmp_path / "t"))
    create_table(log, SCHEMA)
    return log


def _commit(log: DeltaLog, version: int) -> list[dict[str, object]]:
    text = Path(log.table_root, "_delta_log", f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_alter_clustering_commits_domain_and_protocol(log: DeltaLog) -> None:
    snapshot = clustering.alter_clustering(log, ["s", "n.x"])
    assert snapshot is not None and snapshot.version == 1
    actions = _commit(log, 1)
    kinds = sorted(next(iter(a)) for a in actions)
    assert kinds == ["commitInfo", "domainMetadata", "protocol"]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "CLUSTER BY"
    assert info["operationParameters"] == {
        "oldClusteringColumns": "",
        "newClusteringColumns": "s,n.x",
    }
    assert clustering.column_names(log.snapshot()) == ["s", "n.x"]
    clustering.alter_clustering(log, [])
    assert sorted(next(iter(a)) for a in _commit(log, 2)) == ["commitInfo", "domainMetadata"]
    assert clustering.column_names(log.snapshot()) == []
    assert clustering.is_clustered(log.snapshot().protocol)


def test_alter_clustering_refusals_commit_nothing(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path / "p"))
    create_table(log, SCHEMA, ["s"])
    assert clustering.alter_clustering(log, []) is None  # NONE on an unclustered table
    with pytest.raises(
        DeltaAnalysisException,
        match=r"\[DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED\]",
    ):
        clustering.alter_clustering(log, ["id"])
    with pytest.raises(DeltaAnalysisException, match=r"\[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS\]"):
        clustering.alter_clustering(log, ["id", "s", "d", "n.x", "flag"])
    assert log.snapshot().version == 0


def test_stage_write_clustering(log: DeltaLog) -> None:
    snapshot = clustering.alter_clustering(log, ["id"])
    assert snapshot is not None
    txn = Transaction(log, snapshot)
    # an append naming the table's columns stages nothing; other columns are refused
    assert clustering.stage_write_clustering(txn, snapshot, ["ID"], False, False) is None
    with pytest.raises(DeltaAnalysisException, match=r"\[DELTA_CLUSTERING_COLUMNS_MISMATCH\]"):
        clustering.stage_write_clustering(txn, snapshot, ["s"], False, False)
    # an overwrite may change them; a replacement without CLUSTER BY empties them
    assert clustering.stage_write_clustering(txn, snapshot, ["s"], True, False) == ["s"]
    assert clustering.stage_write_clustering(txn, snapshot, None, True, True) == []
    assert clustering.stage_write_clustering(txn, snapshot, None, True, False) is None


def test_clustering_columns_cannot_be_dropped_but_survive_a_rename(tmp_path: Path) -> None:
    from delta_pyspark.core.commands.column_changes import drop_columns, rename_column
    from delta_pyspark.core.protocol.schema import StructType
    from delta_pyspark.core.protocol.table_features import protocol_for

    log = DeltaLog(str(tmp_path / "m"))
    conf = {"delta.columnMapping.mode": "name"}
    schema = StructType.from_json(json.loads(SCHEMA))
    create_table(log, SCHEMA, [], conf, protocol=protocol_for(schema, conf))
    clustering.alter_clustering(log, ["id", "n.x"])
    for path in (("id",), ("n",), ("n", "x")):
        with pytest.raises(
            DeltaAnalysisException, match=r"\[DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN\]"
        ):
            drop_columns(log, [path])
    assert log.snapshot().version == 1
    drop_columns(log, [("s",)])
    rename_column(log, ("id",), "key")  # the domain names physical columns: nothing to change
    assert clustering.column_names(log.snapshot()) == ["key", "n.x"]
