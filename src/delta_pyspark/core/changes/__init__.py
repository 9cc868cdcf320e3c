"""Reading a table's changes: the change data feed's files and rows per version, and what a
streaming read delivers and where it stands."""
