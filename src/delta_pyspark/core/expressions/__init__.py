"""Predicates as a small AST: parsed from Spark SQL text (with Spark's cast and coercion
rules for literals) and printed back. File skipping, conflict checks and generated columns
reason over it without Spark."""
