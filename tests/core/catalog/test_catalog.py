"""Catalog-managed tables on both catalog backends: creation, commit ordering and
ratification, lost races, readers of unpublished commits, publishing, time travel by
in-commit timestamps, checkpoints, path-based access refused, and the S3-semantics race."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from catalog_helpers import SCHEMA, add

from delta_pyspark.core.catalog.database import (
    CommitConflictError,
    Ratification,
    TableAlreadyExistsError,
)
from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.protocol.actions import Metadata
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.core.transaction.commit import checkpoint_now
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    ConcurrentDeleteDeleteException,
    CorruptLogError,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
    FileAlreadyExistsError,
    UnsupportedTableFeatureError,
    VersionNotFoundError,
)


class LastWriterWinsLogStore(LocalLogStore):
    """An object store without put-if-absent, as S3 was: ``write_if_absent`` checks that
    the key is absent and then writes, so two writers racing on one key both succeed and
    the last one wins. Filesystem commits are refused on it (``atomic_put_if_absent``);
    catalog-managed tables are safe on it, their staged files having unique names.

    ``before_put``: called between the check and the write (tests widen the race with it).
    """

    atomic_put_if_absent = False

    def __init__(self, before_put: Callable[[str], None] | None = None) -> None:
        self.before_put = before_put

    def write_if_absent(self, path: str, data: bytes, durable: bool = True) -> None:
        if self.exists(path):
            raise FileAlreadyExistsError(f"{path} already exists")
        if self.before_put is not None:
            self.before_put(path)
        self.write(path, data, durable)


def open_catalog(url: str, tmp_path: Path, **kw: Any) -> Catalog:
    return Catalog.open(url, warehouse=str(tmp_path / "warehouse"), **kw)


def log_files(root: str) -> list[str]:
    return sorted(p.name for p in (Path(root) / "_delta_log").glob("*.json"))


def staged_files(root: str) -> list[str]:
    return sorted(p.name for p in (Path(root) / "_delta_log" / "_staged_commits").iterdir())


def append(catalog: Catalog, name: str, *paths: str) -> int:
    txn = catalog.begin(name)
    txn.add_files([add(p) for p in paths])
    return txn.commit("WRITE").version


def paths(catalog: Catalog, name: str, version: int | None = None) -> list[str]:
    return sorted(catalog.snapshot(name, version).files.column("path").to_pylist())


def commit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_create_catalog_managed_table(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        snapshot = catalog.create_table("sales.orders", SCHEMA)
        entry = catalog.table("sales.orders")
        assert entry.location == str(tmp_path / "warehouse" / "sales.orders")
        assert (entry.managed, entry.catalog_managed, entry.latest_version) == (True, True, 0)
        p = snapshot.protocol
        assert (p.min_reader_version, p.min_writer_version) == (3, 7)
        assert p.reader_features == {"catalogManaged"}
        assert {"catalogManaged", "inCommitTimestamp"} <= (p.writer_features or set())
        assert snapshot.configuration["delta.enableInCommitTimestamps"] == "true"
        # version 0 was staged, ratified with the registration, then published
        assert log_files(entry.location) == ["00000000000000000000.json"]
        [staged] = staged_files(entry.location)
        assert staged.startswith("00000000000000000000.") and staged.endswith(".json")
        published = Path(entry.location, "_delta_log", "00000000000000000000.json")
        assert (
            published.read_bytes()
            == Path(entry.location, "_delta_log", "_staged_commits", staged).read_bytes()
        )
        info = commit_lines(published)[0]["commitInfo"]
        assert isinstance(info["inCommitTimestamp"], int) and info["txnId"]
        assert [t.name for t in catalog.tables()] == ["sales.orders"]
        with pytest.raises(TableAlreadyExistsError, match=r"sales\.orders"):
            catalog.create_table("sales.orders", SCHEMA, location=str(tmp_path / "other"))
        assert not (tmp_path / "other").exists()  # the refused statement wrote nothing
        with pytest.raises(DeltaIllegalArgumentException, match="invalid table name"):
            catalog.create_table("../escape", SCHEMA)
        with pytest.raises(DeltaIllegalArgumentException, match="in-commit timestamps"):
            catalog.create_table(
                "no_ict", SCHEMA, configuration={"delta.enableInCommitTimestamps": "false"}
            )
        with pytest.raises(DeltaTableNotFoundError, match="no_ict"):
            catalog.table("no_ict")


def test_path_access_refused_by_feature_name(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("t", SCHEMA)
        root = catalog.table("t").location
        with pytest.raises(UnsupportedTableFeatureError, match="catalogManaged") as e:
            DeltaLog(root).snapshot()
        assert e.value.features == ["catalogManaged"]  # type: ignore[attr-defined]
        # a filesystem writer holding a snapshot read through the catalog is refused too
        txn = Transaction(DeltaLog(root), catalog.snapshot("t"))
        txn.add_files([add("sneaky.parquet")])
        with pytest.raises(UnsupportedTableFeatureError, match=r"catalogManaged.*by path"):
            txn.commit("WRITE")
        assert log_files(root) == ["00000000000000000000.json"]
        assert catalog.table("t").latest_version == 0


def test_ratification_order_and_at_most_once(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("a", SCHEMA)
        catalog.create_table("b", SCHEMA)
        a, b = catalog.table("a").table_id, catalog.table("b").table_id
        backend = catalog.backend
        with pytest.raises(CommitConflictError, match="version 2 is taken") as e:
            backend.ratify([Ratification(a, 2, "x.json")])  # v1 is not ratified yet
        assert e.value.latest == {a: 0}
        backend.ratify([Ratification(a, 1, "first.json")])
        with pytest.raises(CommitConflictError) as e:
            backend.ratify([Ratification(a, 1, "second.json")])
        assert e.value.latest == {a: 1}
        # all or none: b's good proposal is not ratified with a's losing one
        with pytest.raises(CommitConflictError):
            backend.ratify([Ratification(b, 1, "b1.json"), Ratification(a, 1, "again.json")])
        assert backend.latest_versions([a, b]) == {a: 1, b: 0}
        latest, stored = backend.ratified_commits(a)
        assert latest == 1
        assert [(c.version, c.staged_name) for c in stored] == [(1, "first.json")]
        assert backend.ratified_commits(b)[1] == []


def test_lost_race_is_retried_and_conflicts_are_typed(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("t", SCHEMA)
        append(catalog, "t", "base.parquet")
        first, second = catalog.begin("t"), catalog.begin("t")
        first.add_files([add("one.parquet")])
        second.add_files([add("two.parquet")])
        assert first.commit("WRITE").version == 2
        assert second.commit("WRITE").version == 3  # lost v2 in the catalog, retried
        assert second.attempts == 2
        assert paths(catalog, "t") == ["base.parquet", "one.parquet", "two.parquet"]
        root = catalog.table("t").location
        assert log_files(root)[-1] == "00000000000000000003.json"
        # two removes of the same file: the loser fails by type, nothing of it is committed
        d1, d2 = catalog.begin("t"), catalog.begin("t")
        d1.remove_files([{"path": "base.parquet"}])
        d2.remove_files([{"path": "base.parquet"}])
        d1.commit("DELETE")
        with pytest.raises(ConcurrentDeleteDeleteException, match=r"base\.parquet"):
            d2.commit("DELETE")
        assert catalog.table("t").latest_version == 4
        assert paths(catalog, "t") == ["one.parquet", "two.parquet"]


def test_concurrent_threads_never_lose_a_commit(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("t", SCHEMA)
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            with open_catalog(catalog_url, tmp_path) as own:
                for j in range(5):
                    append(own, "t", f"w{i}-{j}.parquet")
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_catalog(catalog_url, tmp_path) as catalog:
        assert paths(catalog, "t") == sorted(
            f"w{i}-{j}.parquet" for i in range(4) for j in range(5)
        )
        assert catalog.table("t").latest_version == 20
        assert len(log_files(catalog.table("t").location)) == 21


def test_readers_see_ratified_unpublished_commits(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path, auto_publish=False) as catalog:
        catalog.create_table("t", SCHEMA)
        root = catalog.table("t").location
        assert log_files(root) == []  # even version 0 waits for publishing
        append(catalog, "t", "a.parquet")
        append(catalog, "t", "b.parquet")
        assert log_files(root) == []
        snapshot = catalog.snapshot("t")
        assert snapshot.version == 2
        assert paths(catalog, "t") == ["a.parquet", "b.parquet"]
        assert paths(catalog, "t", 1) == ["a.parquet"]
        assert [r["version"] for r in catalog.delta_log("t").history()] == [2, 1, 0]
        assert catalog.publish("t") == [0, 1, 2]
        assert log_files(root) == [f"{v:020d}.json" for v in range(3)]
        assert catalog.backend.ratified_commits(catalog.table("t").table_id)[1] == []
        assert catalog.publish("t") == []
        assert paths(catalog, "t") == ["a.parquet", "b.parquet"]
        assert paths(catalog, "t", 1) == ["a.parquet"]


def test_catalog_commit_wins_over_published_files(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path, auto_publish=False) as catalog:
        catalog.create_table("t", SCHEMA)
        catalog.publish("t")
        append(catalog, "t", "real.parquet")
        log_dir = Path(catalog.table("t").location, "_delta_log")
        staged = next(
            p for p in (log_dir / "_staged_commits").iterdir() if p.name[:20] == f"{1:020d}"
        )
        forged = staged.read_text().replace("real.parquet", "forged.parquet")
        (log_dir / f"{1:020d}.json").write_text(forged)  # same version, other content
        (log_dir / f"{2:020d}.json").write_text(forged)  # beyond the latest ratified version
        assert catalog.snapshot("t").version == 1
        assert paths(catalog, "t") == ["real.parquet"]
        with pytest.raises(VersionNotFoundError, match="latest version is 1"):
            catalog.snapshot("t", 2)
        with pytest.raises(CorruptLogError, match="bypassed the catalog"):
            catalog.publish("t")


def test_time_travel_by_in_commit_timestamps(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path, auto_publish=False) as catalog:
        catalog.create_table("t", SCHEMA)
        time.sleep(0.02)
        append(catalog, "t", "a.parquet")
        time.sleep(0.02)
        append(catalog, "t", "b.parquet")
        time.sleep(0.05)
        catalog.publish("t")  # published long after: file times must not matter
        log = catalog.delta_log("t")
        records = log.commit_records()
        icts = [r.commit_info["inCommitTimestamp"] for r in records]
        assert [r.timestamp for r in records] == icts
        assert icts == sorted(icts) and len(set(icts)) == 3
        root = catalog.table("t").location
        mtime_ms = Path(root, "_delta_log", f"{1:020d}.json").stat().st_mtime * 1000
        assert mtime_ms > icts[2]  # so a file-time lookup would answer differently
        assert log.version_at_timestamp(icts[1]) == 1
        assert log.version_at_timestamp(icts[2] - 1) == 1
        assert sorted(log.snapshot_at_timestamp(icts[2]).files.column("path").to_pylist()) == [
            "a.parquet",
            "b.parquet",
        ]
        assert catalog.snapshot("t").timestamp == icts[2]


def test_checkpoints_only_of_published_versions(catalog_url: str, tmp_path: Path) -> None:
    conf = {"delta.checkpointInterval": "2"}
    with open_catalog(catalog_url, tmp_path, auto_publish=False) as catalog:
        catalog.create_table("held", SCHEMA, configuration=conf)
        append(catalog, "held", "a.parquet")
        append(catalog, "held", "b.parquet")  # version 2: a checkpoint is due but unpublished
        log_dir = Path(catalog.table("held").location, "_delta_log")
        assert list(log_dir.glob("*.checkpoint.parquet")) == []
        snapshot = catalog.snapshot("held")
        with pytest.raises(DeltaUnsupportedOperationException, match="not published"):
            checkpoint_now(catalog.delta_log("held").store, snapshot)
        catalog.publish("held")
        checkpoint_now(catalog.delta_log("held").store, catalog.snapshot("held"))
        assert [p.name for p in log_dir.glob("*.checkpoint.parquet")] == [
            f"{2:020d}.checkpoint.parquet"
        ]
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("auto", SCHEMA, configuration=conf)
        append(catalog, "auto", "a.parquet")
        append(catalog, "auto", "b.parquet")
        log_dir = Path(catalog.table("auto").location, "_delta_log")
        assert [p.name for p in log_dir.glob("*.checkpoint.parquet")] == [
            f"{2:020d}.checkpoint.parquet"
        ]
        append(catalog, "auto", "c.parquet")
        assert paths(catalog, "auto") == ["a.parquet", "b.parquet", "c.parquet"]


def test_disabling_in_commit_timestamps_is_refused(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("t", SCHEMA)
        txn = catalog.begin("t")
        md: Metadata = txn.metadata
        conf = dict(md.configuration) | {"delta.enableInCommitTimestamps": "false"}
        txn.update_metadata(md.with_changes(configuration=conf))
        with pytest.raises(DeltaAnalysisException, match="inCommitTimestamp"):
            txn.commit("SET TBLPROPERTIES")
        assert catalog.table("t").latest_version == 0


def test_registry_external_and_drop(catalog_url: str, tmp_path: Path) -> None:
    with open_catalog(catalog_url, tmp_path) as catalog:
        fs_root = str(tmp_path / "fs_table")
        create_table(DeltaLog(fs_root), SCHEMA)
        entry = catalog.register_table("fs", fs_root)
        assert (entry.managed, entry.catalog_managed, entry.latest_version) == (False, False, None)
        txn = catalog.begin("fs")  # an ordinary filesystem table, reached by name
        txn.add_files([add("x.parquet")])
        assert txn.commit("WRITE").version == 1
        assert log_files(fs_root)[-1] == f"{1:020d}.json"
        with pytest.raises(DeltaUnsupportedOperationException, match="not catalog-managed"):
            catalog.publish("fs")
        catalog.create_table("cm", SCHEMA)
        with pytest.raises(DeltaUnsupportedOperationException, match="catalog-managed"):
            catalog.register_table("again", catalog.table("cm").location)
        dropped = catalog.drop_table("cm")
        assert [t.name for t in catalog.tables()] == ["fs"]
        assert Path(dropped.location, "_delta_log").is_dir()  # a soft delete
        with pytest.raises(DeltaTableNotFoundError, match="'cm'"):
            catalog.snapshot("cm")


def test_deltalake_refuses_catalog_managed_table_without_the_catalog(
    catalog_url: str, tmp_path: Path
) -> None:
    """deltalake 1.x knows catalogManaged: even fully published, it refuses to load the
    table by path, asking for the catalog's latest version (``with_max_catalog_version``,
    which its Python API does not expose), so it cannot read our tables today."""
    deltalake = pytest.importorskip("deltalake")
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("t", SCHEMA)
        append(catalog, "t", "a.parquet")
        root = catalog.table("t").location
        assert log_files(root) == [f"{v:020d}.json" for v in range(2)]  # fully published
        with pytest.raises(
            deltalake.exceptions.DeltaError,
            match="Max catalog version is required when loading a catalog-managed table",
        ):
            deltalake.DeltaTable(root)
        # the same log without the feature reads fine, so the feature is the only obstacle
        plain = str(tmp_path / "plain")
        create_table(DeltaLog(plain), SCHEMA)
        assert deltalake.DeltaTable(plain).version() == 0


def test_s3_semantics_race_loses_a_commit_without_the_catalog(
    catalog_url: str, tmp_path: Path
) -> None:
    both_checked = threading.Barrier(2)

    def widen(path: str) -> None:
        if path.endswith(f"{1:020d}.json"):
            both_checked.wait(timeout=30)

    store = LastWriterWinsLogStore(before_put=widen)
    # Two filesystem writers doing what a put-if-absent commit does, on that store:
    log_dir = tmp_path / "fs" / "_delta_log"
    results: list[str] = []

    def put(content: str) -> None:
        try:
            store.write_if_absent(f"{log_dir}/{1:020d}.json", content.encode())
            results.append(content)
        except FileAlreadyExistsError:
            results.append("refused")

    threads = [threading.Thread(target=put, args=(c,)) for c in ("writer-1", "writer-2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["writer-1", "writer-2"]  # both were told they committed
    survivor = (log_dir / f"{1:020d}.json").read_text()
    assert survivor in ("writer-1", "writer-2")  # ... and one of the two commits is lost
    # so the log refuses filesystem commits on such a store
    fs_root = str(tmp_path / "fs2")
    with pytest.raises(DeltaUnsupportedOperationException, match="put-if-absent"):
        create_table(DeltaLog(fs_root, LastWriterWinsLogStore()), SCHEMA)
    # Through the catalog, the same store and the same race lose nothing.
    with open_catalog(catalog_url, tmp_path, store=LastWriterWinsLogStore()) as catalog:
        catalog.create_table("t", SCHEMA)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(i: int) -> None:
        try:
            with open_catalog(catalog_url, tmp_path, store=LastWriterWinsLogStore()) as own:
                txn = own.begin("t")
                txn.add_files([add(f"w{i}.parquet")])
                start.wait(timeout=30)  # both read version 0, both commit version 1
                txn.commit("WRITE")
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_catalog(catalog_url, tmp_path, store=LastWriterWinsLogStore()) as catalog:
        assert paths(catalog, "t") == ["w0.parquet", "w1.parquet"]
        assert catalog.table("t").latest_version == 2
