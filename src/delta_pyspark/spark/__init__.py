"""Spark engine: every data-plane step (scan, write, rewrite) is a native Spark
plan over the files the core's snapshot lists."""
