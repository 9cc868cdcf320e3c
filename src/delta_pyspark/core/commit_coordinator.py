"""The commit point of a table behind an interface (PROTOCOL.md "Catalog-managed tables").

A filesystem table commits by put-if-absent of ``<v>.json`` and is read by listing.
A catalog-managed table commits through its catalog, which ratifies version ``v`` (at
most once, only after ``v - 1``) and serves the ratified commits that are not yet
published to ``<v>.json``. ``DeltaLog`` and ``Transaction`` call a ``CommitCoordinator``
when the table has one, so log replay, conflict checks and retries are shared.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from delta_pyspark.core.log_store import FileStatus

STAGED_COMMITS_DIR = "_staged_commits"


def staged_commit_name(version: int, uid: str) -> str:
    """``<v>.<uuid>.json``, the file a staged commit is written to."""
    return f"{version:020d}.{uid}.json"


@dataclass(frozen=True)
class RatifiedCommits:
    """The catalog's answer: its latest ratified version (authoritative; -1 before the
    first commit) and the ratified commits it still stores, ascending, as the staged
    files to read in place of any published ``<v>.json``."""

    latest_version: int
    unpublished: tuple[tuple[int, FileStatus], ...]


class CommitCoordinator(ABC):
    """Decides which commit wins each version of one table, and what readers see."""

    features: frozenset[str] = frozenset({"catalogManaged"})
    """Table features this access path implements (checked by readers and writers)."""

    @abstractmethod
    def ratified_commits(self, start: int = 0, end: int | None = None) -> RatifiedCommits:
        """Ratified, unpublished commits in ``[start, end]`` and the latest ratified version."""

    @abstractmethod
    def commit(self, version: int, data: bytes) -> None:
        """Make ``data`` version ``version`` or raise ``FileAlreadyExistsError`` when another
        commit won it (the same contract as put-if-absent, so retries work unchanged)."""
