"""Where the files a log names are, and which names may be followed: the one rule that
reads, VACUUM, RESTORE, CLONE and deletion-vector lookups share.

The protocol lets a log name a data file by an absolute URI or by a percent-encoded path
relative to the table root. A relative path that is empty, names the root itself, or
climbs out of it (``..``, also percent-encoded), and an absolute path naming the root or a
directory above it, cannot be a file of the table: following one would read rows from
elsewhere or, for VACUUM, take a live file for garbage. Roots are normalised locations
(``core.storage.locations``): local paths or object-store URLs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.log.arrow_buffers import int64_scalar
from delta_pyspark.core.protocol.deletion_vectors import DeletionVectorDescriptor
from delta_pyspark.core.storage.locations import is_inside, is_local, join, normalise

_URI_WITH_AUTHORITY = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def is_relative(log_path: str) -> bool:
    """Whether a log path is resolved against the table root (no scheme, no leading /)."""
    return not (log_path.startswith(("file:", "/")) or _URI_WITH_AUTHORITY.match(log_path))


def resolve_path(root: str, log_path: str) -> str:
    """Normalised location of a file as an add/remove (or a 'p' deletion vector) names it.

    ``log_path`` is a URI (PROTOCOL.md): relative to ``root`` (normalised) or absolute,
    and percent-encoded. An absolute path without a scheme is on the root's file system
    (for an object-store table: a key of its bucket).
    """
    if log_path.startswith("file:"):
        return os.path.normpath(unquote(urlparse(log_path).path))
    if log_path.startswith("/"):
        if is_local(root):
            return os.path.normpath(unquote(log_path))
        parsed = urlparse(root)
        return normalise(f"{parsed.scheme}://{parsed.netloc}{unquote(log_path)}")
    if _URI_WITH_AUTHORITY.match(log_path):
        return normalise(unquote(log_path))
    if is_local(root):
        return os.path.normpath(os.path.join(root, unquote(log_path)))
    return normalise(join(root, unquote(log_path)))


def data_file_path(table_root: str, log_path: str) -> str:
    """The path storage and Spark know a file the log names by: decoded, resolved against
    ``table_root`` when relative, but not normalised (``resolve_path`` is, for comparing
    and checking paths; this one is on the scan planner's per-file path)."""
    if log_path.startswith("file:"):
        return unquote(urlparse(log_path).path)
    decoded = unquote(log_path)
    if log_path.startswith("/") or _SCHEME.match(log_path):
        return decoded
    return f"{table_root.rstrip('/')}/{decoded}"


def dv_file_path(root: str, dv: Mapping[str, Any] | None) -> str | None:
    """Location of the file holding a deletion vector (None: inline or no DV)."""
    if not dv:
        return None
    desc = DeletionVectorDescriptor.from_dict(dv)
    if desc.storage_type == "i":
        return None
    if desc.storage_type == "p":
        return resolve_path(root, desc.path_or_inline_dv)
    path = desc.absolute_path(root)  # 'u': already a decoded path under root
    return normalise(path) if path else None


# Spellings worth resolving (the rest cannot fail ``_names_a_file``): relative ones
# that are empty or dot-only, or hold ``..``, percent-escapes or NUL; absolute ones
# with escapes, NUL, dot segments, doubled or trailing slashes, a URI query or
# fragment, or no longer than the root.
_SUSPECT_RELATIVE = r"^[./]*$|\.\.|%|\x00"
_SUSPECT_ABSOLUTE = r"%|\x00|/\.|//|/$|[?#]"


def _names_a_file(root: str, local: str | None, relative: bool) -> bool:
    """A relative spelling must resolve strictly inside the root; an absolute one
    anywhere but the root or a directory above it (those hold the table, they are not
    one of its files)."""
    if local is None or "\x00" in local:  # no file system path holds a NUL
        return False
    if relative:
        return is_inside(root, local)
    return local != root and not is_inside(local, root)


def invalid_dv_paths(root: str, files: pa.Table) -> list[str]:
    """The ``pathOrInlineDv`` of the deletion vectors of ``files`` whose file cannot be a
    file of the table at ``root`` (the rule of ``invalid_file_paths``)."""
    out: list[str] = []
    if "deletionVector" not in files.column_names:
        return out
    dvs = files.column("deletionVector")
    if dvs.null_count == len(dvs):
        return out
    for dv in dvs.filter(pc.is_valid(dvs)).to_pylist():
        if dv.get("storageType") == "i":
            continue
        if not _names_a_file(root, dv_file_path(root, dv), relative_dv(dv)):
            out.append(dv["pathOrInlineDv"])
    return out


def invalid_file_paths(root: str, files: pa.Table) -> list[str]:
    """The ``path`` values of ``files`` that cannot name a file of the table at ``root``,
    as the log spells them: relative ones that are empty, ``.``, or leave the root after
    normalisation, and absolute ones naming the root or a directory above it. Other
    absolute paths and URIs are allowed by the protocol (VACUUM lists nothing outside
    the root, so they never doom a file)."""
    out = []
    paths = files.column("path")
    suspect = pc.match_substring_regex(paths, _SUSPECT_RELATIVE)
    uri = pc.starts_with(paths, "file:")
    absolute = pc.or_(pc.starts_with(paths, "/"), uri)
    if pc.any(absolute).as_py():
        # Only absolute spellings can be odd; tables usually hold none (and no URIs), so
        # the common case costs one scan of the paths, not four.
        local = paths
        if pc.any(uri).as_py():
            local = pc.replace_substring_regex(paths, r"^file:(//[^/]*)?", "")
        odd = pc.or_(
            pc.match_substring_regex(local, _SUSPECT_ABSOLUTE),
            pc.less_equal(pc.utf8_length(local), int64_scalar(len(root))),
        )
        suspect = pc.or_(suspect, pc.and_(absolute, odd))
    for path in paths.filter(pc.or_kleene(suspect, pc.is_null(suspect))).to_pylist():
        if not isinstance(path, str) or not _names_a_file(
            root, resolve_path(root, path), is_relative(path)
        ):
            out.append(path)
    return out


def relative_dv(dv: Mapping[str, Any]) -> bool:
    """Whether a deletion vector's file is resolved against the table root: always for
    'u' (its Z85 text may even start with ``/``), for 'p' when spelled relatively."""
    desc = DeletionVectorDescriptor.from_dict(dv)
    return desc.storage_type == "u" or (
        desc.storage_type == "p" and is_relative(desc.path_or_inline_dv)
    )
