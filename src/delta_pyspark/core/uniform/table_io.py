"""pyiceberg's file interface over the table's storage (``core.storage``), so Iceberg
metadata is written and read where, and how, the Delta log is: local disks and object
stores alike, new files by put-if-absent."""

from __future__ import annotations

import io
from typing import Any

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream

from delta_pyspark.core.storage.log_store import LogStore


class _Input(InputFile):
    def __init__(self, store: LogStore, location: str) -> None:
        super().__init__(location)
        self._store = store

    def __len__(self) -> int:
        return self._store.status(self.location).size

    def exists(self) -> bool:
        return self._store.exists(self.location)

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._store.read(self.location))


class _Buffer(io.BytesIO):
    """Bytes written in memory and stored whole on close (Iceberg's files are small)."""

    def __init__(self, store: LogStore, location: str, overwrite: bool) -> None:
        super().__init__()
        self._target = (store, location, overwrite)
        self.size = 0

    def close(self) -> None:
        if not self.closed:
            store, location, overwrite = self._target
            data = self.getvalue()
            self.size = len(data)
            if overwrite:
                store.write(location, data)
            else:
                store.write_if_absent(location, data)
        super().close()


class _Output(OutputFile):
    def __init__(self, store: LogStore, location: str) -> None:
        super().__init__(location)
        self._store = store
        self._written: _Buffer | None = None

    def __len__(self) -> int:
        if self._written is not None and self._written.closed:
            return self._written.size
        return self._store.status(self.location).size

    def exists(self) -> bool:
        return self._store.exists(self.location)

    def to_input_file(self) -> InputFile:
        return _Input(self._store, self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        self._written = _Buffer(self._store, self.location, overwrite)
        return self._written


class StoreFileIO(FileIO):
    """Iceberg file access through a ``LogStore``."""

    def __init__(self, store: LogStore) -> None:
        super().__init__({})
        self.store = store

    def new_input(self, location: str) -> InputFile:
        return _Input(self.store, location)

    def new_output(self, location: str) -> OutputFile:
        return _Output(self.store, location)

    def delete(self, location: Any) -> None:
        self.store.delete(location if isinstance(location, str) else location.location)
