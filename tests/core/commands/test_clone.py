"""CLONE without Spark: shallow clones reference source files (and DVs) by absolute
URI, deep clones copy them; the clone is a new table with its own history; replace
semantics; clean failure; and how VACUUM on either side treats shallow clones."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from table_helpers import DAY, add_dv, age_all, commit, make_table, remove, write_file

from data_paths import TESTDATA
from delta_pyspark.core.commands import clone as clone_module
from delta_pyspark.core.commands.clone import clone_table, file_uri
from delta_pyspark.core.commands.clone_registry import (
    CLONE_REGISTRY_DIR,
    register_shallow_clone,
    registered_clones,
)
from delta_pyspark.core.commands.clustering import alter_clustering, column_names, is_clustered
from delta_pyspark.core.commands.vacuum import vacuum
from delta_pyspark.core.log.table_paths import dv_file_path, resolve_path
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    deleted_row_indexes,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.exceptions import DeltaAnalysisException, ProtocolChangedException

STORE = LocalLogStore()


def copy_table(src: Path, dst: Path) -> Path:
    """A writable copy of a read-only test table."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    for d, _, _ in os.walk(dst):
        os.chmod(d, 0o755)
    return dst


def source_table(root: Path, partitioned: bool = True) -> tuple[DeltaLog, list[dict]]:
    """v1: a, b, c (two partitions if partitioned); v2: + d."""
    log = make_table(root, partitioned, {"delta.appendOnly": "false", "custom.key": "1"})
    p = (lambda x: x) if partitioned else (lambda x: None)
    files = [write_file(root, [1, 2], p("x")), write_file(root, [3], p("y"))]
    files.append(write_file(root, [4, 5], p("x")))
    commit(log, files)
    d = write_file(root, [6], p("y"))
    commit(log, [d])
    return log, [*files, d]


def table_rows(snapshot: Snapshot) -> list[tuple]:
    """(partition, id) of every live row, DVs applied, read with pyarrow."""
    root = snapshot.table_root
    out = []
    for f in snapshot.files.to_pylist():
        ids = pq.read_table(resolve_path(root, f["path"])).column(0).to_pylist()
        if f["deletionVector"]:
            desc = DeletionVectorDescriptor.from_dict(f["deletionVector"])
            gone = set(deleted_row_indexes(desc, root, STORE).tolist())
            ids = [v for i, v in enumerate(ids) if i not in gone]
        part = dict(f["partitionValues"] or [])
        out += [(json.dumps(part, sort_keys=True), v) for v in ids]
    return sorted(out, key=repr)


# --------------------------------------------------------------------------- shallow


@pytest.mark.parametrize("partitioned", [True, False])
def test_shallow_clone_references_source_files_by_absolute_uri(
    tmp_path: Path, partitioned: bool
) -> None:
    log, files = source_table(tmp_path / "src", partitioned)
    source = log.snapshot()
    target = tmp_path / "clone"

    result = clone_table(log, str(target), shallow=True, properties={"custom.key": "2"})

    clone = DeltaLog(str(target)).snapshot()
    assert result.version == 0 and result.source_version == source.version == 2
    assert result.target_root == str(target)
    assert clone.version == 0
    by_name = {f["path"].rsplit("/", 1)[-1]: f for f in clone.files.to_pylist()}
    for f in files:
        got = by_name[f["path"].rsplit("/", 1)[-1]]
        assert got["path"] == file_uri(str(tmp_path / "src" / f["path"]))
        assert got["path"].startswith("file:///")
        assert dict(got["partitionValues"]) == f["partitionValues"]
        assert got["size"] == f["size"] and got["stats"] == f["stats"]
    assert table_rows(clone) == table_rows(source)
    assert clone.metadata.id != source.metadata.id
    assert clone.schema == source.schema
    assert clone.partition_columns == source.partition_columns
    assert clone.configuration == {"delta.appendOnly": "false", "custom.key": "2"}
    assert clone.protocol == source.protocol
    info = clone.commit_info
    assert info["operation"] == "CLONE"
    assert info["operationParameters"] == {
        "source": str(tmp_path / "src"),
        "sourceVersion": "2",
    }
    assert info["operationMetrics"] == {
        "sourceTableSize": str(source.size_in_bytes),
        "sourceNumOfFiles": "4",
        "numRemovedFiles": "0",
        "numCopiedFiles": "0",
        "removedFilesSize": "0",
        "copiedFilesSize": "0",
    }
    (entry,) = registered_clones(str(tmp_path / "src"))
    assert entry.clone_path == str(target) and entry.source_version == 2
    assert not (target / "part=x").exists() and len(os.listdir(target)) == 1  # only the log


