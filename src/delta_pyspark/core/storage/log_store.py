"""Storage behind the transaction log and the table's files.

The protocol needs four things from storage: list a directory in lexicographic
order starting at a name, read a file, write a file *only if it does not exist*
(the commit point for ``NNN.json``), and delete. Table maintenance needs a few more:
walk a directory tree without following links (VACUUM, CONVERT, manifests), copy
(deep CLONE), move (staged data files into place) and remove empty directories.
Everything above this module, in the core and the Spark engine, uses these calls
only, so an object store plus a commit coordinator is one new implementation of
``LogStore``, without touching log replay, transactions or maintenance.
"""

from __future__ import annotations

import os
import shutil
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyspark.core.storage.locations import join, parent, to_local_path
from delta_pyspark.exceptions import FileAlreadyExistsError, UnsupportedStorageError


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One listed file: its full path, size in bytes and modification time (ms)."""

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One entry of ``LogStore.scan``: a file, a directory, or a symbolic link (never
    followed; ``link_to_file`` says whether its target is a regular file)."""

    path: str
    size: int
    modification_time: int
    is_dir: bool = False
    is_link: bool = False
    link_to_file: bool = False

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class LogStore(ABC):
    """Storage primitives the Delta log needs; paths are absolute, ``/``-separated."""

    atomic_put_if_absent = True
    """Whether ``write_if_absent`` is atomic; filesystem commits need it."""

    @abstractmethod
    def list_from(self, directory: str, start_name: str = "") -> Iterator[FileStatus]:
        """Files directly in ``directory`` whose name sorts >= ``start_name``, sorted by name.

        A missing directory lists as empty.
        """

    @abstractmethod
    def read(self, path: str) -> bytes:
        """Whole file contents; raises ``FileNotFoundError`` if absent."""

    @abstractmethod
    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (deletion vectors share files)."""

    def open_input(self, path: str) -> pa.NativeFile:
        """A random-access reader of ``path``, for Parquet checkpoints: by default the
        whole file read into memory (one request); local files are read in place, so a
        checkpoint's reader fetches only the column chunks it decodes."""
        return pa.BufferReader(self.read(path))

    def read_footer(self, path: str) -> pq.FileMetaData:
        """The Parquet footer of a data file (row counts and column statistics), read
        through ``open_input``: on object stores only the file's tail is fetched."""
        with self.open_input(path) as source:
            return pq.read_metadata(source)

    @abstractmethod
    def write_if_absent(self, path: str, data: bytes, durable: bool = True) -> None:
        """Atomically create ``path`` with ``data``; ``FileAlreadyExistsError`` if it exists.

        Readers never observe a partial file. This is the commit point of a transaction.
        ``durable=False`` skips flushing to stable storage, for files that are only hints
        and validated on read (``.crc``, ``_last_checkpoint``).
        """

    @abstractmethod
    def write(self, path: str, data: bytes, durable: bool = True) -> None:
        """Atomically create or replace ``path`` (``_last_checkpoint``, checkpoints)."""

    @abstractmethod
    def delete(self, path: str) -> bool:
        """Remove a file; a missing file is not an error. Whether a file was removed."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""

    @abstractmethod
    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is an existing directory (object stores: a non-empty prefix)."""

    @abstractmethod
    def status(self, path: str) -> FileStatus:
        """Size and modification time of a file (through a link: of its target)."""

    @abstractmethod
    def scan(self, directory: str) -> list[DirEntry]:
        """The entries directly in ``directory``, unsorted; a missing directory is empty."""

    @abstractmethod
    def copy_if_absent(self, src: str, dest: str) -> bool:
        """Copy ``src`` to ``dest`` (parents created); False, copying nothing visible, when
        ``dest`` exists. Readers never see a partial ``dest``."""

    @abstractmethod
    def move(self, src: str, dest: str) -> None:
        """Move a file to ``dest`` (parents created), replacing nothing the caller names
        twice: staged data files carry unique names."""

    @abstractmethod
    def remove_empty_dir(self, path: str) -> bool:
        """Remove ``path`` if it is an empty directory; whether it was removed."""

    @abstractmethod
    def delete_tree(self, path: str) -> None:
        """Remove a directory and everything below it; a missing one is not an error."""

    def real_path(self, path: str) -> str:
        """``path`` with every symbolic link resolved (stores without links: itself)."""
        return path

    def walk_files(self, directory: str) -> Iterator[DirEntry]:
        """Every file under ``directory`` (links to files included), entering no link."""
        stack = [directory]
        while stack:
            for entry in self.scan(stack.pop()):
                if entry.is_dir:
                    stack.append(entry.path)
                elif not entry.is_link or entry.link_to_file:
                    yield entry


