"""Which open multi-table transaction the running code belongs to.

A transaction joins only the work of whoever opened it. In the core that is the Python
thread that opened it. With Spark, the statements of one Python thread run in one JVM
thread whose callbacks into Python arrive on other Python threads, so the engine names the
transaction in the JVM thread's local properties and installs a ``probe`` that reads it;
streaming queries and other threads see none and commit alone. Nothing is looked up while
no transaction is open, so the ordinary path pays nothing.

The log handle asks ``current()`` for the snapshot to read (a transaction reads its
tables at one catalog state, with its own pending writes); a commit asks it whether to
join the transaction instead of committing alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from delta_pyspark.exceptions import DeltaUnsupportedOperationException

if TYPE_CHECKING:
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.snapshot.snapshot import Snapshot


class OpenTransaction(Protocol):
    """The side of a multi-table transaction the log and the commits talk to."""

    id: str

    def view(self, log: DeltaLog) -> Snapshot | None:
        """What ``log``'s table reads as inside the transaction (None: not one of its tables)."""

    def collect(
        self,
        txn: Any,  # a ``Transaction`` (of the package above this one)
        operation: str,
        parameters: Mapping[str, Any] | None,
        metrics: Mapping[str, Any] | None,
        user_metadata: str | None,
    ) -> Snapshot | None:
        """Take ``txn``'s commit into the transaction and return what its table now reads
        as (None: not one of its tables, the commit goes ahead alone)."""


_lock = threading.Lock()
_open: dict[str, OpenTransaction] = {}
_thread = threading.local()
_probe: Callable[[], str | None] | None = None


def set_probe(probe: Callable[[], str | None] | None) -> None:
    """Let the engine name the transaction of the running work when this Python thread
    opened none (the engine's callbacks); None: Python threads only."""
    global _probe
    _probe = probe


def open_transaction(txn: OpenTransaction, this_thread: bool = True) -> None:
    """Register ``txn``; ``this_thread``: the calling Python thread joins it (else only
    what the probe reports does). Refuses a second one in the same thread."""
    if current() is not None:
        raise DeltaUnsupportedOperationException(
            "a transaction is already open here: commit or roll it back before beginning another"
        )
    with _lock:
        _open[txn.id] = txn
    if this_thread:
        _thread.id = txn.id


def close_transaction(txn: OpenTransaction) -> None:
    with _lock:
        _open.pop(txn.id, None)
    if getattr(_thread, "id", None) == txn.id:
        _thread.id = None


def current() -> OpenTransaction | None:
    """The transaction the running work belongs to, if any."""
    if not _open:
        return None
    txn_id = getattr(_thread, "id", None)
    if txn_id is None and _probe is not None:
        txn_id = _probe()
    return _open.get(txn_id) if txn_id is not None else None
