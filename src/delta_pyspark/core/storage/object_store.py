"""Tables on object stores (S3, GCS, Azure) through ``obstore``, the Python binding of the
Rust ``object_store`` crate that delta-rs uses.

A commit is a conditional put (``PutMode.Create``: S3's ``If-None-Match: *``, GCS's and
Azure's equivalents): of two writers creating one version, the store accepts exactly one, so
filesystem-style commits are safe without a lock service, as in delta-rs since 0.23. A put
is durable once the store has acknowledged it. Object stores have no directories and no
links: a "directory" is a key prefix, and listings come paginated from the store.

Credentials, region and endpoint come from the usual environment variables (``AWS_*``,
``GOOGLE_*``, ``AZURE_*``, read by ``obstore``) or from ``storage_options`` given to
``configure_storage``, deltalake's names. They are never logged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import obstore
from obstore.exceptions import AlreadyExistsError
from obstore.store import from_url

from delta_pyspark.core.storage.log_store import DirEntry, FileStatus, LogStore
from delta_pyspark.exceptions import FileAlreadyExistsError

# Schemes ``obstore`` serves (``s3a``/``s3n`` name the same S3 buckets as ``s3``).
OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "az", "abfs", "abfss", "adl", "azure"})

_LOCK = threading.Lock()
_OPTIONS: dict[str, dict[str, str]] = {}
_STORES: dict[tuple[str, str], ObjectStoreLogStore] = {}


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


def object_store_for(path: str) -> ObjectStoreLogStore:
    """The (cached) store of ``path``'s bucket."""
    bucket = _bucket_url(path)
    with _LOCK:
        options = _OPTIONS.get(bucket, {})
        cache_key = (bucket, repr(sorted(options.items())))
        store = _STORES.get(cache_key)
        if store is None:
            store = _STORES[cache_key] = ObjectStoreLogStore(bucket, options)
        return store


def _bucket_url(path: str) -> str:
    parsed = urlparse(path)
    scheme = {"s3a": "s3", "s3n": "s3"}.get(parsed.scheme, parsed.scheme)
    return f"{scheme}://{parsed.netloc}"


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

    def _url(self, key: str) -> str:
        return f"{self._bucket}/{key}"

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
                            self._url(meta["path"]), meta["size"], _ms(meta["last_modified"])
                        )
                    )
        found.sort(key=lambda s: s.name)
        yield from found

    def read(self, path: str) -> bytes:
        return bytes(obstore.get(self._store, self._key(path)).bytes())

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        data = bytes(obstore.get_range(self._store, self._key(path), start=offset, length=length))
        if len(data) != length:
            raise EOFError(f"{path}: wanted {length} bytes at offset {offset}, got {len(data)}")
        return data

    def write_if_absent(self, path: str, data: bytes, durable: bool = True) -> None:
        try:
            obstore.put(self._store, self._key(path), data, mode="create")
        except AlreadyExistsError:
            raise FileAlreadyExistsError(f"{path} already exists") from None

    def write(self, path: str, data: bytes, durable: bool = True) -> None:
        obstore.put(self._store, self._key(path), data, mode="overwrite")

    def delete(self, path: str) -> bool:
        if not self.exists(path):
            return False
        obstore.delete(self._store, self._key(path))
        return True

    def exists(self, path: str) -> bool:
        try:
            obstore.head(self._store, self._key(path))
        except FileNotFoundError:
            return False
        return True

    def is_dir(self, path: str) -> bool:
        prefix = self._key(path).rstrip("/") + "/"
        for batch in obstore.list(self._store, prefix=prefix, chunk_size=1):
            return bool(batch)
        return False

    def status(self, path: str) -> FileStatus:
        meta = obstore.head(self._store, self._key(path))
        return FileStatus(path, meta["size"], _ms(meta["last_modified"]))

    def scan(self, directory: str) -> list[DirEntry]:
        prefix = self._key(directory).rstrip("/") + "/"
        listed = obstore.list_with_delimiter(self._store, prefix=prefix)
        entries = [
            DirEntry(self._url(m["path"]), m["size"], _ms(m["last_modified"]))
            for m in listed["objects"]
        ]
        entries += [
            DirEntry(self._url(p.rstrip("/")), 0, 0, is_dir=True) for p in listed["common_prefixes"]
        ]
        return entries

    def copy_if_absent(self, src: str, dest: str) -> bool:
        # S3 has no copy-if-absent: the bytes go through this process to a conditional put
        try:
            self.write_if_absent(dest, self.read(src))
        except FileAlreadyExistsError:
            return False
        return True

    def move(self, src: str, dest: str) -> None:
        obstore.rename(self._store, self._key(src), self._key(dest))

    def remove_empty_dir(self, path: str) -> bool:
        # a prefix exists only while objects are under it: an "empty directory" is gone
        return not self.is_dir(path)

    def delete_tree(self, path: str) -> None:
        prefix = self._key(path).rstrip("/") + "/"
        for batch in obstore.list(self._store, prefix=prefix):
            obstore.delete(self._store, [m["path"] for m in batch])


def _just_before(prefix: str, start_name: str) -> str | None:
    """A key that sorts right before ``prefix + start_name`` (listing ``offset`` is
    exclusive), so a listing from it starts at ``start_name``."""
    if not start_name or start_name[-1] == "\0":
        return None
    last = start_name[-1]
    return prefix + start_name[:-1] + chr(ord(last) - 1) + "\U0010ffff"
