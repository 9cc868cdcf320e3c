"""Per-file statistics: which columns get them, their Arrow layout, collecting them from
Parquet footers and parsing the ``add.stats`` JSON."""