def test_shallow_clone_at_version_and_timestamp(tmp_path: Path) -> None:
    log, _ = source_table(tmp_path / "src")
    clone_table(log, str(tmp_path / "v1"), shallow=True, version=1)
    assert DeltaLog(str(tmp_path / "v1")).snapshot().num_files == 3
    t0 = int(time.time()) - 10 * DAY
    for v in range(3):
        os.utime(Path(log.log_dir) / f"{v:020d}.json", (t0 + 100 * v, t0 + 100 * v))
    result = clone_table(log, str(tmp_path / "ts"), shallow=True, timestamp_ms=(t0 + 150) * 1000)
    assert result.source_version == 1
    assert table_rows(DeltaLog(str(tmp_path / "ts")).snapshot()) == table_rows(log.snapshot(1))


def test_clone_has_independent_history(tmp_path: Path) -> None:
    log, _ = source_table(tmp_path / "src")
    src_before = table_rows(log.snapshot())
    for kind in ("shallow", "deep"):
        target = tmp_path / kind
        clone_log = DeltaLog(clone_table(log, str(target), shallow=kind == "shallow").target_root)
        clone_before = table_rows(clone_log.snapshot())
        # write to the clone: the source does not change
        commit(clone_log, [write_file(target, [100], "z")])
        uri = clone_log.snapshot().files.column("path").to_pylist()[0]
        gone = pq.read_table(resolve_path(str(target), uri)).column(0).to_pylist()
        remove(clone_log, uri, days_ago=0)
        assert table_rows(log.snapshot()) == src_before
        assert [r["operation"] for r in reversed(clone_log.history())] == [
            "CLONE",
            "WRITE",
            "WRITE",
        ]
        # write to the source: the clone does not change
        commit(log, [write_file(tmp_path / "src", [200], "x")])
        after = table_rows(clone_log.snapshot())
        expected = [r for r in clone_before if r[1] not in gone] + [('{"part": "z"}', 100)]
        assert after == sorted(expected, key=repr)
        src_before = table_rows(log.snapshot())


# --------------------------------------------------------------------------- deep


@pytest.mark.parametrize("partitioned", [True, False])
def test_deep_clone_copies_files_with_relative_paths(tmp_path: Path, partitioned: bool) -> None:
    log, files = source_table(tmp_path / "src", partitioned)
    source = log.snapshot()
    target = tmp_path / "deep"

    result = clone_table(log, str(target), shallow=False)

    clone = DeltaLog(str(target)).snapshot()
    assert sorted(clone.files.column("path").to_pylist()) == sorted(f["path"] for f in files)
    for f in files:
        assert (target / f["path"]).read_bytes() == (tmp_path / "src" / f["path"]).read_bytes()
    assert result.metrics["numCopiedFiles"] == 4
    assert result.metrics["copiedFilesSize"] == source.size_in_bytes
    assert "isShallow" not in clone.commit_info["operationParameters"]  # as delta-spark
    assert registered_clones(str(tmp_path / "src")) == []  # deep clones need no protection
    shutil.rmtree(tmp_path / "src")
    assert len(table_rows(clone)) == 6  # survives the source's deletion


def test_deep_clone_of_a_shallow_clone_copies_the_original_files(tmp_path: Path) -> None:
    log, _ = source_table(tmp_path / "src")
    shallow = clone_table(log, str(tmp_path / "shallow"), shallow=True)
    deep = clone_table(DeltaLog(shallow.target_root), str(tmp_path / "deep"), shallow=False)
    clone = DeltaLog(deep.target_root).snapshot()
    paths = clone.files.column("path").to_pylist()
    assert all(not p.startswith("file:") for p in paths)
    assert all(p.startswith(("part=x/", "part=y/")) for p in paths)  # partition dirs kept
    expected = table_rows(log.snapshot())
    shutil.rmtree(tmp_path / "src")
    assert table_rows(clone) == expected


