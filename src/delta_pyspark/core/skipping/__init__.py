"""File skipping: which files of a snapshot may hold rows matching a predicate, from their
stats and partition values."""
