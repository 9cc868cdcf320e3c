"""Native Spark scans and writes of a snapshot's data files: reading files (with deletion
vectors and column mapping), writing Parquet with footer stats, optimized writes."""
