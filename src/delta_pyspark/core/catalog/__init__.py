"""Catalog-managed tables: the catalog database (SQLite, PostgreSQL), staged commits ratified
by the catalog, and atomic multi-table transactions."""
