"""Delta's SQL statements through Spark's own ``spark.sql``.

MERGE INTO, UPDATE and DELETE FROM are Spark's: Spark parses and resolves them, and the
session extension's rule (``DeltaDml.java``) hands each one on a Delta table to
``DeltaCommands.merge``/``update``/``delete`` here with Spark's resolved expressions as
``Column``s (``dml``), which run the ``DeltaTable`` builders.

For Delta's own statements, the session extension's parser (``DeltaSqlParser.java``) reads
the first words of each statement with Spark's lexer; when they open one of ``grammar``'s
statements (DESCRIBE, OPTIMIZE, VACUUM, RESTORE, CONVERT TO DELTA, CREATE, GENERATE, REORG,
ALTER TABLE, SHOW TBLPROPERTIES, ...) it asks ``DeltaCommands.describe`` here, with the
statement's tokens from Spark's lexer. Its parameter markers are bound by Spark's analyzer
and the statement is parsed again with their values when it runs. A statement
on a Delta table becomes a command node whose ``run`` calls ``DeltaCommands.run``, which
executes it through the same Python API as ``DeltaTable`` (``tables.py``); anything else
(another table format, a statement Delta does not add) answers ``N`` and goes to Spark's
parser untouched. Time travel in queries (``VERSION AS OF``/``TIMESTAMP AS OF``) on a Delta
table is rewritten by the parser into the read options ``callback_service.time_travel`` reads, with
the table's path from ``DeltaCommands.timeTravel``.

The conditions and values of these statements (OPTIMIZE's WHERE, ALTER TABLE's ADD
CONSTRAINT) are handed to the Python API as the user's SQL text, cut out of the statement
between its tokens, so Spark parses each expression as written. Errors raised here reach
the user as the same typed exception (``callback_service.answer_error``'s tokens).

Table names resolve as delta-spark's: ``delta.`path``` is a path; a name is looked up in the
session catalog (its location), and a name the catalog does not know falls back to where
``DeltaTable.forName`` looks (``spark.catalog.table_location``).

Modules: ``text`` (tokens, parameter markers, recursive-descent pieces), ``grammar`` (which
statement a text is, and the openings the session parser asks about), ``statement`` (the
parsed form), ``table_commands``/``alter`` (each statement's grammar and run), ``dml``
(Spark's DML statements run), ``resolve`` (table names), ``commands`` (the JVM's side).
"""

from __future__ import annotations

from delta_pyspark.sql.commands import DeltaCommands, enable
from delta_pyspark.sql.grammar import parse

__all__ = ["DeltaCommands", "enable", "parse"]
