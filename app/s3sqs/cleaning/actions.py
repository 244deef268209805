"""The S3 calls that clean one file. Each step can be cut short by a kill, and a rerun finishes it:

- archive: CopyObject to the archive key, on the condition that the source still has the committed eTag
  (x-amz-copy-source-if-match: S3 refuses to copy any other object); then check the copy: its size is the
  committed size, and, for a single-part source (an eTag without "-N"), its eTag is the source's, both being
  the MD5 of the same bytes; a multipart source's eTag is not an MD5, so there the copy condition on the
  source's eTag and the size are the check. Only then delete the source. A kill between the copy and the
  delete leaves both; the rerun copies to the same key again (still one object in the archive), and deletes.
  CopyObject copies up to 5 GiB: a bigger object is copied in parts (UploadPartCopy, each part on the same
  eTag condition), carrying the source's metadata, content headers and tags as CopyObject does. A part that
  fails aborts the upload, so no invisible half copy is left to pay for.
- delete (and the last step of archive): the source is deleted only if it still has the committed eTag; in a
  versioned bucket the exact version read is deleted, so an object written under the key meanwhile stays.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

from ..core.aws import error_code
from ..core.errors import S3SqsError
from .rule import Head, same_etag


class CleanError(S3SqsError):
    """One file could not be cleaned this run (it stays where it is); the message says why."""


class Changed(CleanError):
    """The object is no longer the one the consumers committed."""


_MISSING = ("404", "NoSuchKey", "NotFound")
_CHANGED = ("PreconditionFailed", "412")
SINGLE_COPY_LIMIT = 5 << 30  # the most CopyObject copies
PART_BYTES = 512 << 20       # parts of a bigger copy (more when 10,000 of them would not hold the object)
MAX_PARTS = 10_000
PART_COPIES = 8              # parts copied at once: each is one server-side request
_CARRIED = ("ContentType", "ContentEncoding", "ContentDisposition", "ContentLanguage", "CacheControl", "Expires",
            "Metadata")
log = logging.getLogger(__name__)


def head(s3, bucket: str, key: str, *, strict: bool = False) -> Head | None:
    """The object as it is now, or None when there is none. S3 answers 403, not 404, for a missing key to a
    role without s3:ListBucket (the cleaner's role has none on the source): that counts as missing too, which
    is safe, because nothing is ever deleted on the strength of a missing object. `strict` (before a delete)
    tells the two apart: a 403 there is an error."""
    try:
        r = s3.head_object(Bucket=bucket, Key=key)
    except Exception as e:  # botocore's ClientError: 404 (and 403, see above) is an answer, anything else is not
        code = error_code(e)
        if code in _MISSING or (code in ("403", "Forbidden", "AccessDenied") and not strict):
            return None
        if code in ("403", "Forbidden", "AccessDenied"):
            raise CleanError(f"s3://{bucket}/{key} cannot be read by this role (HTTP 403): left alone") from None
        raise
    return Head(r["ETag"], int(r["ContentLength"]), r.get("VersionId"))


def archive(s3, bucket: str, key: str, obj: Head, to_bucket: str, to_key: str) -> None:
    """Copy, check the copy, then delete the source (see the module's notes)."""
    try:
        if obj.size > SINGLE_COPY_LIMIT:
            copy_in_parts(s3, bucket, key, obj, to_bucket, to_key)
        else:
            s3.copy_object(Bucket=to_bucket, Key=to_key, CopySource={"Bucket": bucket, "Key": key},
                           CopySourceIfMatch=obj.etag, MetadataDirective="COPY")
    except Exception as e:
        if error_code(e) in _CHANGED:
            raise Changed(f"s3://{bucket}/{key} changed before it could be copied: left alone") from None
        raise CleanError(f"copying s3://{bucket}/{key} to s3://{to_bucket}/{to_key} failed: {e}") from e
    copy = head(s3, to_bucket, to_key, strict=True)
    problem = copy_problem(obj, copy)
    if problem:
        raise CleanError(f"the copy s3://{to_bucket}/{to_key} of s3://{bucket}/{key} {problem}: the source is kept")
    delete(s3, bucket, key, obj)


def part_ranges(size: int, part_bytes: int) -> list[tuple[int, int]]:
    """The inclusive byte ranges of a copy in parts: `part_bytes` each, or bigger when MAX_PARTS of them
    would not hold `size`. (Pure.)"""
    step = max(part_bytes, -(-size // MAX_PARTS))
    return [(start, min(start + step, size) - 1) for start in range(0, size, step)]


def copy_in_parts(s3, bucket: str, key: str, obj: Head, to_bucket: str, to_key: str) -> None:
    """A copy of an object too big for CopyObject: a multipart upload of UploadPartCopy ranges."""
    source = s3.head_object(Bucket=bucket, Key=key, IfMatch=obj.etag)
    carried = {k: source[k] for k in _CARRIED if source.get(k)}
    version = {"VersionId": obj.version_id} if obj.version_id else {}
    tags = s3.get_object_tagging(Bucket=bucket, Key=key, **version)["TagSet"]
    if tags:
        carried["Tagging"] = object_tagging(tags)
    upload = s3.create_multipart_upload(Bucket=to_bucket, Key=to_key, **carried)["UploadId"]

    def part(numbered: tuple[int, tuple[int, int]]) -> dict:
        number, (first, last) = numbered
        r = s3.upload_part_copy(Bucket=to_bucket, Key=to_key, UploadId=upload, PartNumber=number,
                                CopySource={"Bucket": bucket, "Key": key}, CopySourceIfMatch=obj.etag,
                                CopySourceRange=f"bytes={first}-{last}")
        return {"PartNumber": number, "ETag": r["CopyPartResult"]["ETag"]}
    pool = ThreadPoolExecutor(max_workers=PART_COPIES)
    try:
        parts = list(pool.map(part, enumerate(part_ranges(obj.size, PART_BYTES), start=1)))
        s3.complete_multipart_upload(Bucket=to_bucket, Key=to_key, UploadId=upload, MultipartUpload={"Parts": parts})
    except BaseException:
        pool.shutdown(cancel_futures=True)  # the parts not started yet are not copied for nothing
        try:
            s3.abort_multipart_upload(Bucket=to_bucket, Key=to_key, UploadId=upload)
        except Exception as e:  # the copy's own error is the one to raise; this one is said, not lost
            log.warning("could not abort the multipart copy %s of s3://%s/%s (its parts stay until the bucket's "
                        "lifecycle aborts incomplete uploads): %s", upload, to_bucket, to_key, e)
        raise
    finally:
        pool.shutdown()


def object_tagging(tags: list[dict]) -> str:
    """A TagSet as the Tagging parameter of an upload takes it: URL query parameters. (Pure.)"""
    return urlencode([(t["Key"], t["Value"]) for t in tags])


def copy_problem(source: Head, copy: Head | None) -> str | None:
    """Why the copy does not prove the archive holds the source's bytes, or None. (Pure.)"""
    if copy is None:
        return "is not there"
    if copy.size != source.size:
        return f"has {copy.size} bytes, the source {source.size}"
    if "-" not in source.etag and not same_etag(copy.etag, source.etag):
        return f"has eTag {copy.etag}, the source {source.etag}"
    return None


def delete(s3, bucket: str, key: str, obj: Head) -> None:
    """Delete the source object, only while it is still the one committed."""
    now = head(s3, bucket, key, strict=True)
    if now is None:
        return  # already gone (a rerun after a kill that came after the delete)
    if not same_etag(now.etag, obj.etag):
        raise Changed(f"s3://{bucket}/{key} changed before it could be deleted: left alone")
    kwargs = {"VersionId": now.version_id} if now.version_id and now.version_id != "null" else {}
    s3.delete_object(Bucket=bucket, Key=key, **kwargs)
