"""Symlink manifests (Spark-free): contents equal the snapshot's files, stale partitions
go away, the post-commit hook keeps them current, and refused tables are refused."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from delta_pyspark.core.commands.alter_table import set_properties, unset_properties
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction import manifest as manifest_mod
from delta_pyspark.core.transaction.manifest import MANIFEST_DIR, generate_manifest
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaUnsupportedOperationException,
)


def _schema(*fields: tuple[str, str]) -> str:
    return json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }
    )


SCHEMA = _schema(("id", "long"), ("p", "string"), ("q", "integer"))


def _add(path: str, values: dict[str, str | None] | None = None) -> dict[str, Any]:
    return {
        "path": path,
        "partitionValues": values or {},
        "size": 10,
        "modificationTime": 1_700_000_000_000,
        "dataChange": True,
        "stats": json.dumps({"numRecords": 1}),
    }


def _append(log: DeltaLog, adds: list[dict[str, Any]]) -> None:
    txn = Transaction(log, log.snapshot())
    txn.add_files(adds)
    txn.commit("WRITE", {"mode": "Append"})


def _delete_where(log: DeltaLog, predicate: Any) -> None:
    snap = log.snapshot()
    files = snap.files
    keep = [i for i, row in enumerate(files.to_pylist()) if predicate(row)]
    txn = Transaction(log, snap)
    txn.read_whole_table()
    txn.remove_files(remove_actions(files.take(keep)))
    txn.commit("DELETE", {})


def _manifests(root: Path) -> dict[str, list[str]]:
    """Manifest path (relative to the manifest dir) -> its lines."""
    base = root / MANIFEST_DIR
    if not base.exists():
        return {}
    return {
        str(p.relative_to(base)): p.read_text().splitlines()
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def _expected(root: Path, log: DeltaLog) -> set[str]:
    snap = log.snapshot()
    return {"file:" + str(root / unquote(p)) for p in snap.files.column("path").to_pylist()}


def _partitioned(tmp_path: Path) -> tuple[Path, DeltaLog]:
    root = tmp_path / "t"
    log = DeltaLog(str(root))
    create_table(log, SCHEMA, ["p", "q"])
    _append(
        log,
        [
            _add("p=a/q=1/f1.parquet", {"p": "a", "q": "1"}),
            _add("p=a/q=1/f2.parquet", {"p": "a", "q": "1"}),
            _add("p=b%20c/q=2/f3.parquet", {"p": "b c", "q": "2"}),
            _add("p=__HIVE_DEFAULT_PARTITION__/q=3/f4.parquet", {"p": None, "q": "3"}),
        ],
    )
    return root, log


def test_unpartitioned_manifest_lists_exactly_the_snapshot_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(str(root))
    create_table(log, _schema(("id", "long")))
    _append(log, [_add("f1.parquet"), _add("f%20two.parquet"), _add("sub/f3.parquet")])
    assert generate_manifest(log, "symlink_format_manifest") == 1
    found = _manifests(root)
    assert list(found) == ["manifest"]
    assert set(found["manifest"]) == _expected(root, log)
    assert f"file:{root}/f two.parquet" in found["manifest"]  # unescaped, as Hadoop spells it
    assert len(found["manifest"]) == 3
    # the table shrinks to nothing: the manifest stays, empty
    _delete_where(log, lambda row: True)
    generate_manifest(log, "SYMLINK_format_manifest")  # mode is case-insensitive
    assert _manifests(root) == {"manifest": []}


def test_partitioned_manifests_one_per_partition(tmp_path: Path) -> None:
    root, log = _partitioned(tmp_path)
    assert generate_manifest(log, "symlink_format_manifest") == 3
    found = _manifests(root)
    assert found == {
        "p=a/q=1/manifest": [f"file:{root}/p=a/q=1/f1.parquet", f"file:{root}/p=a/q=1/f2.parquet"],
        "p=b c/q=2/manifest": [f"file:{root}/p=b c/q=2/f3.parquet"],
        "p=__HIVE_DEFAULT_PARTITION__/q=3/manifest": [
            f"file:{root}/p=__HIVE_DEFAULT_PARTITION__/q=3/f4.parquet"
        ],
    }
    assert {line for lines in found.values() for line in lines} == _expected(root, log)


def test_full_generation_removes_vanished_partitions(tmp_path: Path) -> None:
    root, log = _partitioned(tmp_path)
    generate_manifest(log, "symlink_format_manifest")
    _delete_where(log, lambda row: dict(row["partitionValues"])["p"] != "a")
    generate_manifest(log, "symlink_format_manifest")
    assert set(_manifests(root)) == {"p=a/q=1/manifest"}
    assert not (root / MANIFEST_DIR / "p=b c").exists()  # empty directories are pruned
    assert not (root / MANIFEST_DIR / "p=__HIVE_DEFAULT_PARTITION__").exists()


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(str(root))
    create_table(log, _schema(("id", "long")))
    _append(log, [_add("file:/elsewhere/x%20y.parquet"), _add("s3://bucket/k/z.parquet")])
    generate_manifest(log, "symlink_format_manifest")
    assert sorted(_manifests(root)["manifest"]) == [
        "file:/elsewhere/x y.parquet",
        "s3://bucket/k/z.parquet",
    ]


def test_bad_mode_lists_the_valid_ones(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(str(root))
    create_table(log, _schema(("id", "long")))
    with pytest.raises(DeltaIllegalArgumentException, match="symlink_format_manifest") as e:
        generate_manifest(log, "xyz")
    assert "'xyz' is not supported" in str(e.value)
    assert not (root / MANIFEST_DIR).exists()


def test_deletion_vectors_are_refused(tmp_path: Path, testdata: Path) -> None:
    root = tmp_path / "dv"
    shutil.copytree(testdata / "delta-rs" / "table-with-dv-small", root)
    log = DeltaLog(str(root))
    with pytest.raises(DeltaUnsupportedOperationException, match="deletion vectors"):
        generate_manifest(log, "symlink_format_manifest")
    assert not (root / MANIFEST_DIR).exists()
    # and the property cannot be enabled while vectors are present
    with pytest.raises(DeltaAnalysisException, match="deletion vectors"):
        set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})


def test_column_mapping_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(str(root))
    create_table(log, _schema(("id", "long")), configuration={"delta.columnMapping.mode": "name"})
    with pytest.raises(DeltaUnsupportedOperationException, match="column mapping"):
        generate_manifest(log, "symlink_format_manifest")


def test_auto_update_after_every_commit(tmp_path: Path) -> None:
    root, log = _partitioned(tmp_path)
    assert not (root / MANIFEST_DIR).exists()  # nothing until enabled
    set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    # the enabling commit changes metadata: full generation
    assert len(_manifests(root)) == 3

    _append(log, [_add("p=a/q=1/f5.parquet", {"p": "a", "q": "1"})])
    assert {x for v in _manifests(root).values() for x in v} == _expected(root, log)
    assert len(_manifests(root)["p=a/q=1/manifest"]) == 3

    _append(log, [_add("p=new/q=9/f6.parquet", {"p": "new", "q": "9"})])
    assert _manifests(root)["p=new/q=9/manifest"] == [f"file:{root}/p=new/q=9/f6.parquet"]

    _delete_where(log, lambda row: dict(row["partitionValues"])["p"] in ("b c", None))
    found = _manifests(root)
    assert set(found) == {"p=a/q=1/manifest", "p=new/q=9/manifest"}
    assert {x for v in found.values() for x in v} == _expected(root, log)
    assert not (root / MANIFEST_DIR / "p=b c").exists()

    # disabled: manifests stop following the table
    unset_properties(log, ["delta.compatibility.symlinkFormatManifest.enabled"])
    _append(log, [_add("p=a/q=1/f7.parquet", {"p": "a", "q": "1"})])
    assert f"file:{root}/p=a/q=1/f7.parquet" not in _manifests(root)["p=a/q=1/manifest"]


def test_auto_update_only_rewrites_touched_partitions(tmp_path: Path, monkeypatch: Any) -> None:
    root, log = _partitioned(tmp_path)
    set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    written: list[str] = []
    real = manifest_mod._write
    monkeypatch.setattr(
        manifest_mod,
        "_write",
        lambda store, base, directory, uris: (
            written.append(directory),
            real(store, base, directory, uris),
        ),
    )
    _append(log, [_add("p=a/q=1/f5.parquet", {"p": "a", "q": "1"})])
    assert written == ["p=a/q=1"]
    assert len(_manifests(root)["p=a/q=1/manifest"]) == 3


def test_auto_update_regenerates_when_manifests_are_missing(tmp_path: Path) -> None:
    root, log = _partitioned(tmp_path)
    set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    shutil.rmtree(root / MANIFEST_DIR)
    _append(log, [_add("p=a/q=1/f5.parquet", {"p": "a", "q": "1"})])
    assert len(_manifests(root)) == 3
    assert {x for v in _manifests(root).values() for x in v} == _expected(root, log)


def test_auto_update_unpartitioned(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(str(root))
    create_table(
        log,
        _schema(("id", "long")),
        configuration={"delta.compatibility.symlinkFormatManifest.enabled": "true"},
    )
    assert _manifests(root) == {"manifest": []}
    _append(log, [_add("a.parquet"), _add("b.parquet")])
    assert sorted(_manifests(root)["manifest"]) == [
        f"file:{root}/a.parquet",
        f"file:{root}/b.parquet",
    ]
    _delete_where(log, lambda row: row["path"] == "a.parquet")
    assert _manifests(root)["manifest"] == [f"file:{root}/b.parquet"]


def test_hook_failure_does_not_fail_the_commit(
    tmp_path: Path, testdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A table another writer put into an illegal state (manifests on, DVs present):
    the commit stands, the hook logs its refusal."""
    root = tmp_path / "dv"
    shutil.copytree(testdata / "delta-rs" / "table-with-dv-small", root)
    log = DeltaLog(str(root))
    snap = log.snapshot()
    conf = dict(snap.configuration) | {"delta.compatibility.symlinkFormatManifest.enabled": "true"}
    txn = Transaction(log, snap)
    txn.update_metadata(snap.metadata.with_changes(configuration=conf))
    with caplog.at_level(logging.ERROR):
        new = txn.commit("SET TBLPROPERTIES", {})
    assert log.snapshot().version == new.version == snap.version + 1
    assert "symlink manifest update failed" in caplog.text
    assert not (root / MANIFEST_DIR).exists()


def test_manifest_written_atomically(tmp_path: Path) -> None:
    """No temporary files are left next to the manifests."""
    root, log = _partitioned(tmp_path)
    generate_manifest(log, "symlink_format_manifest")
    generate_manifest(log, "symlink_format_manifest")
    names = [p.name for p in (root / MANIFEST_DIR).rglob("*") if p.is_file()]
    assert names == ["manifest"] * 3