class LocalLogStore(LogStore):
    """POSIX file system: temp file + fsync + ``link`` (refuses to overwrite) for commits."""

    def list_from(self, directory: str, start_name: str = "") -> Iterator[FileStatus]:
        local = to_local_path(directory)
        try:
            entries = [e for e in os.scandir(local) if e.name >= start_name and e.is_file()]
        except (FileNotFoundError, NotADirectoryError):
            return
        entries.sort(key=lambda e: e.name)
        base = directory.rstrip("/")
        for entry in entries:
            st = entry.stat()
            yield FileStatus(f"{base}/{entry.name}", st.st_size, int(st.st_mtime * 1000))

    def read(self, path: str) -> bytes:
        with open(to_local_path(path), "rb") as f:
            return f.read()

    def open_input(self, path: str) -> pa.NativeFile:
        if type(self).read is not LocalLogStore.read:
            return super().open_input(path)  # a subclass's ``read`` says what reading is
        return pa.OSFile(to_local_path(path))

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        with open(to_local_path(path), "rb") as f:
            f.seek(offset)
            data = f.read(length)
        if len(data) != length:
            raise EOFError(f"{path}: wanted {length} bytes at offset {offset}, got {len(data)}")
        return data

    def _write_temp(self, local: str, data: bytes, durable: bool) -> str:
        directory = os.path.dirname(local)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(local)}.{uuid.uuid4().hex}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    @staticmethod
    def _fsync_dir(directory: str) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_if_absent(self, path: str, data: bytes, durable: bool = True) -> None:
        local = to_local_path(path)
        tmp = self._write_temp(local, data, durable)
        try:
            os.link(tmp, local)  # atomic, and fails with EEXIST instead of overwriting
        except FileExistsError:
            raise FileAlreadyExistsError(f"{path} already exists") from None
        finally:
            os.unlink(tmp)
        if durable:
            self._fsync_dir(os.path.dirname(local))

    def write(self, path: str, data: bytes, durable: bool = True) -> None:
        local = to_local_path(path)
        tmp = self._write_temp(local, data, durable)
        os.replace(tmp, local)
        if durable:
            self._fsync_dir(os.path.dirname(local))

    def delete(self, path: str) -> bool:
        try:
            os.unlink(to_local_path(path))
        except FileNotFoundError:
            return False
        return True

    def exists(self, path: str) -> bool:
        return os.path.exists(to_local_path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(to_local_path(path))

    def status(self, path: str) -> FileStatus:
        st = os.stat(to_local_path(path))
        return FileStatus(path, st.st_size, int(st.st_mtime * 1000))

    def scan(self, directory: str) -> list[DirEntry]:
        try:
            entries = list(os.scandir(to_local_path(directory)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
                is_link = entry.is_symlink()
                out.append(
                    DirEntry(
                        os.path.normpath(entry.path),
                        st.st_size,
                        int(st.st_mtime * 1000),
                        is_dir=entry.is_dir(follow_symlinks=False),
                        is_link=is_link,
                        link_to_file=is_link and os.path.isfile(entry.path),
                    )
                )
            except FileNotFoundError:
                continue  # deleted while listing
        return out

    def copy_if_absent(self, src: str, dest: str) -> bool:
        local = to_local_path(dest)
        directory = os.path.dirname(local)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(local)}.{uuid.uuid4().hex}.tmp")
        shutil.copyfile(to_local_path(src), tmp)
        try:
            os.link(tmp, local)  # atomic; refuses to replace an existing file
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True

    def move(self, src: str, dest: str) -> None:
        local = to_local_path(dest)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        os.rename(to_local_path(src), local)

    def remove_empty_dir(self, path: str) -> bool:
        try:
            os.rmdir(to_local_path(path))
        except OSError:  # not empty, gone, or not a directory
            return False
        return True

    def delete_tree(self, path: str) -> None:
        shutil.rmtree(to_local_path(path), ignore_errors=True)

    def real_path(self, path: str) -> str:
        return os.path.realpath(to_local_path(path))


def log_store_for(path: str) -> LogStore:
    """The log store serving ``path``'s scheme: the local file system, or an object store
    (``core.storage.object_store``: S3, GCS, Azure). Any other scheme is refused by name."""
    scheme = urlparse(path).scheme
    if scheme in ("", "file") or len(scheme) == 1:  # one letter: a Windows drive
        return LocalLogStore()
    from delta_pyspark.core.storage.object_store import OBJECT_STORE_SCHEMES, object_store_for

    if scheme in OBJECT_STORE_SCHEMES:
        return object_store_for(path)
    raise UnsupportedStorageError(
        f"no storage for scheme {scheme!r} ({path}): delta-pyspark keeps tables on local "
        f"disks (file:) and on object stores ({', '.join(sorted(OBJECT_STORE_SCHEMES))})"
    )


def table_root_of(location: str) -> str | None:
    """The Delta table holding the file at ``location``: its nearest ancestor with a
    ``_delta_log`` directory (None: no table holds it)."""
    store = log_store_for(location)
    directory = parent(location)
    while True:
        if store.is_dir(join(directory, "_delta_log")):
            return directory
        up = parent(directory)
        if up == directory:
            return None
        directory = up
