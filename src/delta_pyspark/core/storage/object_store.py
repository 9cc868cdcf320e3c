"""Tables on object stores (S3, GCS, Azure) through ``obstore``, the Python binding of the
Rust ``object_store`` crate that delta-rs uses.

A commit is a conditional put (``PutMode.Create``: S3's ``If-None-Match: *``, GCS's and
Azure's equivalents): of two writers creating one version, the store accepts exactly one, so
filesystem-style commits are safe without a lock service, as in delta-rs since 0.23. A put
is durable once the store has acknowledged it. Object stores have no directories and no
links: a "directory" is a key prefix, and listings come paginated from the store.

Credentials, region and endpoint come, first found, from options given to
``configure_storage`` (deltalake's names), from the options source the Spark engine installs
(its session's ``fs.s3a.*`` settings, so Spark's S3A connector and the log agree on a
bucket), or from the usual environment variables (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``, read
by ``obstore``). They are never logged.
"""

from __future__ import annotations

import functools
import io
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlparse

import obstore
import pyarrow as pa
import pyarrow.parquet as pq
from obstore.exceptions import AlreadyExistsError, BaseError, NotSupportedError
from obstore.store import from_url

from delta_pyspark.core.storage.log_store import DirEntry, FileStatus, LogStore
from delta_pyspark.exceptions import FileAlreadyExistsError, StorageAccessError

if TYPE_CHECKING:
    from obstore._buffered import ReadableFile  # typing only: its runtime home is private

# Schemes ``obstore`` serves (``s3a``/``s3n`` name the same S3 buckets as ``s3``).
OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "az", "abfs", "abfss", "adl", "azure"})

#: objects up to this size are read whole by ``open_input``
_WHOLE_OBJECT_BYTES = 32 << 20
#: bytes read from a data file's end to find its Parquet footer
_TAIL = 64 << 10

P = ParamSpec("P")
R = TypeVar("R")

_LOCK = threading.Lock()
_OPTIONS: dict[str, dict[str, str]] = {}
_STORES: dict[tuple[str, str], ObjectStoreLogStore] = {}
_SOURCE: Callable[[str], Mapping[str, str]] | None = None


def configure_storage(url: str, options: Mapping[str, str] | None) -> None:
    """Storage options (deltalake's names: ``AWS_ENDPOINT_URL``, ``AWS_REGION``,
    ``AWS_ACCESS_KEY_ID``, ...) for every table under ``url``'s bucket; None forgets them.
    They take precedence over the environment."""
    key = _bucket_url(url)
    with _LOCK:
        if options is None:
            _OPTIONS.pop(key, None)
        else:
            _OPTIONS[key] = dict(options)
        for cached in [k for k in _STORES if k[0] == key]:
            del _STORES[cached]


def use_options_source(source: Callable[[str], Mapping[str, str]] | None) -> None:
    """Where a bucket's options come from when ``configure_storage`` gave it none (the
    Spark engine reads its session's S3A settings); ``source`` gets the bucket's URL
    (``s3://bucket``). None: the environment only."""
    global _SOURCE
    _SOURCE = source


def object_store_for(path: str) -> ObjectStoreLogStore:
    """The (cached) store of ``path``'s bucket: options from ``configure_storage``, else
    from the options source, else the environment's."""
    bucket = _bucket_url(path)
    source = _SOURCE
    inherited = dict(source(bucket)) if source is not None and bucket not in _OPTIONS else {}
    with _LOCK:
        options = _OPTIONS.get(bucket, inherited)
        cache_key = (bucket, repr(sorted(options.items())))
        store = _STORES.get(cache_key)
        if store is None:
            store = _STORES[cache_key] = ObjectStoreLogStore(bucket, options)
        return store


def _bucket_url(path: str) -> str:
    parsed = urlparse(path)
    scheme = {"s3a": "s3", "s3n": "s3"}.get(parsed.scheme, parsed.scheme)
    return f"{scheme}://{parsed.netloc}"


