"""Tables with each table feature, compared with delta-spark on the same paths.

For every feature the same script (create the table with the feature, an append, DELETE,
MERGE, then the feature's own steps) is run by both implementations, each on its own path,
both reading both tables after each step (``_write_all``):

- delta-spark reads each version of our table as we do, and we read each version of its
  table as it does (interop, change feed included);
- the two tables hold the same rows at every version (same semantics), the same history
  (operations, parameter and metric names, row counts) and the same DESCRIBE DETAIL;
- on a third path the two take turns writing the steps, and agree after each one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from operations import Op, Result
from runner import ReferenceRunner, run_ours, value
from scripts import COLUMNS, SCHEMA, detail_summary, errors, history_summary, write

MERGE_CLAUSES = [
    {"when": "matched", "action": "updateAll"},
    {"when": "notMatched", "action": "insertAll"},
]


MERGE_EXPLICIT = [
    {"when": "matched", "action": "update", "set": {"a": "s.a", "p": "s.p"}},
    {"when": "notMatched", "action": "insert", "set": {"id": "s.id", "a": "s.a", "p": "s.p"}},
]


def _default_steps(path: str, clauses: list[dict[str, Any]] = MERGE_CLAUSES) -> list[Op]:
    return [
        write(path, [[1, 10, "x"], [2, 20, "y"], [3, 30, "x"], [4, 40, "y"], [5, 50, "z"]]),
        {"op": "delete", "path": path, "condition": "id = 2"},
        {
            "op": "merge",
            "path": path,
            "source": {"schema": SCHEMA, "rows": [[1, 11, "x"], [6, 60, "z"]]},
            "condition": "t.id = s.id",
            "clauses": clauses,
        },
    ]


def _sql(path: str, statement: str) -> Op:
    return {"op": "sql", "sql": statement.format(t=f"delta.`{path}`")}


def _renamed(path: str) -> list[Op]:
    return [
        _sql(path, "ALTER TABLE {t} RENAME COLUMN a TO `a 2`"),
        write(path, [[7, 70, "x"]], "id BIGINT, `a 2` INT, p STRING"),
        _sql(path, "ALTER TABLE {t} DROP COLUMN p"),
        write(path, [[8, 80]], "id BIGINT, `a 2` INT"),
    ]


def _identity_steps(path: str) -> list[Op]:
    schema = "a INT, p STRING"
    return [
        write(path, [[10, "x"], [20, "y"], [30, "x"], [40, "y"]], schema),
        {"op": "delete", "path": path, "condition": "a = 20"},
        {
            "op": "merge",
            "path": path,
            "source": {"schema": schema, "rows": [[10, "m"], [60, "z"]]},
            "condition": "t.a = s.a",
            "clauses": [
                {"when": "matched", "action": "update", "set": {"p": "s.p"}},
                {"when": "notMatched", "action": "insert", "set": {"a": "s.a", "p": "s.p"}},
            ],
        },
    ]


@dataclass(frozen=True)
class Feature:
    """A table feature: how the table is created, and the steps run on it."""

    name: str
    properties: dict[str, str] = field(default_factory=dict)
    columns: list[dict[str, Any]] = field(default_factory=lambda: COLUMNS)
    partitioned_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    steps: Callable[[str], list[Op]] = _default_steps
    extra: Callable[[str], list[Op]] = lambda path: []
    #: what is read at each version (``*`` plus what the feature adds)
    select: tuple[str, ...] = ()
    #: the columns (a slice of a read row) whose values each writer chooses
    per_table: slice | None = None
    change_feed: bool = False

    def script(self, path: str) -> list[Op]:
        create: Op = {
            "op": "create",
            "path": path,
            "columns": self.columns,
            "partitionedBy": list(self.partitioned_by),
            "clusterBy": list(self.cluster_by),
            "properties": self.properties,
        }
        return [create, *self.steps(path), *self.extra(path)]


FEATURES = [
    Feature("plain"),
    Feature("columnMapping-name", {"delta.columnMapping.mode": "name"}, extra=_renamed),
    Feature("columnMapping-id", {"delta.columnMapping.mode": "id"}, extra=_renamed),
    Feature(
        "partitioned-deletionVectors",
        {"delta.enableDeletionVectors": "true"},
        partitioned_by=("p",),
    ),
    Feature(
        "liquidClustering",
        cluster_by=("id",),
        extra=lambda path: [{"op": "optimize", "path": path}],
    ),
    Feature(
        "identityColumns",
        columns=[
            {"name": "id", "type": "BIGINT", "identity": {"start": 1, "step": 1}},
            *COLUMNS[1:],
        ],
        steps=_identity_steps,
        per_table=slice(0, 1),  # id
    ),
    Feature(
        "generatedColumns",
        columns=[*COLUMNS, {"name": "g", "type": "INT", "generated": "a * 2"}],
        # UPDATE SET * from a source without g: see test_errors' merge-update-all-...
        steps=lambda path: _default_steps(path, MERGE_EXPLICIT),
    ),
    Feature("rowTracking", {"delta.enableRowTracking": "true"}),
    # both write the files IcebergCompatV2's way (field ids, partition values kept, the tag)
    # and read each other's; UniForm's Iceberg metadata is ours only (delta-spark 4.0.x does
    # not build its delta-iceberg module)
    Feature(
        "partitioned-icebergCompatV2",
        {"delta.enableIcebergCompatV2": "true"},
        partitioned_by=("p",),
        extra=lambda path: [{"op": "optimize", "path": path}],
    ),
    Feature(
        "typeWidening",
        {"delta.enableTypeWidening": "true"},
        extra=lambda path: [
            _sql(path, "ALTER TABLE {t} CHANGE COLUMN a TYPE BIGINT"),
            write(path, [[9, 3_000_000_000, "x"]], "id BIGINT, a BIGINT, p STRING"),
        ],
    ),
    Feature(
        "checkConstraints",
        extra=lambda path: [
            _sql(path, "ALTER TABLE {t} ADD CONSTRAINT a_positive CHECK (a > 0)"),
            write(path, [[9, 90, "x"]]),
        ],
    ),
    Feature("changeDataFeed", {"delta.enableChangeDataFeed": "true"}, change_feed=True),
    Feature(
        "v2Checkpoint",
        {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"},
    ),
    Feature("inCommitTimestamps", {"delta.enableInCommitTimestamps": "true"}),
    Feature(
        "droppedFeature",
        extra=lambda path: [
            _sql(path, "ALTER TABLE {t} ADD CONSTRAINT a_positive CHECK (a > 0)"),
            _sql(path, "ALTER TABLE {t} DROP CONSTRAINT a_positive"),
            {"op": "dropFeature", "path": path, "feature": "checkConstraints"},
            write(path, [[9, -90, "x"]]),
        ],
    ),
]
FEATURE_IDS = [f.name for f in FEATURES]

#: (test, feature) -> why the two implementations disagree there (strict xfails); empty since
#: new tables get delta-spark's protocol (its weakest form, see ``protocol_for``)
DISAGREEMENTS: dict[tuple[str, str], str] = {}


def features_of(test: str) -> list[Any]:
    """FEATURE_IDS with this test's known disagreements marked strict xfail."""
    return [
        pytest.param(f, marks=pytest.mark.xfail(strict=True, reason=DISAGREEMENTS[test, f]))
        if (test, f) in DISAGREEMENTS
        else f
        for f in FEATURE_IDS
    ]


