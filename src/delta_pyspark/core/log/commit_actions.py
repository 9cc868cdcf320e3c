"""Commit files read line by line (PROTOCOL.md "Delta Log Entries").

A commit (or log compaction, or JSON checkpoint) is newline-delimited JSON, one action
per line. ``parse_actions`` reads it into ``CommitActions``, checking each action as it
goes; unknown action types are ignored (spec). ``commit_batch.parse_commits`` reads the
file actions of many commits column-wise and falls back to this parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from delta_pyspark.core.log.logical_files import action_key, added_and_removed
from delta_pyspark.core.protocol.actions import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    check_file_action,
)
from delta_pyspark.exceptions import CorruptLogError


@dataclass
class CommitActions:
    """The actions of one commit (or compaction / JSON checkpoint) in file order."""

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    commit_info: CommitInfo | None = None
    txns: list[SetTransaction] = field(default_factory=list)
    domains: list[DomainMetadata] = field(default_factory=list)
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)
    cdcs: list[AddCDCFile] = field(default_factory=list)
    checkpoint_metadata: dict[str, Any] | None = None
    sidecars: list[dict[str, Any]] = field(default_factory=list)


def parse_compaction(data: bytes, source: str) -> CommitActions:
    """A log compaction file as one commit in which the *first* action per key wins.

    Spec-compliant compactions are already reconciled (one action per key), so for
    them this changes nothing; some writers instead concatenate the commits newest
    first, which first-wins also reads correctly.
    """
    check_not_empty(data, source)
    out = CommitActions()
    files: set[str] = set()
    apps: set[str] = set()
    domains: set[str] = set()
    for lineno, line in enumerate(data.splitlines(), 1):
        one = CommitActions()
        parse_line(one, line, source, lineno)
        out.protocol = out.protocol or one.protocol
        out.metadata = out.metadata or one.metadata
        _keep_first(one.adds, out.adds, files)
        _keep_first(one.removes, out.removes, files)
        out.txns += [t for t in one.txns if t.app_id not in apps and not apps.add(t.app_id)]  # type: ignore[func-returns-value]
        out.domains += [
            d
            for d in one.domains
            if d.domain not in domains and not domains.add(d.domain)  # type: ignore[func-returns-value]
        ]
    return out


def parse_actions(data: bytes, source: str) -> CommitActions:
    """Parse newline-delimited JSON actions; unknown action types are ignored (spec)."""
    check_not_empty(data, source)
    out = CommitActions()
    for lineno, line in enumerate(data.splitlines(), 1):
        parse_line(out, line, source, lineno)
    if out.adds and out.removes:
        path = added_and_removed(out.adds, out.removes)
        if path is not None:
            raise CorruptLogError(
                f"{source}: adds and removes the same file {path!r} (with the same deletion "
                "vector) in one commit, which the protocol forbids: a line was lost or altered"
            )
    return out


def check_not_empty(data: bytes, source: str) -> None:
    """A commit (or JSON checkpoint) holds at least one action: an empty file is damage
    (e.g. a crashed copy), never an empty commit, or replay would skip its changes."""
    if not data.strip():
        raise CorruptLogError(f"{source}: the log file is empty (it must hold actions)")


def parse_line(out: CommitActions, line: bytes, source: str, lineno: int) -> None:
    if not line.strip():
        return
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise CorruptLogError(f"{source}:{lineno}: not valid JSON ({e})") from e
    except RecursionError:
        raise CorruptLogError(f"{source}:{lineno}: JSON nested too deeply to read") from None
    if not isinstance(obj, dict):
        raise CorruptLogError(f"{source}:{lineno}: an action must be a JSON object")
    for kind, body in obj.items():
        _apply_action(out, kind, body, source, lineno)


def _apply_action(out: CommitActions, kind: str, body: Any, source: str, lineno: int) -> None:
    if body is None:
        return
    if not isinstance(body, dict):
        raise CorruptLogError(f"{source}:{lineno}: action {kind!r} must be an object")
    try:
        _store_action(out, kind, body, source)
    except CorruptLogError as e:
        raise CorruptLogError(f"{source}:{lineno}: {e}") from None
    except (ValueError, TypeError) as e:
        raise CorruptLogError(f"{source}:{lineno}: malformed {kind} action ({e})") from e
    if kind in ("add", "remove", "cdc"):
        try:
            check_file_action(kind, body)
        except CorruptLogError as e:
            raise CorruptLogError(f"{source}:{lineno}: {e}") from None


_FileAction = TypeVar("_FileAction", AddFile, RemoveFile)


def _keep_first(actions: list[_FileAction], kept: list[_FileAction], keys: set[str]) -> None:
    """Append to ``kept`` the ``actions`` whose logical file is not among ``keys`` yet."""
    for action in actions:
        if (key := action_key(action)) not in keys:
            keys.add(key)
            kept.append(action)


def _store_action(out: CommitActions, kind: str, body: dict[str, Any], source: str) -> None:
    """Put one action of a known ``kind`` into ``out``; other kinds are ignored (spec). File
    actions were checked (``check_file_action``), so their dicts are the typed actions."""
    if kind == "add":
        out.adds.append(cast(AddFile, body))
    elif kind == "remove":
        out.removes.append(cast(RemoveFile, body))
    elif kind == "metaData":
        if out.metadata is not None:
            raise CorruptLogError(f"{source}: more than one metaData action")
        out.metadata = Metadata.from_dict(body)
    elif kind == "protocol":
        if out.protocol is not None:
            raise CorruptLogError(f"{source}: more than one protocol action")
        out.protocol = Protocol.from_dict(body)
    elif kind == "txn":
        out.txns.append(SetTransaction.from_dict(body))
    elif kind == "domainMetadata":
        out.domains.append(DomainMetadata.from_dict(body))
    elif kind == "commitInfo":
        out.commit_info = cast(CommitInfo, body)
    elif kind == "cdc":
        out.cdcs.append(cast(AddCDCFile, body))
    elif kind == "checkpointMetadata":
        out.checkpoint_metadata = body
    elif kind == "sidecar":
        out.sidecars.append(body)
