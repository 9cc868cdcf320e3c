"""Run a concurrent writer at an exact point: right before a transaction's commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from delta_pyspark.core.transaction.optimistic_transaction import Transaction


@contextmanager
def before_commit(fn: Callable[[], None], operation: str | None = None) -> Iterator[None]:
    """Run ``fn`` (a concurrent writer, committed for real) right before the first commit
    attempt of ``operation`` (any operation when None) inside the block."""
    original = Transaction.commit
    fired = False

    def commit(self: Transaction, op: str, *args: Any, **kwargs: Any) -> Any:
        nonlocal fired
        if not fired and (operation is None or op == operation):
            fired = True
            fn()
        return original(self, op, *args, **kwargs)

    Transaction.commit = commit  # type: ignore[method-assign]
    try:
        yield
    finally:
        Transaction.commit = original  # type: ignore[method-assign]
    assert fired, "the operation under test never committed"