def test_deep_clone_never_overwrites_existing_files(tmp_path: Path) -> None:
    log, files = source_table(tmp_path / "src")
    target = tmp_path / "deep"
    clone_table(log, str(target), shallow=False, version=1)
    first = DeltaLog(str(target)).snapshot()
    victim = target / files[0]["path"]
    victim.write_bytes(victim.read_bytes())  # same path, must not be clobbered
    before = victim.stat().st_ino

    clone_table(log, str(target), shallow=False, replace=True)

    now = DeltaLog(str(target)).snapshot()
    assert victim.stat().st_ino == before
    assert not set(now.files.column("path").to_pylist()) & set(
        first.files.column("path").to_pylist()
    )
    assert table_rows(now) == table_rows(log.snapshot())
    assert table_rows(DeltaLog(str(target)).snapshot(0)) == table_rows(log.snapshot(1))


# --------------------------------------------------------------------------- deletion vectors


@pytest.mark.parametrize("shallow", [True, False])
@pytest.mark.parametrize(
    "name", ["delta-rs/table-with-dv-small", "golden/dv-with-columnmapping/delta"]
)
def test_clone_of_a_table_with_deletion_vectors(tmp_path: Path, name: str, shallow: bool) -> None:
    src = copy_table(TESTDATA / name, tmp_path / "src")
    log = DeltaLog(str(src))
    source = log.snapshot()
    assert any(source.files.column("deletionVector").to_pylist())

    clone_table(log, str(tmp_path / "clone"), shallow=shallow)

    clone = DeltaLog(str(tmp_path / "clone")).snapshot()
    assert table_rows(clone) == table_rows(source)
    kinds = {dv["storageType"] for dv in clone.files.column("deletionVector").to_pylist() if dv}
    assert kinds == ({"p"} if shallow else {"u"})
    for dv in clone.files.column("deletionVector").to_pylist():
        if dv:
            where = dv_file_path(str(tmp_path / "clone"), dv)
            inside = where.startswith(str(tmp_path / "clone") + "/")
            assert inside is not shallow
    if shallow:  # the source's VACUUM keeps the files and DV files the clone reads
        remove(log, *source.files.column("path").to_pylist(), days_ago=30)
        age_all(src)
        doomed = set(vacuum(log, 0, check_enabled=False).plan.paths)
        used = {resolve_path(str(src), p) for p in source.files.column("path").to_pylist()}
        dvs = source.files.column("deletionVector").to_pylist()
        used |= {dv_file_path(str(src), dv) for dv in dvs if dv}
        assert not doomed & used
        assert table_rows(clone) == table_rows(source)
    else:
        shutil.rmtree(src)
        assert len(table_rows(clone)) == sum(
            json.loads(s)["numRecords"] for s in source.files.column("stats").to_pylist()
        ) - sum(dv["cardinality"] for dv in source.files.column("deletionVector").to_pylist() if dv)


# --------------------------------------------------------------------------- targets


@pytest.mark.parametrize("shallow", [True, False], ids=["shallow", "deep"])
def test_clone_carries_the_clustering_columns(tmp_path: Path, shallow: bool) -> None:
    """The clone's first commit holds the source's ``delta.clustering`` domain; replacing
    it with an unclustered version leaves it clustered by no columns (the protocol is
    never downgraded), as a REPLACE without CLUSTER BY does."""
    log, _ = source_table(tmp_path / "src", partitioned=False)
    alter_clustering(log, ["id"])  # version 3
    target = tmp_path / "c"
    clone_table(log, str(target), shallow=shallow)
    first = [json.loads(line) for line in (target / "_delta_log" / f"{0:020d}.json").open()]
    domains = [a["domainMetadata"] for a in first if "domainMetadata" in a]
    assert [(d["domain"], d["removed"]) for d in domains] == [("delta.clustering", False)]
    assert json.loads(domains[0]["configuration"])["clusteringColumns"] == [["id"]]
    clone = DeltaLog(str(target)).snapshot()
    assert column_names(clone) == ["id"] and is_clustered(clone.protocol)

    clone_table(log, str(target), shallow=False, replace=True, version=2)
    replaced = DeltaLog(str(target)).snapshot()
    assert replaced.version == 1 and is_clustered(replaced.protocol)
    assert column_names(replaced) == []
    assert "delta.clustering" in replaced.domain_metadata


