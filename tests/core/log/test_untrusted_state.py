"""Destructive commands on a log or a directory that cannot be trusted: VACUUM refuses
invalid paths, a disagreeing ``.crc`` and missing live files (deleting nothing)
unless ``trust_damaged_log``; no command follows a symbolic link out of the table;
RESTORE and CLONE never read, copy or write outside the tables through a relative
path. Canary files outside the table and behind links must survive every command."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import time
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
from table_helpers import commit, make_table, write_file

from delta_pyspark.core.commands import vacuum as vacuum_module
from delta_pyspark.core.commands.clone import clone_table, file_uri
from delta_pyspark.core.commands.restore import restore
from delta_pyspark.core.commands.vacuum import vacuum
from delta_pyspark.core.log.table_paths import invalid_file_paths
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    ChecksumMismatchError,
    CorruptLogError,
    DeltaError,
    DeltaUnsupportedOperationException,
)

DAY = 86_400


# --------------------------------------------------------------------------- helpers


def tree(root: Path) -> dict[str, bytes | str]:
    """Every file and link under ``root`` (links not entered): bytes, or the link target."""
    out: dict[str, bytes | str] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_file():
                out[rel] = path.read_bytes()
    return out


def age_tree(root: Path, days: float = 30) -> None:
    """Age every file, link and directory under ``root`` except the log; links
    themselves, never their targets."""
    t = time.time() - days * DAY
    for directory, dirs, files in os.walk(root):
        if "_delta_log" in Path(directory).parts:
            continue
        for name in dirs + files:
            if name != "_delta_log":
                os.utime(Path(directory) / name, (t, t), follow_symlinks=False)


def canaries(tmp_path: Path) -> tuple[Path, dict[Path, bytes]]:
    """A directory beside the table holding files no command may touch."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    files = {
        outside / "c.parquet": b"canary parquet",
        outside / "sub" / "deep.parquet": b"deep canary",
        outside / "deletion_vector_x.bin": b"canary dv",
    }
    for path, data in files.items():
        path.write_bytes(data)
    return outside, files


def assert_intact(files: dict[Path, bytes]) -> None:
    for path, data in files.items():
        assert path.is_file() and not path.is_symlink(), path
        assert path.read_bytes() == data, path


def mangle(log: DeltaLog, version: int, old_path: str, new_path: str) -> None:
    """Rewrite one path in a committed JSON file, leaving its ``.crc`` as it was."""
    commit_file = Path(log.log_dir) / f"{version:020d}.json"
    text = commit_file.read_text()
    assert json.dumps(old_path) in text
    commit_file.write_text(text.replace(json.dumps(old_path), json.dumps(new_path)))


def two_files(root: Path) -> tuple[DeltaLog, dict, dict]:
    """A table whose version 1 adds files a and b (with a ``.crc``)."""
    log = make_table(root)
    a, b = write_file(root, [1, 2]), write_file(root, [3])
    commit(log, [a, b])
    assert (Path(log.log_dir) / f"{1:020d}.crc").exists()
    return log, a, b


def refuse(log: DeltaLog, error: type[DeltaError] = DeltaError) -> list[str]:
    """VACUUM (dry run, then real; retention 0) refuses and the table is unchanged."""
    root = Path(log.table_root)
    before = tree(root)
    messages = []
    for dry_run in (True, False):
        with pytest.raises(error) as err:
            vacuum(log, 0, check_enabled=False, dry_run=dry_run)
        messages.append(str(err.value))
        assert tree(root) == before
    return messages


# --------------------------------------------------------------------------- invalid paths


