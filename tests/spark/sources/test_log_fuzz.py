"""Seeded fuzzing of Delta logs: every damaged table reads as the right rows or fails
with one of our typed errors (issue: untrusted logs and paths).

Four small tables (with and without partitions and deletion vectors, each with a
checkpoint, checksums and a DML commit) are damaged one mutation at a time: a field of an
action set to a hostile value or dropped, a line dropped or repeated, a byte flipped, a
file truncated, deleted, or a stray commit added. For each, a full read through Spark
must give either the table's original rows, or the rows the reference reader
(``deltalake``) reads from the same damaged log (a mutation the log cannot reveal, e.g.
a dropped ``remove``, changes what the table *is*); or raise a ``DeltaError``. A VACUUM
plan over the damaged table must likewise succeed or raise a ``DeltaError``.

``DELTA_FUZZ_MUTATIONS`` sets how many mutations run (default 200; the nightly size is
10,000: run it with ``--timeout 0``), ``DELTA_FUZZ_SEED`` the seed, and
``DELTA_FUZZ_REPORT`` a file to which the counts per outcome are written as JSON, every 500
mutations and at the end.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.commands.vacuum_plan import plan_vacuum
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaError
from delta_pyspark.tables import DeltaTable

# hundreds of damaged logs: CI's second step
pytestmark = pytest.mark.long

MUTATIONS = int(os.environ.get("DELTA_FUZZ_MUTATIONS", "200"))
SEED = int(os.environ.get("DELTA_FUZZ_SEED", "20261123"))
HOSTILE_VALUES: list[Any] = [
    None, "", ".", "..", "./", "../x.parquet", "a/../../x.parquet", "%2E%2E/x.parquet", "/",
    "f[12].parquet", "*", -1, 0, 1, 2**31, 2**63, 2**70, -(2**64), 1.5, "x", "12", True, False,
    [], {}, [1, 2], ["nope"], {"a": 1}, {"a": None}, {"p": []}, "\u0000", "é" * 3,
]  # fmt: skip
FIELDS = {
    "add": ["path", "size", "partitionValues", "modificationTime", "dataChange", "stats",
            "deletionVector", "tags"],
    "remove": ["path", "deletionTimestamp", "dataChange", "size", "deletionVector",
               "partitionValues"],
    "metaData": ["id", "schemaString", "partitionColumns", "configuration", "format"],
    "protocol": ["minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"],
    "commitInfo": ["timestamp", "operation", "inCommitTimestamp"],
    "deletionVector": ["storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality"],
}  # fmt: skip
Rows = list[tuple[Any, ...]]


def _rows_of_spark(df: Any) -> Rows:
    return sorted(tuple(r) for r in df.select("id", "p", "v").collect())


def _build(spark: Any, root: Path, partitioned: bool, dvs: bool) -> None:
    for step in range(4):
        df = spark.range(step * 10, step * 10 + 10).selectExpr(
            "id", "cast(id % 2 as string) AS p", "concat('v', id) AS v"
        )
        writer = df.repartition(2).write.format("delta").mode("append")
        if step == 0:
            writer = writer.option("delta.checkpointInterval", "3")
            if dvs:
                writer = writer.option("delta.enableDeletionVectors", "true")
            if partitioned:
                writer = writer.partitionBy("p")
        writer.save(str(root))
    DeltaTable.forPath(spark, str(root)).delete("id % 7 = 3")


@pytest.fixture(scope="module")
def bases(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, Rows]]:
    out = []
    for partitioned in (False, True):
        for dvs in (False, True):
            root = tmp_path_factory.mktemp("fuzz-base") / f"t-{int(partitioned)}{int(dvs)}"
            _build(spark, root, partitioned, dvs)
            out.append((root, _rows_of_spark(spark.read.format("delta").load(str(root)))))
    return out


# --------------------------------------------------------------------------- mutations


def _log_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "_delta_log").iterdir() if p.is_file())


def _commits(root: Path) -> list[Path]:
    return [p for p in _log_files(root) if p.name.endswith(".json") and p.name[:20].isdigit()]


# Stands for a value nested deeper than Python's JSON codec recurses; spliced in as text.
_DEEP = "<deeply nested>"
_DEEP_JSON = '{"a":' * 3000 + "1" + "}" * 3000


def _hostile(rng: random.Random) -> Any:
    return _DEEP if rng.random() < 0.03 else rng.choice(HOSTILE_VALUES)


def _edit_action(root: Path, rng: random.Random, drop: bool) -> str:
    commit = rng.choice(_commits(root))
    lines = commit.read_text().splitlines()
    index = rng.randrange(len(lines))
    action = json.loads(lines[index])
    kind = next(iter(action))
    body = action[kind]
    target, fields = body, FIELDS.get(kind, ["x"])
    if kind in ("add", "remove") and body.get("deletionVector") and rng.random() < 0.3:
        target, fields = body["deletionVector"], FIELDS["deletionVector"]
    key = rng.choice(fields)
    if drop:
        target.pop(key, None)
        what = f"drop {kind}.{key}"
    else:
        target[key] = _hostile(rng)
        what = f"set {kind}.{key} = {json.dumps(target[key])[:40]}"
    lines[index] = json.dumps(action).replace(json.dumps(_DEEP), _DEEP_JSON)
    commit.write_text("\n".join(lines) + "\n")
    return f"{commit.name}: {what}"


def _lines(root: Path, rng: random.Random) -> str:
    commit = rng.choice(_commits(root))
    lines = commit.read_text().splitlines()
    index = rng.randrange(len(lines))
    if rng.random() < 0.5:
        del lines[index]
        what = "drop"
    else:
        lines.insert(index, lines[index])
        what = "repeat"
    commit.write_text("\n".join(lines) + ("\n" if lines else ""))
    return f"{commit.name}: {what} line {index}"


def _flip(root: Path, rng: random.Random) -> str:
    target = rng.choice(_log_files(root))
    data = bytearray(target.read_bytes())
    if not data:
        return "nothing to flip"
    position = rng.randrange(len(data))
    data[position] ^= 1 << rng.randrange(8)
    target.write_bytes(bytes(data))
    return f"{target.name}: flip byte {position}"


def _truncate(root: Path, rng: random.Random) -> str:
    target = rng.choice(_log_files(root))
    data = target.read_bytes()
    keep = rng.choice([0, rng.randrange(len(data) + 1)])
    target.write_bytes(data[:keep])
    return f"{target.name}: truncate to {keep}"


def _delete(root: Path, rng: random.Random) -> str:
    target = rng.choice(_log_files(root))
    target.unlink()
    return f"{target.name}: deleted"


def _stray(root: Path, rng: random.Random) -> str:
    version = rng.choice([rng.randrange(20, 100), 10**9, 10**19, 99999999999999999999])
    name = f"{version:020d}.json"
    (root / "_delta_log" / name).write_text('{"commitInfo":{}}\n')
    return f"stray {name}"


MUTATORS: list[tuple[float, Callable[[Path, random.Random], str]]] = [
    (0.40, lambda root, rng: _edit_action(root, rng, drop=False)),
    (0.12, lambda root, rng: _edit_action(root, rng, drop=True)),
    (0.12, _lines),
    (0.16, _flip),
    (0.08, _truncate),
    (0.06, _delete),
    (0.06, _stray),
]


def _mutate(root: Path, rng: random.Random) -> str:
    weights = [w for w, _ in MUTATORS]
    mutator = rng.choices([m for _, m in MUTATORS], weights)[0]
    return mutator(root, rng)


# --------------------------------------------------------------------------- oracle


def _reference_rows(root: Path) -> Rows | None:
    """What deltalake (delta-rs) reads from the damaged table; None if it refuses."""
    import deltalake

    try:
        table = deltalake.DeltaTable(str(root)).to_pyarrow_table(columns=["id", "p", "v"])
    except Exception:  # the reference reader's refusal: any error it has
        return None
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "p", "v")), strict=True))


def _outcome(spark: Any, root: Path, original: Rows) -> str:
    try:
        rows = _rows_of_spark(spark.read.format("delta").load(str(root)))
    except DeltaError:
        return "typed error"
    except Exception as e:
        return f"UNTYPED {type(e).__name__}: {str(e)[:300]}"
    if rows == original:
        return "original rows"
    if rows == _reference_rows(root):
        return "reference rows"
    return f"WRONG ROWS ({len(rows)} rows, {len(original)} expected)"


def _vacuum_outcome(root: Path) -> str:
    try:
        plan_vacuum(DeltaLog(str(root)), 0, check_enabled=False)
    except DeltaError:
        return "vacuum refused"
    except Exception as e:
        return f"VACUUM UNTYPED {type(e).__name__}: {str(e)[:300]}"
    return "vacuum planned"


def _report(done: int, counts: Counter[str], failures: list[str]) -> None:
    """Counts so far to ``DELTA_FUZZ_REPORT`` (a long run shows its progress)."""
    report = os.environ.get("DELTA_FUZZ_REPORT")
    if report:
        summary = {"done": done, "of": MUTATIONS, "seed": SEED, "counts": counts,
                   "failures": failures}  # fmt: skip
        Path(report).write_text(json.dumps(summary, indent=1))


def test_damaged_logs_read_right_or_fail_typed(
    spark: Any, bases: list[tuple[Path, Rows]], tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    counts: Counter[str] = Counter()
    failures: list[str] = []
    for i in range(MUTATIONS):
        base, original = bases[i % len(bases)]
        root = tmp_path / f"m{i}"
        shutil.copytree(base, root)
        what = _mutate(root, rng)
        outcome = _outcome(spark, root, original)
        vacuum = _vacuum_outcome(root)
        for result in (outcome, vacuum):
            kind = result.split(" (")[0].split(":")[0]
            counts[kind] += 1
            if result.startswith(("UNTYPED", "WRONG", "VACUUM UNTYPED")):
                failures.append(f"#{i} {base.name} {what} -> {result}")
        shutil.rmtree(root)
        if (i + 1) % 500 == 0 or i + 1 == MUTATIONS:
            _report(i + 1, counts, failures)
    assert not failures, "\n".join(failures[:20])
    assert counts["typed error"] > 0 and counts["original rows"] > 0, counts