def _translated(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` raising ``StorageAccessError`` for the store's failures (a missing object
    stays ``FileNotFoundError``, a lost conditional put ``FileAlreadyExistsError``)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except BaseError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise StorageAccessError(f"{method.__name__}: {first}") from None

    return wrapper


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


class ObjectStoreLogStore(LogStore):
    """One bucket (or container) of an object store; paths are full URLs into it."""

    def __init__(self, bucket_url: str, options: Mapping[str, str] | None = None) -> None:
        self._bucket = bucket_url
        # obstore types each store's config apart (S3Config, GCSConfig, ...); the URL picks one
        config: Any = {}
        client: Any = {}
        for name, value in (options or {}).items():
            if name.upper() in ("AWS_ALLOW_HTTP", "ALLOW_HTTP"):
                client["allow_http"] = str(value).lower() == "true"
            else:
                config[name.upper()] = value
        self._store = from_url(bucket_url, config=config or None, client_options=client or None)

    def _key(self, path: str) -> str:
        parsed = urlparse(path)
        if _bucket_url(path) != self._bucket:
            raise ValueError(f"{path} is not in {self._bucket}")
        return parsed.path.lstrip("/")

    @staticmethod
    def _url(like: str, key: str) -> str:
        """``key`` as a URL in the spelling of ``like`` (``s3a://`` stays ``s3a://``)."""
        parsed = urlparse(like)
        return f"{parsed.scheme}://{parsed.netloc}/{key}"

    @_translated
    def list_from(self, directory: str, start_name: str = "") -> Iterator[FileStatus]:
        prefix = self._key(directory).rstrip("/") + "/"
        found = []
        for batch in obstore.list(
            self._store, prefix=prefix, offset=_just_before(prefix, start_name)
        ):
            for meta in batch:
                name = meta["path"][len(prefix) :]
                if "/" not in name and name >= start_name:
                    found.append(
                        FileStatus(
                            self._url(directory, meta["path"]),
                            meta["size"],
                            _ms(meta["last_modified"]),
                        )
                    )
        found.sort(key=lambda s: s.name)
        return iter(found)

    @_translated
    def read(self, path: str) -> bytes:
        return bytes(obstore.get(self._store, self._key(path)).bytes())

    @_translated
    def read_range(self, path: str, offset: int, length: int) -> bytes:
        data = bytes(obstore.get_range(self._store, self._key(path), start=offset, length=length))
        if len(data) != length:
            raise EOFError(f"{path}: wanted {length} bytes at offset {offset}, got {len(data)}")
        return data

    @_translated
    def open_input(self, path: str) -> pa.NativeFile:
        # One GET: a small object (checkpoints, mostly) comes whole, so a Parquet reader
        # does not pay a request per column chunk; a large one is read by ranges.
        result = obstore.get(self._store, self._key(path))
        if result.meta["size"] <= _WHOLE_OBJECT_BYTES:
            return pa.BufferReader(bytes(result.bytes()))
        del result  # closes the response unread
        return pa.PythonFile(_ObjectReader(obstore.open_reader(self._store, self._key(path))))

    @_translated
    def read_footer(self, path: str) -> pq.FileMetaData:
        # The tail holds the footer (its length and ``PAR1`` in the last 8 bytes): one
        # ranged GET of the last 64 KiB, a second only for a larger footer.
        key = self._key(path)
        tail = bytes(obstore.get(self._store, key, options={"range": {"suffix": _TAIL}}).bytes())
        needed = int.from_bytes(tail[-8:-4], "little") + 8 if len(tail) >= 8 else 0
        if needed > len(tail):
            options: Any = {"range": {"suffix": needed}}
            tail = bytes(obstore.get(self._store, key, options=options).bytes())
        return pq.read_metadata(pa.BufferReader(tail))

    @_translated
    def write_if_absent(self, path: str, data: bytes, durable: bool = True) -> None:
        try:
            obstore.put(self._store, self._key(path), data, mode="create")
        except FileNotFoundError:
            raise self._no_bucket(path) from None
        except AlreadyExistsError:
            raise FileAlreadyExistsError(f"{path} already exists") from None
        except NotSupportedError:
            raise StorageAccessError(
                f"cannot commit {path}: the store does not support conditional writes "
                "(put-if-absent), which Delta commits need to stay safe with several writers"
            ) from None

    @_translated
    def write(self, path: str, data: bytes, durable: bool = True) -> None:
        try:
            obstore.put(self._store, self._key(path), data, mode="overwrite")
        except FileNotFoundError:
            raise self._no_bucket(path) from None

    def _no_bucket(self, path: str) -> StorageAccessError:
        # a put's "not found" is the bucket's (an object is created, never found)
        return StorageAccessError(f"cannot write {path}: its bucket does not exist")

    @_translated
    def delete(self, path: str) -> bool:
        if not self.exists(path):
            return False
        obstore.delete(self._store, self._key(path))
        return True

    @_translated
    def exists(self, path: str) -> bool:
        try:
            obstore.head(self._store, self._key(path))
        except FileNotFoundError:
            return False
        return True

    @_translated
    def is_dir(self, path: str) -> bool:
        prefix = self._key(path).rstrip("/") + "/"
        for batch in obstore.list(self._store, prefix=prefix, chunk_size=1):
            return bool(batch)
        return False

    @_translated
    def status(self, path: str) -> FileStatus:
        meta = obstore.head(self._store, self._key(path))
        return FileStatus(path, meta["size"], _ms(meta["last_modified"]))

    @_translated
    def scan(self, directory: str) -> list[DirEntry]:
        prefix = self._key(directory).rstrip("/") + "/"
        listed = obstore.list_with_delimiter(self._store, prefix=prefix)
        entries = [
            DirEntry(self._url(directory, m["path"]), m["size"], _ms(m["last_modified"]))
            for m in listed["objects"]
        ]
        entries += [
            DirEntry(self._url(directory, p.rstrip("/")), 0, 0, is_dir=True)
            for p in listed["common_prefixes"]
        ]
        return entries

    @_translated
    def copy_if_absent(self, src: str, dest: str) -> bool:
        # S3 has no copy-if-absent: the bytes go through this process to a conditional put
        try:
            self.write_if_absent(dest, self.read(src))
        except FileAlreadyExistsError:
            return False
        return True

    @_translated
    def move(self, src: str, dest: str) -> None:
        obstore.rename(self._store, self._key(src), self._key(dest))

    @_translated
    def remove_empty_dir(self, path: str) -> bool:
        # a prefix exists only while objects are under it: an "empty directory" is gone
        return not self.is_dir(path)

    @_translated
    def delete_tree(self, path: str) -> None:
        prefix = self._key(path).rstrip("/") + "/"
        for batch in obstore.list(self._store, prefix=prefix):
            obstore.delete(self._store, [m["path"] for m in batch])


class _ObjectReader(io.RawIOBase):
    """obstore's seekable object reader as the file object pyarrow expects (it asks a
    handle whether it is closed and readable; obstore's reader does not say)."""

    def __init__(self, reader: ReadableFile) -> None:
        super().__init__()
        self._reader = reader

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._reader.seek(offset, whence)

    def tell(self) -> int:
        return self._reader.tell()

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return bytes(self._reader.readall())
        return bytes(self._reader.read(size))

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()


def _just_before(prefix: str, start_name: str) -> str | None:
    """A key that sorts right before ``prefix + start_name`` (listing ``offset`` is
    exclusive), so a listing from it starts at ``start_name``."""
    if not start_name or start_name[-1] == "\0":
        return None
    last = start_name[-1]
    return prefix + start_name[:-1] + chr(ord(last) - 1) + "\U0010ffff"
