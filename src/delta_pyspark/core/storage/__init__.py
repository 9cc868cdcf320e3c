"""Where table files live and how a version is claimed: the storage interface (``LogStore``:
reads, listings, put-if-absent commits, deletes) and the commit coordinator a catalog may
put in its place. Every other package reaches table files through here."""
