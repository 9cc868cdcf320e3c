"""The package version. A module of its own so the core (which writes it into each commit's
``engineInfo``) can import it without importing the package root; the root re-exports it."""

__version__ = "0.1.0"
