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

from delta_pyspark.core.storage.log_store import FileStatus
from delta_pyspark.exceptions import DeltaUnsupportedOperationException

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

    permits_maintenance: bool = False
    """Whether the managing catalog lets this client run VACUUM, OPTIMIZE, REORG and log
    cleanup (PROTOCOL.md: prohibited unless the catalog explicitly permits them)."""

    @abstractmethod
    def ratified_commits(self, start: int = 0, end: int | None = None) -> RatifiedCommits:
        """Ratified, unpublished commits in ``[start, end]`` and the latest ratified version."""

    @abstractmethod
    def commit(self, version: int, data: bytes) -> None:
        """Make ``data`` version ``version`` or raise ``FileAlreadyExistsError`` when another
        commit won it (the same contract as put-if-absent, so retries work unchanged)."""


def check_maintenance(coordinator: CommitCoordinator | None, table: str, operation: str) -> None:
    """Refuse ``operation`` (VACUUM, OPTIMIZE, ...) on a table whose managing catalog has not
    permitted this client to maintain it; filesystem tables (no coordinator) always may."""
    if coordinator is not None and not coordinator.permits_maintenance:
        raise DeltaUnsupportedOperationException(
            f"{operation} on {table}: the table is catalog-managed and its catalog does not "
            "permit this client to run maintenance operations (open the catalog with "
            "allow_maintenance=True, or spark.delta_pyspark.catalog.allowMaintenance=true)"
        )
