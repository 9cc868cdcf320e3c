"""Spark-free core: protocol actions, schema, log store, log replay, checkpoints,
transactions. Nothing in this package may import pyspark."""