BY_NAME = {f.name: f for f in FEATURES}


SIDES = ("ours", "theirs", "mixed")  # who wrote the table: "mixed" took turns


def _read(feature: Feature, path: str) -> Op:
    return {"op": "read", "path": path, "select": list(feature.select)}


def _rows(results: list[Result]) -> list[Any]:
    return [r.get("ok", r.get("error")) for r in results]


@dataclass
class Written:
    """One feature's three tables (written by us, by delta-spark, by both in turn) and the
    reads of each version of them: ``reads[(reader, writer)]`` lists the reader's rows of
    the writer's table after each step; for "mixed", ``"writer"`` is the read of the side
    that wrote the step, ``"other"`` the other side's."""

    steps: dict[str, list[Result]]
    reads: dict[tuple[str, str], list[Any]]
    changes: dict[tuple[str, str], Any]  # (reader, writer) -> change feed rows
    history: dict[str, list[dict[str, Any]]]
    detail: dict[str, dict[str, Any]]
    paths: dict[str, str]


def _write_all(spark: Any, reference: ReferenceRunner, feature: Feature, root: Path) -> Written:
    """Run the feature's script by us and by delta-spark at once, each on its path; after
    each step both sides read both tables. Then the script again on a third path taking
    turns (we create, delta-spark writes the next step, ...), both reading after each step.

    Each version is read right after its commit, at the latest version, rather than by time
    travel afterwards: delta-spark builds a time-travel snapshot from scratch with several
    Spark jobs, four times the cost of a read of its current snapshot."""
    paths = {side: str(root / side) for side in SIDES}
    reads: dict[tuple[str, str], list[Any]] = {
        (r, w): [] for r in ("ours", "theirs") for w in ("ours", "theirs")
    }
    reads["mixed", "writer"], reads["mixed", "other"] = [], []
    steps: dict[str, list[Result]] = {side: [] for side in SIDES}
    read = {side: _read(feature, paths[side]) for side in SIDES}
    scripts = {side: feature.script(paths[side]) for side in SIDES}
    for ours_step, theirs_step in zip(scripts["ours"], scripts["theirs"], strict=True):
        mine, its = reference.run_both(
            spark, [ours_step, read["ours"]], [theirs_step, read["theirs"]]
        )
        cross_mine, cross_its = reference.run_both(spark, [read["theirs"]], [read["ours"]])
        steps["ours"].append(mine[0])
        steps["theirs"].append(its[0])
        reads["ours", "ours"] += _rows(mine[1:])
        reads["theirs", "theirs"] += _rows(its[1:])
        reads["ours", "theirs"] += _rows(cross_mine)
        reads["theirs", "ours"] += _rows(cross_its)
    for i, step in enumerate(scripts["mixed"]):
        if i % 2 == 0:
            done, seen = run_ours(spark, [step, read["mixed"]]), reference.run([read["mixed"]])
        else:
            done, seen = reference.run([step, read["mixed"]]), run_ours(spark, [read["mixed"]])
        steps["mixed"].append(done[0])
        reads["mixed", "writer"] += _rows(done[1:])
        reads["mixed", "other"] += _rows(seen)

    def after(mine: str, other: str) -> list[Op]:
        ops: list[Op] = [{"op": "history", "path": mine}, {"op": "detail", "path": mine}]
        if feature.change_feed:
            ops += [{"op": "changes", "path": p, "start": 0} for p in (mine, other)]
        return ops

    mine, its = reference.run_both(
        spark, after(paths["ours"], paths["theirs"]), after(paths["theirs"], paths["ours"])
    )
    changes = {}
    if feature.change_feed:
        cdf = _rows(mine[2:]) + _rows(its[2:])
        keys = [("ours", "ours"), ("ours", "theirs"), ("theirs", "theirs"), ("theirs", "ours")]
        changes = dict(zip(keys, cdf, strict=True))
    return Written(
        steps=steps,
        reads=reads,
        changes=changes,
        history={"ours": value(mine[0]), "theirs": value(its[0])},
        detail={"ours": value(mine[1]), "theirs": value(its[1])},
        paths=paths,
    )


