"""Where a table and its files are, spelled one way for local disks and object stores.

A location is a local path (plain, or a ``file:`` URI) or an object-store URL
(``s3://bucket/key``, ``s3a://``, ``gs://``, ``abfss://``, ...). Everything above storage
normalises, joins, compares and relativises locations here, never with ``os.path``: that
would collapse a URL's ``//`` and resolve it against the working directory. URLs keep the
scheme they were given (``s3a://`` for Hadoop's connector, ``s3://`` for others); the
object store treats both as one bucket.
"""

from __future__ import annotations

import os
import posixpath
from urllib.parse import unquote, urlparse


def is_local(location: str) -> bool:
    """Whether ``location`` is on the local file system (no scheme, ``file:``, or a
    Windows drive letter)."""
    scheme = urlparse(location).scheme
    return scheme in ("", "file") or len(scheme) == 1


def to_local_path(path: str) -> str:
    """``file:`` URIs to an OS path; every other spelling unchanged."""
    if path.startswith("file:"):
        return unquote(urlparse(path).path)
    return path


def normalise(location: str) -> str:
    """One spelling per location: local ones absolute and normalised (a relative path
    names another place after ``chdir``), URLs with ``.``/``..`` segments, doubled and
    trailing slashes removed below their bucket."""
    if is_local(location):
        return os.path.abspath(to_local_path(location))
    parsed = urlparse(location)
    key = posixpath.normpath("/" + parsed.path.lstrip("/")).lstrip("/")
    bucket = f"{parsed.scheme}://{parsed.netloc}"
    return f"{bucket}/{key}" if key else bucket


def join(root: str, relative: str) -> str:
    """``relative`` (``/``-separated, decoded) below ``root``, not normalised."""
    return f"{root.rstrip('/')}/{relative.lstrip('/')}"


def parent(location: str) -> str:
    """The directory holding ``location`` (a bucket is its own parent)."""
    if is_local(location):
        return os.path.dirname(location)
    head, _, _ = location.rstrip("/").rpartition("/")
    return location if head.endswith(":/") else head


def name(location: str) -> str:
    """The last segment of ``location``."""
    return location.rstrip("/").rsplit("/", 1)[-1]


def is_inside(root: str, location: str) -> bool:
    """Whether the normalised ``location`` lies strictly below the directory ``root``."""
    return location.startswith(root.rstrip("/") + "/")


def relative_to(location: str, root: str) -> str:
    """``location``'s path below ``root`` (both normalised), ``/``-separated."""
    if not is_inside(root, location):
        raise ValueError(f"{location} is not inside {root}")
    return location[len(root.rstrip("/")) + 1 :]
