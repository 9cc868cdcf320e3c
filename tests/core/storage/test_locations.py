"""Locations spelled one way for local paths and object-store URLs."""

from __future__ import annotations

import os

import pytest

from delta_pyspark.core.log.table_paths import resolve_path
from delta_pyspark.core.storage.locations import (
    is_inside,
    is_local,
    join,
    name,
    normalise,
    parent,
    relative_to,
)


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("s3a://b/t/", "s3a://b/t"),
        ("s3://b//t/./x/../y", "s3://b/t/y"),
        ("s3://b/../..", "s3://b"),
        ("gs://b", "gs://b"),
        ("file:/tmp/a%20b/", "/tmp/a b"),
        ("/tmp/x/../y", "/tmp/y"),
    ],
)
def test_normalise(location: str, expected: str) -> None:
    assert normalise(location) == expected


def test_a_relative_local_path_is_made_absolute() -> None:
    assert normalise("rel/t") == os.path.join(os.getcwd(), "rel", "t")


def test_paths_of_urls_keep_their_bucket() -> None:
    assert not is_local("s3a://b/t") and is_local("/t") and is_local("file:///t")
    assert join("s3://b/t/", "p=1/f.parquet") == "s3://b/t/p=1/f.parquet"
    assert parent("s3://b/t/f") == "s3://b/t"
    assert parent("s3://b/t") == "s3://b" and parent("s3://b") == "s3://b"
    assert name("s3://b/t/f.parquet") == "f.parquet"
    assert is_inside("s3://b/t", "s3://b/t/f") and not is_inside("s3://b/t", "s3://b/tt/f")
    assert relative_to("s3://b/t/p=1/f", "s3://b/t") == "p=1/f"
    with pytest.raises(ValueError, match="not inside"):
        relative_to("s3://b/other/f", "s3://b/t")


def test_log_paths_resolve_against_an_object_store_root() -> None:
    root = "s3a://b/t"
    assert resolve_path(root, "p%3D1/f%20x.parquet") == "s3a://b/t/p=1/f x.parquet"
    assert resolve_path(root, "../other/f.parquet") == "s3a://b/other/f.parquet"  # climbs out
    assert resolve_path(root, "/t/f.parquet") == "s3a://b/t/f.parquet"  # a key of the bucket
    assert resolve_path(root, "s3://c/f.parquet") == "s3://c/f.parquet"