@pytest.fixture(scope="module")
def written(
    spark: Any, reference: ReferenceRunner, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], Written]:
    """The feature's tables and their reads, made once per test module."""
    cache: dict[str, Written] = {}

    def get(name: str) -> Written:
        if name not in cache:
            root = tmp_path_factory.mktemp(f"feature-{name}")
            cache[name] = _write_all(spark, reference, BY_NAME[name], root)
        return cache[name]

    return get


@pytest.mark.parametrize("feature", features_of("test_both_run_the_script"))
def test_both_run_the_script(written: Callable[[str], Written], feature: str) -> None:
    tables = written(feature)
    assert errors(tables.steps["ours"]) == errors(tables.steps["theirs"]) == []


@pytest.mark.parametrize("feature", features_of("test_delta_spark_reads_our_table"))
def test_delta_spark_reads_our_table(written: Callable[[str], Written], feature: str) -> None:
    """delta-spark reads each version of our table as we do, and our change feed."""
    tables = written(feature)
    assert tables.reads["theirs", "ours"] == tables.reads["ours", "ours"]
    assert tables.changes.get(("theirs", "ours")) == tables.changes.get(("ours", "ours"))


@pytest.mark.parametrize("feature", features_of("test_we_read_delta_sparks_table"))
def test_we_read_delta_sparks_table(written: Callable[[str], Written], feature: str) -> None:
    """We read each version of delta-spark's table as it does, and its change feed."""
    tables = written(feature)
    assert tables.reads["ours", "theirs"] == tables.reads["theirs", "theirs"]
    assert tables.changes.get(("ours", "theirs")) == tables.changes.get(("theirs", "theirs"))