def test_existing_target_needs_replace(tmp_path: Path) -> None:
    log, _ = source_table(tmp_path / "src")
    other, other_files = source_table(tmp_path / "other", partitioned=False)
    listing = sorted(os.listdir(Path(other.log_dir)))

    with pytest.raises(DeltaAnalysisException, match="replace=True"):
        clone_table(log, str(tmp_path / "other"), shallow=True)
    assert sorted(os.listdir(Path(other.log_dir))) == listing
    assert registered_clones(str(tmp_path / "src")) == []

    result = clone_table(log, str(tmp_path / "other"), shallow=True, replace=True)

    now = other.snapshot()
    assert result.version == now.version == 3
    assert table_rows(now) == table_rows(log.snapshot())
    assert now.partition_columns == ["part"]
    assert now.metadata.id == other.snapshot(2).metadata.id  # REPLACE keeps the table id
    assert result.metrics["numRemovedFiles"] == 4
    assert result.metrics["removedFilesSize"] == sum(f["size"] for f in other_files)
    assert table_rows(other.snapshot(2)) != table_rows(now)  # history kept


def test_shallow_clone_replacing_a_shallow_clone_of_the_same_files(tmp_path: Path) -> None:
    """Refreshing a shallow clone names the source's files again: the files both versions
    hold stay (one commit may not add and remove the same file: it used to write a version
    our own reader refused as damaged), only the new ones are added."""
    log, files = source_table(tmp_path / "src", partitioned=False)
    target = tmp_path / "c"
    clone_table(log, str(target), shallow=True, version=1)
    result = clone_table(log, str(target), shallow=True, replace=True)
    assert result.version == 1 and result.metrics["numRemovedFiles"] == 0
    commit = [json.loads(line) for line in (target / "_delta_log" / f"{1:020d}.json").open()]
    assert [a["add"]["path"] for a in commit if "add" in a] == [
        file_uri(str(tmp_path / "src" / files[3]["path"]))
    ]
    assert not [a for a in commit if "remove" in a]
    clone = DeltaLog(str(target)).snapshot()
    assert table_rows(clone) == table_rows(log.snapshot())


def test_refuses_non_delta_non_empty_target_and_itself(tmp_path: Path) -> None:
    log, _ = source_table(tmp_path / "src")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "data.csv").write_text("1\n")
    with pytest.raises(DeltaAnalysisException, match="not empty"):
        clone_table(log, str(tmp_path / "junk"), shallow=False)
    assert os.listdir(tmp_path / "junk") == ["data.csv"]
    with pytest.raises(DeltaAnalysisException, match="onto itself"):
        clone_table(log, str(tmp_path / "src"), shallow=True, replace=True)


def test_failed_clone_leaves_no_files_and_no_registry_entry(tmp_path: Path, monkeypatch) -> None:
    log, _ = source_table(tmp_path / "src")

    def lose(self, *args, **kwargs):
        raise ProtocolChangedException("the table was created concurrently")

    monkeypatch.setattr(clone_module.Transaction, "commit", lose)
    for shallow in (True, False):
        target = tmp_path / f"t{shallow}"
        with pytest.raises(ProtocolChangedException):
            clone_table(log, str(target), shallow=shallow)
        left = [f for _, _, names in os.walk(target) for f in names]
        assert left == []
    assert registered_clones(str(tmp_path / "src")) == []


# --------------------------------------------------------------------------- vacuum


def test_vacuum_of_a_shallow_clone_never_deletes_source_files(tmp_path: Path) -> None:
    log, files = source_table(tmp_path / "src")
    clone_log = DeltaLog(clone_table(log, str(tmp_path / "clone"), shallow=True).target_root)
    uris = clone_log.snapshot().files.column("path").to_pylist()
    remove(clone_log, *uris, days_ago=30)
    age_all(tmp_path)

    result = vacuum(clone_log, 0, check_enabled=False)

    assert result.plan.paths == []
    assert all((tmp_path / "src" / f["path"]).exists() for f in files)


def test_vacuum_of_the_source_keeps_what_a_registered_clone_uses(tmp_path: Path) -> None:
    log, files = source_table(tmp_path / "src")
    clone_table(log, str(tmp_path / "clone"), shallow=True, version=1)
    remove(log, files[0]["path"], files[1]["path"], days_ago=30)
    clone_log = DeltaLog(str(tmp_path / "clone"))
    # the clone drops its copy of file 1 (fresh tombstone): still protected by retention
    remove(clone_log, file_uri(str(tmp_path / "src" / files[1]["path"])), days_ago=0)
    age_all(tmp_path)

    assert vacuum(log, 1, check_enabled=False).plan.paths == []
    assert all((tmp_path / "src" / f["path"]).exists() for f in files)
    assert len(table_rows(clone_log.snapshot())) == 4
    # once the clone's tombstone is past the retention, the file goes
    result = vacuum(log, 0, check_enabled=False)
    assert result.plan.paths == [str(tmp_path / "src" / files[1]["path"])]

    shutil.rmtree(tmp_path / "clone")  # a dropped clone protects nothing
    result = vacuum(log, 0, check_enabled=False)
    assert result.plan.paths == [str(tmp_path / "src" / files[0]["path"])]


