"""Every command that writes a table: DataFrame and SQL writes, DML (DELETE, UPDATE,
``merge/``), change data, OPTIMIZE (compaction, Z-order, clustering, auto compaction),
VACUUM, RESTORE, CLONE, CONVERT and DROP FEATURE."""