@pytest.mark.parametrize("feature", features_of("test_alternating_writers"))
def test_alternating_writers(written: Callable[[str], Written], feature: str) -> None:
    """Every step succeeds whoever wrote the step before, and after each step the side that
    did not write it reads what the writer reads."""
    tables = written(feature)
    assert errors(tables.steps["mixed"]) == []
    assert tables.reads["mixed", "other"] == tables.reads["mixed", "writer"]


@pytest.mark.parametrize("feature", features_of("test_same_rows_at_every_version"))
def test_same_rows_at_every_version(written: Callable[[str], Written], feature: str) -> None:
    """Our table and delta-spark's, written by the same script, hold the same rows at every
    version, and the same change feed."""
    tables = written(feature)
    ours, theirs = tables.reads["ours", "ours"], tables.reads["theirs", "theirs"]
    if BY_NAME[feature].per_table is not None:
        # identity values and row ids are the writer's choice: compare the other columns
        ours, theirs = _project(ours, feature), _project(theirs, feature)
    assert ours == theirs
    assert tables.changes.get(("ours", "ours")) == tables.changes.get(("theirs", "theirs"))


def _project(reads: list[Any], feature: str) -> list[Any]:
    """Each read's rows without the columns whose values each writer chooses."""
    drop = BY_NAME[feature].per_table
    assert drop is not None
    return [sorted([r[: drop.start] + r[drop.stop :] for r in rows], key=repr) for rows in reads]


@pytest.mark.parametrize("feature", features_of("test_same_history"))
def test_same_history(written: Callable[[str], Written], feature: str) -> None:
    tables = written(feature)
    assert history_summary(tables.history["ours"]) == history_summary(tables.history["theirs"])


@pytest.mark.parametrize("feature", features_of("test_same_detail"))
def test_same_detail(written: Callable[[str], Written], feature: str) -> None:
    tables = written(feature)
    assert detail_summary(tables.detail["ours"]) == detail_summary(tables.detail["theirs"])


def test_row_tracking_metadata_columns(
    spark: Any, reference: ReferenceRunner, written: Callable[[str], Written]
) -> None:
    """Both read the row ids and row commit versions of both row-tracking tables alike."""
    tables = written("rowTracking")
    select = ["id", "_metadata.row_id", "_metadata.row_commit_version"]
    ops = [{"op": "read", "path": tables.paths[w], "select": select} for w in ("ours", "theirs")]
    ours, theirs = reference.run_both(spark, ops, ops)
    assert [value(r) for r in ours] == [value(r) for r in theirs]
