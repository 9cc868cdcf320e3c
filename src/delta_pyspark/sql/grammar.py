"""Which Delta statement a SQL text is (None: Spark's own), by its first words."""

from __future__ import annotations

from collections.abc import Callable

from delta_pyspark.sql import alter, path_metadata, table_commands
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import (
    StatementParser,
    parameter_marker,
)


def parse(sql: str) -> Statement | None:
    """The Delta statement ``sql`` is, or None when it is none of Delta's (Spark's then)."""
    statement = _statement(StatementParser(sql))
    marker = parameter_marker(sql)
    if statement is not None and marker is not None and statement.refusal is None:
        # Spark binds parameters in expressions it parses; these texts go to Python unbound.
        statement.refusal = (
            f"{statement.kind} does not take query parameters yet (found {marker!r}): write "
            "the values into the statement"
        )
    return statement


# The first words of each statement Delta adds, and its grammar.
_STARTS: tuple[tuple[tuple[str, ...], Callable[[StatementParser], Statement | None]], ...] = (
    (("DESCRIBE",), table_commands.describe),
    (("DESC",), table_commands.describe),
    (("OPTIMIZE",), table_commands.optimize),
    (("VACUUM",), table_commands.vacuum),
    (("RESTORE",), table_commands.restore),
    (("CONVERT", "TO", "DELTA"), table_commands.convert),
    (("CREATE",), table_commands.create),
    (("GENERATE",), table_commands.generate),
    (("REORG",), table_commands.reorg),
    (("ALTER", "TABLE"), alter.alter),
    (("SHOW", "TBLPROPERTIES"), table_commands.show_properties),
    (("SHOW", "COLUMNS"), path_metadata.show_columns),
    (("DROP", "TABLE"), table_commands.drop),
    (("TRUNCATE", "TABLE"), table_commands.truncate),
)


def _statement(p: StatementParser) -> Statement | None:
    for words, grammar in _STARTS:
        if p.accept(*words):
            return grammar(p)
    return None
