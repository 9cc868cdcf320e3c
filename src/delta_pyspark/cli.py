"""``delta-pyspark`` command line: inspect tables without starting Spark, or serve Spark
Connect clients with Delta (``connect-server``).

``--json`` output is a stable, machine-readable contract; human output uses rich.
Errors print one line to stderr and exit non-zero (``--traceback`` for details).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from delta_pyspark.exceptions import DeltaError, DeltaTableNotFoundError

if TYPE_CHECKING:
    from delta_pyspark.core.catalog.database import TableEntry
    from delta_pyspark.core.snapshot.snapshot import Snapshot

# The core is imported by the commands, not here: ``--help`` and argument errors stay
# instant, and each command loads only what it uses (``catalog`` its databases, human
# output rich).


def _import_arrow_without_numpy() -> None:
    """Import the pyarrow modules the log's readers use with numpy hidden, when neither
    is loaded yet.

    pyarrow's core and compute modules import numpy when it is installed, which is a
    fifth of a cold ``describe``, and the inspection commands never hand Arrow data to
    numpy. numpy stays importable afterwards (the deletion-vector code loads it on
    demand); only pyarrow's own numpy conversions are off in this process.
    """
    if "pyarrow" in sys.modules or "numpy" in sys.modules:
        return
    sys.modules["numpy"] = None  # type: ignore[assignment]  # import raises: pyarrow skips it
    try:
        import pyarrow.compute
        import pyarrow.parquet  # noqa: F401
    finally:
        del sys.modules["numpy"]


def _snapshot(args: argparse.Namespace) -> Snapshot:
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms

    log = DeltaLog.for_table(args.path)
    if getattr(args, "timestamp", None):
        return log.snapshot_at_timestamp(parse_timestamp_ms(args.timestamp))
    return log.snapshot(args.version)


def describe_dict(snapshot: Snapshot) -> dict[str, Any]:
    from delta_pyspark.core.protocol.table_features import (
        implied_writer_features,
        reader_features,
    )

    p = snapshot.protocol
    return {
        "path": snapshot.table_root,
        "version": snapshot.version,
        "timestamp": snapshot.timestamp,
        "id": snapshot.metadata.id,
        "name": snapshot.metadata.name,
        "description": snapshot.metadata.description,
        "numFiles": snapshot.num_files,
        "sizeInBytes": snapshot.size_in_bytes,
        "partitionColumns": snapshot.partition_columns,
        "properties": dict(snapshot.configuration),
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": sorted(reader_features(p)) if p.min_reader_version >= 3 else [],
        "writerFeatures": sorted(implied_writer_features(p)) if p.min_writer_version >= 7 else [],
        "schema": snapshot.schema.to_json(),
    }


def files_list(snapshot: Snapshot) -> list[dict[str, Any]]:
    table = snapshot.files.select(
        ["path", "partitionValues", "size", "modificationTime", "stats", "deletionVector"]
    )
    out = []
    for row in table.to_pylist():
        stats = row["stats"]
        dv = row["deletionVector"]
        out.append(
            {
                "path": row["path"],
                "partitionValues": dict(row["partitionValues"] or []),
                "size": row["size"],
                "modificationTime": row["modificationTime"],
                "stats": json.loads(stats) if stats else None,
                "deletionVector": {k: v for k, v in dv.items() if v is not None} if dv else None,
            }
        )
    return out


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def cmd_describe(args: argparse.Namespace) -> None:
    info = describe_dict(_snapshot(args))
    if args.json:
        print(json.dumps(info, indent=None, sort_keys=True))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(show_header=False, title=f"Delta table {info['path']}")
    for key in (
        "version",
        "numFiles",
        "sizeInBytes",
        "partitionColumns",
        "minReaderVersion",
        "minWriterVersion",
        "readerFeatures",
        "writerFeatures",
        "properties",
    ):
        t.add_row(key, json.dumps(info[key]) if not isinstance(info[key], int) else str(info[key]))
    t.add_row("timestamp", _iso(info["timestamp"]))
    console.print(t)
    s = Table(title="schema")
    s.add_column("column")
    s.add_column("type")
    s.add_column("nullable")
    for f in info["schema"]["fields"]:
        typ = f["type"] if isinstance(f["type"], str) else json.dumps(f["type"])
        s.add_row(f["name"], typ, str(f["nullable"]))
    console.print(s)


def cmd_files(args: argparse.Namespace) -> None:
    files = files_list(_snapshot(args))
    if args.json:
        print(json.dumps(files))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{len(files)} active files")
    for col in ("path", "partitionValues", "size", "numRecords", "deletionVector"):
        t.add_column(col)
    for f in files:
        t.add_row(
            f["path"],
            json.dumps(f["partitionValues"]),
            str(f["size"]),
            str((f["stats"] or {}).get("numRecords", "")),
            "" if f["deletionVector"] is None else str(f["deletionVector"].get("cardinality")),
        )
    Console().print(t)


def cmd_history(args: argparse.Namespace) -> None:
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    rows = DeltaLog.for_table(args.path).history(args.limit)
    if args.json:
        print(json.dumps(rows))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title="history")
    for col in ("version", "timestamp", "operation", "operationParameters", "operationMetrics"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            str(r["version"]),
            _iso(r["timestamp"]),
            str(r.get("operation", "")),
            json.dumps(r.get("operationParameters", {})),
            json.dumps(r.get("operationMetrics", {})),
        )
    Console().print(t)


def _entry_dict(entry: TableEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "id": entry.table_id,
        "location": entry.location,
        "managed": entry.managed,
        "catalogManaged": entry.catalog_managed,
        "latestVersion": entry.latest_version,
    }


def _print_json_or_rows(args: argparse.Namespace, value: Any, title: str) -> None:
    if args.json:
        print(json.dumps(value, sort_keys=True))
        return
    from rich.console import Console
    from rich.table import Table

    rows = value if isinstance(value, list) else [value]
    t = Table(title=title)
    columns = list(rows[0]) if rows else []
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*(v if isinstance(v, str) else json.dumps(v) for v in row.values()))
    Console().print(t)


def cmd_catalog(args: argparse.Namespace) -> None:
    from delta_pyspark.core.catalog.managed_tables import Catalog
    from delta_pyspark.core.catalog.sqlite import is_sqlite_url, sqlite_path

    if is_sqlite_url(args.catalog) and not os.path.isfile(sqlite_path(args.catalog)):
        raise DeltaTableNotFoundError(f"no catalog database at {sqlite_path(args.catalog)}")
    with Catalog.open(args.catalog) as catalog:
        if args.action == "list":
            _print_json_or_rows(args, [_entry_dict(e) for e in catalog.tables()], "tables")
        elif args.action == "show":
            entry = catalog.table(args.name)
            info = _entry_dict(entry)
            if entry.catalog_managed:
                _, stored = catalog.backend.ratified_commits(entry.table_id)
                info["unpublished"] = [
                    {"version": c.version, "staged": c.staged_name} for c in stored
                ]
            info["table"] = describe_dict(catalog.snapshot(args.name))
            _print_json_or_rows(args, info, args.name)
        else:
            names = (
                [args.name]
                if args.name
                else [e.name for e in catalog.tables() if e.catalog_managed]
            )
            done = [{"name": n, "published": catalog.publish(n)} for n in names]
            _print_json_or_rows(args, done, "published versions")


def cmd_connect_server(args: argparse.Namespace) -> None:
    from delta_pyspark.connect.server import serve  # starts Spark: imported only here

    serve(args.port, args.host, args.master)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="delta-pyspark", description=__doc__)
    parser.add_argument("--traceback", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn, helptext in (
        ("describe", cmd_describe, "version, protocol, schema, partitioning, properties, size"),
        ("files", cmd_files, "the active files with partition values, stats and DVs"),
        ("history", cmd_history, "commit history, newest first"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("path")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "history":
            p.add_argument("--limit", type=int, default=None)
        else:
            g = p.add_mutually_exclusive_group()
            g.add_argument("--version", type=int, default=None)
            if name == "describe":
                g.add_argument("--timestamp", default=None, help="e.g. '2024-01-31 10:00:00' (UTC)")
        p.set_defaults(func=fn)
    cat = sub.add_parser("catalog", help="tables of a catalog; publish ratified commits")
    cat.add_argument("action", choices=["list", "show", "publish"])
    cat.add_argument("name", nargs="?", help="table name (show; publish: default all)")
    cat.add_argument(
        "--catalog", required=True, help="sqlite:////path/catalog.db or postgresql://..."
    )
    cat.add_argument("--json", action="store_true", help="machine-readable output")
    cat.set_defaults(func=cmd_catalog)
    server = sub.add_parser(
        "connect-server", help="a Spark Connect server with Delta (stops on SIGTERM)"
    )
    server.add_argument("--port", type=int, default=15002)
    server.add_argument("--host", default="localhost", help="the address to listen on")
    server.add_argument("--master", default="local[*]", help="Spark's master")
    server.set_defaults(func=cmd_connect_server)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "action", None) == "show" and not args.name:
        parser.error("catalog show needs a table name")
    if args.command != "connect-server":  # Spark needs pyarrow's numpy conversions
        _import_arrow_without_numpy()
    try:
        args.func(args)
    except (DeltaError, OSError, ValueError) as e:
        if args.traceback:
            raise
        print(f"delta-pyspark: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
