"""Table commands whose decisions are Spark-free: ALTER TABLE (properties, columns,
clustering, protocol and feature changes), RESTORE, CLONE, VACUUM and OPTIMIZE's plan."""
