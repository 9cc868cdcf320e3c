"""Delta tables by name: entries of Spark's session catalog, and catalog-managed tables
attached to a session."""
