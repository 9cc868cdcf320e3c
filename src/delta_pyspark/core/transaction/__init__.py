"""Optimistic transactions: the commit, conflict checks against winning commits (with the
row-level rebase of deletion vectors), row tracking, table definitions, and the work that
follows a commit (checkpoints, cleanup, symlink manifests)."""
