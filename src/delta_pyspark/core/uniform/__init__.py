"""UniForm: the Delta table's data files also an Iceberg table's, with Iceberg metadata
written beside the log after each commit (PROTOCOL.md "Iceberg Compatibility V2")."""
