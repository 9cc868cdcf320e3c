"""Column rules enforced in the data plane: CHECK and NOT NULL constraints, generated and
identity column values, row tracking's preserved ids."""
