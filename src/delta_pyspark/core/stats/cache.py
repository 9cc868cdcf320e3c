"""A snapshot's parsed per-file statistics, kept for its later scans and its successors.

Every filtered scan of a snapshot asks for the stats of the columns its predicate names;
parsing the ``add.stats`` JSON of 10,000 files takes about 14 ms, most of a planner
callback, so the answer for each set of columns is kept with the (immutable) file list.
A snapshot made from the previous one by a few commits keeps the answers for the files
that stayed and parses only the files its commits added.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.stats.layout import Path
from delta_pyspark.core.stats.parsing import file_stats

_Key = tuple[pa.Schema, tuple[Path, ...]]


class StatsCache:
    """Parsed stats of one file list (``add`` actions), by schema and set of columns.

    A kept answer covers the first rows of the file list, all of them once asked for: the
    rows after those (added since the snapshot it was carried from) are parsed on the first
    question. The newest ``kept`` answers stay (each is the size of a few columns of the
    file list); the planner's callbacks may ask from several threads at once.
    """

    def __init__(self, files: pa.Table, kept: int = 4) -> None:
        self._files = files
        self._kept = kept
        self._answers: OrderedDict[_Key, pa.StructArray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """The Arrow buffers of the kept answers."""
        with self._lock:
            return sum(answer.nbytes for answer in self._answers.values())

    def stats(
        self, schema: pa.Schema, columns: Iterable[Path], rows: pa.Array | None = None
    ) -> pa.StructArray | None:
        """The stats of ``columns`` for every file, or for the files at indices ``rows``;
        None when the files carry no stats.

        A question about every file is answered once and kept. A question about some files
        is answered from a kept answer (completed first if it was carried: see the class),
        else by parsing those files alone: the files a partition filter keeps may be a small
        share of a large table.
        """
        key = (schema, tuple(sorted(set(columns))))
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
        if answer is None and rows is not None:
            return file_stats(self._files.take(rows), schema, key[1])
        if answer is None or len(answer) < self._files.num_rows:
            answer = self._complete(key, answer)
            if answer is None:
                return None
        return answer if rows is None else answer.take(rows)

    def _complete(self, key: _Key, start: pa.StructArray | None) -> pa.StructArray | None:
        """``start`` (the answer for the first rows) with the rest of the rows parsed, kept."""
        done = 0 if start is None else len(start)
        rest = file_stats(self._files.slice(done), *key)
        if rest is None:
            return None
        answer = rest if start is None else pa.concat_arrays([start, rest])
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > self._kept:
                self._answers.popitem(last=False)
        return answer

    def carried(self, files: pa.Table, dropped: pa.BooleanArray | None) -> StatsCache:
        """The cache of ``files``: this file list without its ``dropped`` rows (a mask over
        them; None: none), in order, then new rows. The kept answers come along for the rows
        that stayed; the new rows are parsed when first asked for."""
        cache = StatsCache(files, self._kept)
        with self._lock:
            answers = list(self._answers.items())
        for key, answer in answers:
            if dropped is not None:
                answer = _without(answer, dropped.slice(0, len(answer)))
            cache._answers[key] = answer
        return cache


# A commit dropping at most this many files keeps the rest of an answer as joined slices;
# a filter of a nested struct array is several times slower (measured: 1,000,000 rows).
_MAX_SLICES = 1024


def _without(answer: pa.StructArray, dropped: pa.BooleanArray) -> pa.StructArray:
    """``answer`` without the rows ``dropped`` marks."""
    gone = pc.indices_nonzero(dropped)
    if len(gone) == 0:
        return answer
    if len(gone) > _MAX_SLICES:
        return answer.take(pc.indices_nonzero(pc.invert(dropped)))
    pieces, start = [], 0
    for row in gone.to_pylist():
        if row > start:
            pieces.append(answer.slice(start, row - start))
        start = row + 1
    if start < len(answer):
        pieces.append(answer.slice(start))
    return pa.concat_arrays(pieces) if pieces else answer.slice(0, 0)
