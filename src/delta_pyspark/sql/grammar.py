"""Which Delta statement a SQL text is (None: Spark's own), by its first words."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from delta_pyspark.sql import alter, table_commands, transactions
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import StatementParser, bind, markers, tokens_of

_Grammar = Callable[[StatementParser], Statement | None]

# The first words of each statement Delta adds, and its grammar: the session parser asks
# about a statement only when it opens with one of these (``openings``).
_STARTS: tuple[tuple[tuple[str, ...], _Grammar], ...] = (
    (("DESCRIBE",), table_commands.describe),
    (("DESC",), table_commands.describe),
    (("OPTIMIZE",), table_commands.optimize),
    (("VACUUM",), table_commands.vacuum),
    (("RESTORE",), table_commands.restore),
    (("CONVERT", "TO"), table_commands.convert),
    (("CREATE",), table_commands.create),
    (("GENERATE",), table_commands.generate),
    (("REORG",), table_commands.reorg),
    (("ALTER", "TABLE"), alter.alter),
    (("BEGIN",), transactions.begin),
    (("COMMIT",), transactions.commit),
    (("ROLLBACK",), transactions.rollback),
)


def openings() -> str:
    """The openings of Delta's statements, one a line, as the session parser takes them."""
    return "\n".join(" ".join(words) for words, _ in _STARTS)


def parse(sql: str, tokens: str, values: list[str] | None = None) -> Statement | None:
    """The Delta statement ``sql`` is (``tokens``: Spark's lexer's, as ``SqlTokens``
    encodes them), or None when it is none of Delta's (Spark's then). Before Spark has bound
    the statement's parameter markers (``values`` None) they are placeholders, reported in
    ``Statement.markers``; with ``values`` they are parsed in their places."""
    lexed = tokens_of(sql, tokens)
    if any(t.is_word("IDENTIFIER") and n.text == "(" for t, n in pairwise(lexed)):
        return None  # IDENTIFIER(:name) names a table only Spark's grammar resolves
    parser = StatementParser(sql, bind(sql, lexed, values), bound=values is not None)
    for words, grammar in _STARTS:
        if parser.accept(*words):
            statement = grammar(parser)
            if statement is not None:
                statement.markers = [m.name for m in markers(lexed)]
            return statement
    return None
