"""Listing the files already under a prefix, page by page, as file records: the backfill's input.

S3 listings come 1,000 keys a page; a local directory (`file://`, for tests and benchmarks) is walked in
pages of the same size. A listed file is what S3 would have announced: bucket, key, size, eTag (without
S3's quotes, as notifications give it) and, as its event time, when it was last modified.
"""
from __future__ import annotations

import os
from typing import Iterator
from urllib.parse import urlparse

from ..core.files import LISTED, S3File
from ..core.units import to_ms

PAGE = 1000


def list_pages(base_path: str, s3_client_factory) -> Iterator[list[S3File]]:
    if base_path.startswith("file://"):
        yield from _local_pages(urlparse(base_path).path)
        return
    u = urlparse(base_path)
    paginator = s3_client_factory().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=u.netloc, Prefix=u.path.lstrip("/"), PaginationConfig={"PageSize": PAGE}):
        files = [S3File(u.netloc, o["Key"], size=o.get("Size"), etag=(o.get("ETag") or "").strip('"') or None,
                        event_ms=to_ms(o["LastModified"]), event_name=LISTED)
                 for o in page.get("Contents", []) if not o["Key"].endswith("/")]
        if files:
            yield files


def _local_pages(root: str) -> Iterator[list[S3File]]:
    page: list[S3File] = []
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            st = os.stat(path)
            page.append(S3File("", path.lstrip("/"), size=st.st_size, event_ms=int(st.st_mtime * 1000),
                               event_name=LISTED, scheme="file"))
            if len(page) == PAGE:
                yield page
                page = []
    if page:
        yield page
