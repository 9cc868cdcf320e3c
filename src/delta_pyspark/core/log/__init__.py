"""Reading the transaction log: which files make a version (segment), parsing commits,
reconciling actions (replay), checkpoints, checksums, validating the replayed state, and
the rules for the paths a log names. Produces the state a snapshot is built from."""
