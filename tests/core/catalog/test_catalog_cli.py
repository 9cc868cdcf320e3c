"""``delta-pyspark catalog list|show|publish --catalog URL`` on both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from catalog_helpers import SCHEMA, add

from delta_pyspark.cli import main
from delta_pyspark.core.catalog.managed_tables import Catalog


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_catalog_list_show_publish(
    catalog_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Catalog.open(catalog_url, warehouse=str(tmp_path / "wh"), auto_publish=False) as c:
        c.create_table("b", SCHEMA)
        c.create_table("a", SCHEMA, catalog_managed=False)
        txn = c.begin("b")
        txn.add_files([add("x.parquet")])
        txn.commit("WRITE")
        location = c.table("b").location
    listed = run_json(capsys, "catalog", "list", "--catalog", catalog_url)
    assert [(t["name"], t["catalogManaged"], t["latestVersion"]) for t in listed] == [
        ("a", False, None),
        ("b", True, 1),
    ]
    shown = run_json(capsys, "catalog", "show", "b", "--catalog", catalog_url)
    assert [u["version"] for u in shown["unpublished"]] == [0, 1]
    assert shown["table"]["version"] == 1 and shown["table"]["numFiles"] == 1
    assert shown["table"]["readerFeatures"] == ["catalogManaged"]
    assert not list(Path(location, "_delta_log").glob("*.json"))
    published = run_json(capsys, "catalog", "publish", "--catalog", catalog_url)
    assert published == [{"name": "b", "published": [0, 1]}]
    assert len(list(Path(location, "_delta_log").glob("*.json"))) == 2
    again = run_json(capsys, "catalog", "show", "b", "--catalog", catalog_url)
    assert again["unpublished"] == []


def test_catalog_errors_are_one_line(
    catalog_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Catalog.open(catalog_url, warehouse=str(tmp_path / "wh")).close()
    assert main(["catalog", "show", "nope", "--catalog", catalog_url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("delta-pyspark: error: DeltaTableNotFoundError: table 'nope'")
    missing = tmp_path / "absent" / "catalog.db"
    assert main(["catalog", "list", "--catalog", f"sqlite:///{missing}"]) == 1
    assert "no catalog database at" in capsys.readouterr().err
    assert not missing.parent.exists()  # a typo creates nothing
    assert main(["catalog", "list", "--catalog", "mysql://host/db"]) == 1
    assert "unsupported catalog URL 'mysql://host/db'" in capsys.readouterr().err


def test_unreachable_postgres_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://someone:hunter2@127.0.0.1:1/db"  # nothing listens on port 1
    assert main(["catalog", "list", "--catalog", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "delta-pyspark: error: DeltaError: cannot connect to catalog "
        "postgresql://someone:***@127.0.0.1:1/db"
    )
    assert "hunter2" not in err
