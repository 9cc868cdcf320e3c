"""Performance benchmarks: ``python -m benchmarks [name ...]`` (all when no name is given)."""
