"""Where durable state lives: a local directory or an s3:// prefix, behind one small interface."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse


class Store(Protocol):
    """Flat namespace of immutable-ish files under one location; names use '/' separators. LocalStore and
    S3Store implement it."""

    def put_file(self, local: Path, name: str) -> None: ...
    def put_bytes(self, data: bytes, name: str) -> None: ...
    def get_file(self, name: str, local: Path) -> None: ...
    def get_bytes(self, name: str) -> bytes | None: ...
    def list(self, prefix: str) -> list[str]: ...
    def list_from(self, prefix: str, start: str) -> list[tuple[str, str]]: ...
    def delete(self, names: list[str]) -> None: ...


class LocalStore:
    def __init__(self, root: str):
        self.root = Path(root)

    def _path(self, name: str) -> Path:
        return self.root / name

    def put_file(self, local: Path, name: str) -> None:
        dest = self._path(name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.copyfile(local, tmp)
        _fsync_file(tmp)
        os.replace(tmp, dest)

    def put_bytes(self, data: bytes, name: str) -> None:
        dest = self._path(name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)  # the rename is the commit point
        _fsync_dir(dest.parent)

    def get_file(self, name: str, local: Path) -> None:
        shutil.copyfile(self._path(name), local)

    def get_bytes(self, name: str) -> bytes | None:
        try:
            return self._path(name).read_bytes()
        except FileNotFoundError:
            return None

    def list(self, prefix: str) -> list[str]:
        """Every file below prefix, recursively, like an S3 listing."""
        base = self._path(prefix)
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*")
                      if p.is_file() and not p.name.endswith(".tmp"))

    def list_from(self, prefix: str, start: str) -> list[tuple[str, str]]:
        """(name, tag) of every file below prefix whose name is `start` or after it; the tag changes when the
        file is written again (size and modification time here, the eTag on S3)."""
        out = []
        for name in self.list(prefix):
            if name >= start:
                st = self._path(name).stat()
                out.append((name, f"{st.st_size}-{st.st_mtime_ns}"))
        return out

    def delete(self, names: list[str]) -> None:
        for n in names:
            path = self._path(n)
            path.unlink(missing_ok=True)
            if path.parent != self.root and path.parent.is_dir() and not any(path.parent.iterdir()):
                path.parent.rmdir()  # keep the tree free of empty version folders


class S3Store:
    def __init__(self, uri: str, client):
        p = urlparse(uri)
        self.bucket = p.netloc
        self.prefix = p.path.strip("/")
        self.client = client

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def put_file(self, local: Path, name: str) -> None:
        self.client.upload_file(str(local), self.bucket, self._key(name))

    def put_bytes(self, data: bytes, name: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=data)

    def get_file(self, name: str, local: Path) -> None:
        self.client.download_file(self.bucket, self._key(name), str(local))

    def get_bytes(self, name: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(name))["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def list(self, prefix: str) -> list[str]:
        start = self._key(prefix.rstrip("/") + "/")
        strip = len(self._key(""))
        names = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            names.extend(o["Key"][strip:] for o in page.get("Contents", []))
        return sorted(names)

    def list_from(self, prefix: str, start: str) -> list[tuple[str, str]]:
        """(name, eTag) of every object below prefix whose name is `start` or after it: S3 lists from there
        (StartAfter), so the names before it cost nothing."""
        base = self._key(prefix.rstrip("/") + "/")
        strip = len(self._key(""))
        kwargs = {"StartAfter": self._key(start)[:-1]} if start else {}  # just before `start`: it is listed too
        out = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base, **kwargs):
            out.extend((o["Key"][strip:], o["ETag"].strip('"')) for o in page.get("Contents", []))
        return sorted(x for x in out if x[0] >= start)

    def delete(self, names: list[str]) -> None:
        for i in range(0, len(names), 1000):
            chunk = [{"Key": self._key(n)} for n in names[i:i + 1000]]
            resp = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": chunk, "Quiet": True})
            if resp.get("Errors"):
                raise OSError(f"could not delete old state files: {resp['Errors'][:3]}")


def open_store(location: str, s3_client_factory) -> Store:
    """A store for a local path (or file:// URI) or an s3:// URI; `s3_client_factory` makes the S3 client
    (core.aws.lazy_client), called only for an s3:// location."""
    if location.startswith("s3://"):
        if not urlparse(location).netloc:
            raise ValueError(f"state location {location!r} has no bucket")
        return S3Store(location, s3_client_factory())
    if location.startswith("file://"):
        location = urlparse(location).path
    if "://" in location:
        raise ValueError(f"state location {location!r} must be a local path or an s3:// URI")
    return LocalStore(location)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
