"""The protocol's vocabulary: actions, schemas and their Arrow types, column mapping,
partition values, table properties and features, identity and generated column metadata,
and the deletion vector format. Pure definitions and rules; no log reading."""
