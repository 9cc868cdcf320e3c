"""Names and sizes the merge modules share: column markers, the COPY/DROP actions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyspark.exceptions import MergeMultipleMatchesError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


_SOURCE_MARK = "__delta_merge_source"
_TARGET_MARK = "__delta_merge_target"
_ACTION = "__delta_merge_action"
_MATCHED_ID = "__delta_merge_matched"
_BEFORE = "__delta_merge_before_"
COPY, DROP = -1, -2
# A source "much smaller" than the target files: their rows outnumber its rows by this
# factor. Then matched source ids for inserts (without phase 1 pairs) come from a
# (broadcast) join instead of an anti-join over every target key, and a copy-on-write
# rewrite may keep unchanged rows by position (``_keeps_rows_by_position``).
_SMALL_SOURCE_FACTOR = 4
# Merges of sources up to this many rows may collect row positions (8 bytes each) on the
# driver: of the changed rows, to read the rewritten files without them
# (``_keeps_rows_by_position``), and of the matched rows, to find a row matched twice
# without counting the matches per target row (``_find_matches``).
_MAX_COLLECTED_SOURCE_ROWS = 10_000_000


def _union(frames: list[DataFrame]) -> DataFrame:
    """``frames`` (at least one) one after another, columns matched by name."""
    out = frames[0]
    for other in frames[1:]:
        out = out.unionByName(other)
    return out


def _several_matches() -> MergeMultipleMatchesError:
    """The error of a merge whose matched clause would change a target row that several
    source rows matched."""
    return MergeMultipleMatchesError(
        "MERGE cannot decide what to do: several source rows matched the same target "
        "row and a WHEN MATCHED clause would update or delete it. Deduplicate the "
        "source on the merge keys (or tighten the merge condition) so each target "
        "row matches at most one source row."
    )
