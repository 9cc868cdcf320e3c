"""Snapshots: one immutable table version, the ``DeltaLog`` handle that loads (and caches)
them, and time-travel arguments."""