@pytest.mark.parametrize(
    "spelling",
    [
        "",
        ".",
        "./",
        "sub/..",
        "../outside/c.parquet",
        "%2E%2E/outside/c.parquet",
        "file://{root}",  # the table directory itself, spelled absolutely
        "/",
    ],
)
def test_vacuum_refuses_an_add_path_not_naming_a_file_in_the_table(
    tmp_path: Path, spelling: str
) -> None:
    """The add's path was mangled: the file it used to name must not become garbage."""
    _, outside_files = canaries(tmp_path)
    root = tmp_path / "t"
    log, a, b = two_files(root)
    mangle(log, 1, a["path"], spelling.format(root=root))
    age_tree(root)

    refuse(log, CorruptLogError)

    assert (root / a["path"]).exists() and (root / b["path"]).exists()
    assert_intact(outside_files)


def test_vacuum_refusal_names_the_path_the_version_and_the_way_out(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log, a, _ = two_files(root)
    mangle(log, 1, a["path"], f"file://{root}/sub/..")
    age_tree(root)
    message = refuse(log, CorruptLogError)[1]  # the log reader refuses the state itself
    assert f"add.path 'file://{root}/sub/..' cannot name a file of the table" in message
    assert f"{1:020d}.json" in message and "at version 1" in message


def test_vacuum_refuses_an_escaping_tombstone_within_retention(tmp_path: Path) -> None:
    """A recent remove keeps its file for time travel: with the path mangled in both
    its add and its remove, the live state and the ``.crc`` still agree, and only the
    tombstone tells that a file VACUUM would delete is still needed."""
    root = tmp_path / "t"
    log, a, _ = two_files(root)
    removed = commit(
        log,
        removes=[
            {"path": a["path"], "deletionTimestamp": int(time.time() * 1000), "dataChange": True}
        ],
    )
    for version in (1, removed.version):
        mangle(log, version, a["path"], "..")
    age_tree(root)

    before = tree(root)
    with pytest.raises(CorruptLogError) as err:
        vacuum(log, 24, check_enabled=False)  # a's tombstone is within the 24 hours
    assert tree(root) == before
    assert "remove.path '..' cannot name a file" in str(err.value)


def test_vacuum_refuses_a_deletion_vector_outside_the_table(tmp_path: Path) -> None:
    _, outside_files = canaries(tmp_path)
    root = tmp_path / "t"
    log = make_table(root)
    a = write_file(root, [1, 2, 3])
    a["deletionVector"] = {
        "storageType": "p",
        "pathOrInlineDv": "../outside/deletion_vector_x.bin",
        "offset": 1,
        "sizeInBytes": 4,
        "cardinality": 1,
    }
    a["deletionVector"]["pathOrInlineDv"] = "deletion_vector_x.bin"
    commit(log, [a])
    mangle(log, 1, "deletion_vector_x.bin", "../outside/deletion_vector_x.bin")
    age_tree(root)

    messages = refuse(log, CorruptLogError)

    assert (root / a["path"]).exists()
    assert_intact(outside_files)
    assert "deletionVector '../outside/deletion_vector_x.bin'" in messages[0]


def test_invalid_file_paths_accepts_absolute_paths_and_inner_dot_dots(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    paths = [
        "a.parquet",
        "./a.parquet",
        "x/../a.parquet",
        "p=%2E%2E/a.parquet",  # a partition value "..": a directory named "p=.."
        "/elsewhere/a.parquet",
        "file:///elsewhere/a.parquet",
        "s3://bucket/a.parquet",
        f"{root}/a.parquet",
        f"file://{root}/x/../a.parquet",
        f"{root}2",  # a sibling sharing the root's name as a prefix
        f"{root}/a.parquet?not-a-query",  # a plain path: "?" is part of the name
        "",
        ".",
        "x/..",
        "..",
        "../t2/a.parquet",
        "%2e%2e/a.parquet",
        "x/%2E%2E/%2E%2E/a.parquet",
        "a\x00.parquet",
        "a%00.parquet",
        f"{root}/a\x00.parquet",
        "/",
        root,
        f"{root}/",
        f"{root}//.",
        f"file://{root}",
        f"file://localhost{root}",
        f"file://{root}/x/..",
        f"file://{quote(root)}%2F..",
        f"file://{root}?query",
        f"file://{root}#fragment",
        str(tmp_path),
    ]
    files = pa.table({"path": paths})
    assert invalid_file_paths(root, files) == paths[11:]


# --------------------------------------------------------------------------- checksum, missing


def drop_add_line(log: DeltaLog, version: int, path: str) -> None:
    """Damage a commit: lose the line adding ``path`` (its ``.crc`` still counts it)."""
    commit_file = Path(log.log_dir) / f"{version:020d}.json"
    lines = commit_file.read_text().splitlines()
    kept = [line for line in lines if json.dumps(path) not in line]
    assert len(kept) == len(lines) - 1
    commit_file.write_text("\n".join(kept) + "\n")


def test_vacuum_refuses_a_log_its_checksum_disagrees_with(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log, a, b = two_files(root)
    drop_add_line(log, 1, b["path"])  # replay now says one file; the .crc says two
    age_tree(root)

    message = refuse(log, ChecksumMismatchError)[0]  # the log reader refuses the version

    assert f"{1:020d}.crc disagrees" in message and "numFiles 2 != 1" in message
    assert (root / a["path"]).exists() and (root / b["path"]).exists()


@pytest.mark.parametrize(
    "field, value",
    [
        ("tableSizeBytes", 1),
        ("metadata.id", "not-this-table"),
        ("metadata.partitionColumns", ["id"]),
        ("protocol.minWriterVersion", 7),
    ],
)
def test_vacuum_refuses_any_checksum_field_that_disagrees(
    tmp_path: Path, field: str, value: object
) -> None:
    root = tmp_path / "t"
    log, _, _ = two_files(root)
    crc_file = Path(log.log_dir) / f"{1:020d}.crc"
    crc = json.loads(crc_file.read_text())
    *parents, key = field.split(".")
    node = crc
    for name in parents:
        node = node[name]
    node[key] = value
    crc_file.write_text(json.dumps(crc))
    orphan = write_file(root, [9], name="orphan.parquet")
    age_tree(root)

    messages = refuse(log, ChecksumMismatchError)

    assert field.split(".")[0] in messages[0]
    assert (root / orphan["path"]).exists()


def test_a_disagreeing_checksum_is_not_overridden_by_trust_but_by_deleting_it(
    tmp_path: Path,
) -> None:
    """The override is VACUUM's own; a checksum disagreeing with the log fails every read
    of that version. Deleting the ``.crc`` (the documented way once the commits are known
    to be right) lets VACUUM act on what the log says: the file whose add was lost goes."""
    root = tmp_path / "t"
    log, a, b = two_files(root)
    drop_add_line(log, 1, b["path"])
    age_tree(root)

    before = tree(root)
    with pytest.raises(ChecksumMismatchError):
        vacuum(log, 0, check_enabled=False, trust_damaged_log=True)
    assert tree(root) == before

    (Path(log.log_dir) / f"{1:020d}.crc").unlink()
    result = vacuum(log, 0, check_enabled=False)

    assert result.plan.paths == [str(root / b["path"])]
    assert not (root / b["path"]).exists()
    assert (root / a["path"]).exists()


def test_vacuum_refuses_when_a_live_file_is_missing(tmp_path: Path) -> None:
    """One flipped byte in a path keeps the count and size the ``.crc`` checks: the
    log names a file that is not there, and the file it meant looks unused."""
    root = tmp_path / "t"
    log, a, _ = two_files(root)
    flipped = a["path"][:-1] + "X"
    mangle(log, 1, a["path"], flipped)
    age_tree(root)

    message = refuse(log, CorruptLogError)[0]

    assert "1 live file(s) do not exist" in message and flipped in message
    assert (root / a["path"]).exists()

    result = vacuum(log, 0, check_enabled=False, trust_damaged_log=True)
    assert result.plan.paths == [str(root / a["path"])]  # what trusting it costs


def test_trust_damaged_log_does_not_override_the_log_reader(tmp_path: Path) -> None:
    """An add whose path became "": the log reader refuses the state, so even with the
    override VACUUM deletes nothing (the override covers VACUUM's own check only)."""
    _, outside_files = canaries(tmp_path)
    root = tmp_path / "t"
    log, a, _ = two_files(root)
    mangle(log, 1, a["path"], "")
    age_tree(root)

    before = tree(root)
    with pytest.raises(CorruptLogError, match=r"add\.path '' cannot name a file"):
        vacuum(log, 0, check_enabled=False, trust_damaged_log=True)
    assert tree(root) == before
    assert_intact(outside_files)


# --------------------------------------------------------------------------- symbolic links


def linked_table(tmp_path: Path) -> tuple[DeltaLog, Path, dict[Path, bytes], dict]:
    """A table with canaries behind links: ``ext`` -> the outside directory, an unused
    ``stray-link.parquet`` -> an outside file, a live file ``through/f.parquet`` reached
    via ``through`` -> ``real`` (inside), and a live ``alias.parquet`` -> ``data/a.parquet``."""
    outside, outside_files = canaries(tmp_path)
    root = tmp_path / "t"
    log = make_table(root)
    (root / "ext").symlink_to(outside, target_is_directory=True)
    (root / "stray-link.parquet").symlink_to(outside / "c.parquet")
    real = write_file(root, [1], name="real/f.parquet")
    (root / "through").symlink_to("real", target_is_directory=True)
    through = dict(real, path="through/f.parquet")
    target = write_file(root, [2], name="data/a.parquet")
    (root / "alias.parquet").symlink_to("data/a.parquet")
    alias = dict(target, path="alias.parquet")
    linked = write_file(root, [3], name="ext-live.parquet")  # then moved behind ``ext``
    os.replace(root / "ext-live.parquet", outside / "live.parquet")
    outside_files[outside / "live.parquet"] = (outside / "live.parquet").read_bytes()
    commit(log, [through, alias, dict(linked, path="ext/live.parquet")])
    age_tree(root)
    return log, root, outside_files, {"through": through, "alias": alias}


@pytest.mark.parametrize("dry_run", [True, False])
def test_vacuum_never_follows_or_deletes_linked_directories(tmp_path: Path, dry_run: bool) -> None:
    log, root, outside_files, _ = linked_table(tmp_path)

    result = vacuum(log, 0, check_enabled=False, dry_run=dry_run)

    assert result.plan.paths == [str(root / "stray-link.parquet")]
    assert (root / "ext").is_symlink() and (root / "through").is_symlink()
    assert (root / "real" / "f.parquet").is_file()  # reached through ``through``
    assert (root / "data" / "a.parquet").is_file()  # reached through ``alias.parquet``
    assert (root / "alias.parquet").is_symlink()
    assert (root / "stray-link.parquet").is_symlink() == dry_run  # the unused link goes
    assert_intact(outside_files)  # its target stays
    for f in log.snapshot().files.column("path").to_pylist():
        assert (root / f).is_file()


def test_vacuum_keeps_an_old_unused_file_under_a_kept_link_to_an_inner_directory(
    tmp_path: Path,
) -> None:
    """Files under a linked inner directory are reachable by the link's name: kept."""
    root = tmp_path / "t"
    log = make_table(root)
    (root / "real").mkdir()
    (root / "real" / "unnamed.parquet").write_bytes(b"x")
    (root / "link").symlink_to(root / "real", target_is_directory=True)
    (root / "plain.parquet").write_bytes(b"y")
    age_tree(root)

    result = vacuum(log, 0, check_enabled=False)

    assert result.plan.paths == [str(root / "plain.parquet")]
    assert (root / "real" / "unnamed.parquet").exists() and (root / "link").is_symlink()


def test_dangling_links_are_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = make_table(root)
    (root / "gone.parquet").symlink_to(tmp_path / "nowhere.parquet")
    age_tree(root)
    assert vacuum(log, 0, check_enabled=False).plan.paths == []
    assert (root / "gone.parquet").is_symlink()


# --------------------------------------------------------------------------- restore, clone


def test_restore_refuses_a_version_naming_a_file_outside_the_table(tmp_path: Path) -> None:
    _, outside_files = canaries(tmp_path)
    root = tmp_path / "t"
    log, _, b = two_files(root)
    commit(log, removes=[{"path": b["path"]}])  # v2: a RESTORE to v1 would re-add b
    mangle(log, 1, b["path"], "../outside/c.parquet")
    before = tree(root)

    with pytest.raises(CorruptLogError, match=r"add.path '../outside/c.parquet' cannot name"):
        restore(log, 1)

    assert tree(root) == before
    assert_intact(outside_files)


def test_restore_with_links_and_canaries_leaves_them_intact(tmp_path: Path) -> None:
    log, root, outside_files, named = linked_table(tmp_path)
    commit(log, removes=[{"path": named["alias"]["path"]}])
    restore(log, 1)
    assert log.snapshot().num_files == 3
    assert (root / "alias.parquet").is_symlink() and (root / "ext").is_symlink()
    assert_intact(outside_files)


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_refuses_a_source_naming_a_file_outside_it(tmp_path: Path, shallow: bool) -> None:
    _, outside_files = canaries(tmp_path)
    root = tmp_path / "t"
    log, a, _ = two_files(root)
    mangle(log, 1, a["path"], "../outside/c.parquet")
    source_before = tree(root)

    with pytest.raises(CorruptLogError, match=r"add.path '../outside/c.parquet' cannot name"):
        clone_table(log, str(tmp_path / "clone"), shallow=shallow)

    assert not (tmp_path / "clone").exists() or tree(tmp_path / "clone") == {}
    assert tree(root) == source_before  # no clone registered
    assert_intact(outside_files)


def test_deep_clone_refuses_a_file_a_link_takes_out_of_the_source(tmp_path: Path) -> None:
    log, _, outside_files, _ = linked_table(tmp_path)

    with pytest.raises(DeltaUnsupportedOperationException, match=r"'ext/live\.parquet'"):
        clone_table(log, str(tmp_path / "clone"), shallow=False)

    assert not (tmp_path / "clone").exists() or tree(tmp_path / "clone") == {}
    assert_intact(outside_files)


def test_clones_of_a_table_with_inner_links(tmp_path: Path) -> None:
    """Links inside the source: a deep clone copies the bytes of files linked within
    it; a shallow clone names them; the canaries stay as they were either way."""
    log, _, outside_files, named = linked_table(tmp_path)
    commit(log, removes=[{"path": "ext/live.parquet"}])

    deep = clone_table(log, str(tmp_path / "deep"), shallow=False)
    shallow = clone_table(log, str(tmp_path / "shallow"), shallow=True)

    deep_root = Path(deep.target_root)
    for name in ("through", "alias"):
        copied = deep_root / named[name]["path"]
        assert copied.is_file() and not copied.is_symlink()
    assert not any(p.is_symlink() for p in deep_root.rglob("*"))
    assert DeltaLog(shallow.target_root).snapshot().num_files == 2
    assert_intact(outside_files)


def test_deep_clone_never_writes_through_a_link_in_the_replaced_target(tmp_path: Path) -> None:
    outside, outside_files = canaries(tmp_path)
    source = tmp_path / "src"
    log = make_table(source, partitioned=True)
    commit(log, [write_file(source, [1], "x")])
    target = tmp_path / "target"
    make_table(target, partitioned=True)
    (target / "part=x").symlink_to(outside, target_is_directory=True)

    with pytest.raises(DeltaUnsupportedOperationException, match="through a symbolic link"):
        clone_table(log, str(target), shallow=False, replace=True)

    assert sorted(p.name for p in outside.iterdir()) == [
        "c.parquet",
        "deletion_vector_x.bin",
        "sub",
    ]
    assert_intact(outside_files)
    assert DeltaLog(str(target)).snapshot().version == 0


# --------------------------------------------------------------------------- clones, races


def test_source_vacuum_refuses_when_a_shallow_clone_s_log_is_damaged(tmp_path: Path) -> None:
    """The clone's log lost the add of a source file the source itself dropped: the
    clone's ``.crc`` disagrees, and the source's VACUUM must not delete that file."""
    root = tmp_path / "src"
    log, a, b = two_files(root)
    clone = DeltaLog(clone_table(log, str(tmp_path / "clone"), shallow=True).target_root)
    commit(log, removes=[{"path": a["path"], "deletionTimestamp": 1}])
    drop_add_line(clone, 0, file_uri(str(root / a["path"])))
    age_tree(root)

    message = refuse(log, DeltaError)[0]

    assert f"shallow clone {clone.table_root}" in message and "numFiles 2 != 1" in message
    assert (root / a["path"]).exists() and (root / b["path"]).exists()


def test_a_directory_swapped_for_a_link_after_listing_is_not_followed(tmp_path: Path) -> None:
    outside, outside_files = canaries(tmp_path)
    (outside / "stray.parquet").write_bytes(b"outside, same name")
    outside_files[outside / "stray.parquet"] = b"outside, same name"
    root = tmp_path / "t"
    log = make_table(root)
    (root / "sub").mkdir()
    (root / "sub" / "stray.parquet").write_bytes(b"garbage")
    (root / "top.parquet").write_bytes(b"garbage")
    age_tree(root)

    def swap(plan: vacuum_module.VacuumPlan) -> None:
        assert plan.paths == [str(root / "sub" / "stray.parquet"), str(root / "top.parquet")]
        os.replace(root / "sub", tmp_path / "moved-away")
        (root / "sub").symlink_to(outside, target_is_directory=True)

    result = vacuum(log, 0, check_enabled=False, before_delete=swap)

    assert result.num_deleted_files == 1 and not (root / "top.parquet").exists()
    assert_intact(outside_files)
    assert (root / "sub").is_symlink()


def test_random_log_damage_never_costs_a_live_file(tmp_path: Path) -> None:
    """Seeded random damage to the commits (a byte, a lost or doubled line, a path,
    a truncation): VACUUM either refuses with a DeltaError or deletes no live file."""
    template = tmp_path / "template"
    log = make_table(template)
    for _ in range(3):
        commit(log, [write_file(template, [n]) for n in range(3)])
    first = log.snapshot().files.column("path")[0].as_py()
    commit(log, removes=[{"path": first, "deletionTimestamp": 1}])
    live = log.snapshot().files.column("path").to_pylist()
    age_tree(template)
    rng = random.Random(17)
    for i in range(60):
        root = tmp_path / f"t{i}"
        shutil.copytree(template, root)
        damage(rng, root / "_delta_log" / f"{rng.randrange(1, 5):020d}.json")
        with contextlib.suppress(DeltaError):
            vacuum(DeltaLog(str(root)), 0, check_enabled=False)
        assert all((root / p).exists() for p in live), i


def damage(rng: random.Random, commit_file: Path) -> None:
    data = commit_file.read_bytes()
    lines = data.splitlines(keepends=True)
    kind = rng.randrange(5)
    if kind == 0:
        i = rng.randrange(len(data))
        data = data[:i] + bytes([rng.choice(b'aZ09./" {}:,')]) + data[i + 1 :]
    elif kind in (1, 2):
        i = rng.randrange(len(lines))
        lines[i : i + 1] = [] if kind == 1 else [lines[i], lines[i]]
        data = b"".join(lines)
    elif kind == 3:
        paths = re.findall(rb'"path":"[^"]*"', data)
        if paths:
            spelling = rng.choice([b"", b".", b"..", b"x/..", b"../x.parquet"])
            data = data.replace(rng.choice(paths), b'"path":"' + spelling + b'"', 1)
    else:
        data = data[: rng.randrange(len(data))]
    commit_file.write_bytes(data)