def test_clones_of_clones_are_followed(tmp_path: Path) -> None:
    log, files = source_table(tmp_path / "src")
    first = clone_table(log, str(tmp_path / "c1"), shallow=True)
    clone_table(DeltaLog(first.target_root), str(tmp_path / "c2"), shallow=True)
    assert registered_clones(first.target_root)[0].clone_path == str(tmp_path / "c2")
    c1 = DeltaLog(first.target_root)
    remove(c1, *c1.snapshot().files.column("path").to_pylist(), days_ago=30)
    remove(log, *(f["path"] for f in files), days_ago=30)
    age_all(tmp_path)

    assert vacuum(log, 0, check_enabled=False).plan.paths == []  # c2 still uses them all
    shutil.rmtree(tmp_path / "c2")
    assert len(vacuum(log, 0, check_enabled=False).plan.paths) == 4


def test_a_clone_in_flight_protects_its_source_version(tmp_path: Path) -> None:
    log, files = source_table(tmp_path / "src")
    remove(log, *(f["path"] for f in files), days_ago=30)
    age_all(tmp_path)
    entry = register_shallow_clone(str(tmp_path / "src"), str(tmp_path / "pending"), 1)
    plan = vacuum(log, 24, check_enabled=False, dry_run=True).plan
    assert plan.paths == [str(tmp_path / "src" / files[3]["path"])]  # only d is not in v1
    old = time.time() - 30 * DAY
    os.utime(entry, (old, old))  # an entry older than the retention: the clone never came
    assert len(vacuum(log, 24, check_enabled=False, dry_run=True).plan.paths) == 4
    assert Path(entry).parent.name == CLONE_REGISTRY_DIR


def test_clone_registry_entry_lives_in_a_hidden_directory(tmp_path: Path) -> None:
    log, _ = source_table(tmp_path / "src")
    clone_table(log, str(tmp_path / "c"), shallow=True)
    (entry,) = registered_clones(str(tmp_path / "src"))
    body = json.loads(Path(entry.registry_file).read_text())
    assert body["clonePath"] == str(tmp_path / "c") and body["sourceVersion"] == 2
    # invisible to the source's readers: the snapshot does not change
    assert log.snapshot().num_files == 4
    age_all(tmp_path)
    vacuum(log, 0, check_enabled=False)
    assert Path(entry.registry_file).exists()


def test_shallow_clone_dv_of_a_deletion_after_cloning(tmp_path: Path) -> None:
    """A DV written into the source after cloning does not affect the clone."""
    log = make_table(tmp_path / "src")
    a = write_file(tmp_path / "src", [1, 2, 3])
    commit(log, [a])
    add_dv(log, a["path"], [0])
    clone_table(log, str(tmp_path / "c"), shallow=True)
    add_dv(log, a["path"], [0, 1])
    clone = DeltaLog(str(tmp_path / "c")).snapshot()
    assert [r[1] for r in table_rows(clone)] == [2, 3]
    assert [r[1] for r in table_rows(log.snapshot())] == [3]


def test_special_characters_in_the_source_path_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src dir %20 #1"
    log, files = source_table(src)
    result = clone_table(log, str(tmp_path / "clone"), shallow=True)
    clone_log = DeltaLog(result.target_root)
    uris = clone_log.snapshot().files.column("path").to_pylist()
    assert all("%2520" in u and "%23" in u and " " not in u for u in uris)
    assert table_rows(clone_log.snapshot()) == table_rows(log.snapshot())
    remove(log, *(f["path"] for f in files), days_ago=30)
    age_all(tmp_path)
    assert vacuum(log, 0, check_enabled=False).plan.paths == []  # the clone uses them all
    remove(clone_log, *uris, days_ago=30)
    assert len(vacuum(log, 0, check_enabled=False).plan.paths) == 4


def test_relative_table_root_gives_absolute_paths(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    log, files = source_table(Path("rel"))
    remove(log, files[0]["path"], days_ago=30)
    age_all(tmp_path / "rel")
    assert vacuum(DeltaLog("rel"), dry_run=True).plan.paths == [
        str(tmp_path / "rel" / files[0]["path"])
    ]
