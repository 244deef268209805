"""The AWS operations in a moto server's request recording, and who made them.

moto records every request it serves (MOTO_ENABLE_RECORDING, /moto-api/recorder/*): method, URL, headers and
body, from every process and every SDK (boto3, pyarrow's C++ S3 client, delta-rs). Which operation a request is
follows from its protocol: S3's REST paths (read here, as IAM names them), rest-json paths from botocore's
models (EMR Serverless), the JSON protocol's X-Amz-Target, the query protocol's Action, CBOR's path. Who made it
is the access key id in its signature: each process of a recorded scenario signs with a key that names its
principal (see `labelled_credentials`).
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree

_CREDENTIAL_RE = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")
# A key id that names who made the call: this prefix, then a label such as JOB_PARQUET (who, then which run).
LABEL_PREFIX = "AKIDS3SQS"


@dataclass(frozen=True)
class Call:
    """One AWS operation as made: which service and operation, its identifying parameters, and whose key."""
    access_key: str
    service: str          # the signing name: s3, sqs, sns, kms, sts, emr-serverless, logs, glue, monitoring, ...
    operation: str        # botocore's operation name (S3: HeadObject, GetObject, ListObjectsV2, ...)
    params: dict = field(default_factory=dict, hash=False, compare=False)
    region: str = "us-east-1"

    @property
    def label(self) -> str | None:
        return label_of(self.access_key)


def labelled_credentials(label: str) -> dict[str, str]:
    """Fake credentials whose key id names `label` (upper-case letters, digits, '_'), for a recorded process."""
    if not re.fullmatch(r"[A-Z0-9_]{1,60}", label):
        raise ValueError(f"label {label!r}: upper-case letters, digits and '_' only")
    return {"AWS_ACCESS_KEY_ID": LABEL_PREFIX + label, "AWS_SECRET_ACCESS_KEY": "testing"}


def label_of(access_key: str) -> str | None:
    return access_key[len(LABEL_PREFIX):] if access_key.startswith(LABEL_PREFIX) else None


def parse_recording(path) -> list[Call]:
    """Every AWS operation in a recording file (one JSON request per line); moto's own API is left out."""
    calls = []
    with open(path) as f:
        for line in f:
            if line.strip():
                call = parse_request(json.loads(line))
                if call is not None:
                    calls.append(call)
    return calls


def parse_request(entry: dict) -> Call | None:
    headers = {k.lower(): v for k, v in entry.get("headers", {}).items()}
    url = urlsplit(entry["url"])
    if url.path.startswith("/moto-api"):
        return None
    query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
    auth = headers.get("authorization", "") or query.get("X-Amz-Credential", "").replace("%2F", "/")
    m = _CREDENTIAL_RE.search(auth) or _CREDENTIAL_RE.search("Credential=" + query.get("X-Amz-Credential", ""))
    if not m:
        raise ValueError(f"an unsigned request in the recording: {entry['method']} {entry['url']}")
    access_key, region, service = m.groups()
    body = _body(entry)
    method = entry["method"].upper()
    if service == "s3":
        operation, params = _s3(method, url.path, query, headers, body)
    elif "x-amz-target" in headers:
        operation = headers["x-amz-target"].rsplit(".", 1)[-1]
        params = json.loads(body or b"{}")
    elif url.path.startswith("/service/") and "/operation/" in url.path:  # smithy rpc-v2 (CloudWatch)
        operation, params = url.path.rsplit("/", 1)[-1], {}
    elif method == "POST" and b"Action=" in (body or b""):
        form = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
        operation, params = form.pop("Action"), form
    else:
        operation, params = _rest_json(service, method, url.path, body)
    return Call(access_key, service, operation, params, region)


def _body(entry: dict) -> bytes:
    raw = entry.get("body") or ""
    if entry.get("body_encoded"):
        return base64.b64decode(raw)
    return raw.encode() if isinstance(raw, str) else raw


# --- S3, path-style (as the local endpoint is addressed) ----------------------------------------------

_BUCKET_SUBRESOURCES = {  # (method, query key) -> operation, for requests on a bucket
    ("GET", "list-type"): "ListObjectsV2", ("GET", "versions"): "ListObjectVersions",
    ("GET", "uploads"): "ListMultipartUploads", ("GET", "location"): "GetBucketLocation",
    ("GET", "policy"): "GetBucketPolicy", ("PUT", "policy"): "PutBucketPolicy", ("DELETE", "policy"): "DeleteBucketPolicy",
    ("GET", "tagging"): "GetBucketTagging", ("PUT", "tagging"): "PutBucketTagging",
    ("GET", "encryption"): "GetBucketEncryption", ("PUT", "encryption"): "PutBucketEncryption",
    ("GET", "notification"): "GetBucketNotificationConfiguration",
    ("PUT", "notification"): "PutBucketNotificationConfiguration",
    ("GET", "versioning"): "GetBucketVersioning", ("PUT", "versioning"): "PutBucketVersioning",
    ("GET", "lifecycle"): "GetBucketLifecycleConfiguration", ("PUT", "lifecycle"): "PutBucketLifecycleConfiguration",
    ("PUT", "publicAccessBlock"): "PutPublicAccessBlock", ("GET", "publicAccessBlock"): "GetPublicAccessBlock",
    ("POST", "delete"): "DeleteObjects",
}
_OBJECT_SUBRESOURCES = {
    ("GET", "tagging"): "GetObjectTagging", ("PUT", "tagging"): "PutObjectTagging",
    ("DELETE", "tagging"): "DeleteObjectTagging", ("POST", "uploads"): "CreateMultipartUpload",
    ("GET", "attributes"): "GetObjectAttributes",
}


def _s3(method: str, path: str, query: dict, headers: dict, body: bytes) -> tuple[str, dict]:
    parts = path.lstrip("/").split("/", 1)
    bucket = unquote(parts[0])
    key = unquote(parts[1]) if len(parts) > 1 and parts[1] != "" else None
    params: dict = {"Bucket": bucket, **{k: v for k, v in query.items() if k in (
        "prefix", "delimiter", "max-keys", "versionId", "uploadId", "partNumber", "list-type")}}
    if not bucket:
        return "ListBuckets", {}
    if key is None:
        for (m, sub), op in _BUCKET_SUBRESOURCES.items():
            if method == m and sub in query:
                if op == "DeleteObjects":
                    params["Keys"] = _deleted_keys(body)
                return op, params
        return {"GET": "ListObjects", "HEAD": "HeadBucket", "PUT": "CreateBucket",
                "DELETE": "DeleteBucket"}[method], params
    params["Key"] = key
    for name in ("x-amz-copy-source", "x-amz-tagging", "x-amz-tagging-directive",
                 "x-amz-server-side-encryption", "x-amz-server-side-encryption-aws-kms-key-id"):
        if name in headers:
            params[name] = unquote(headers[name])
    for (m, sub), op in _OBJECT_SUBRESOURCES.items():
        if method == m and sub in query:
            return op, params
    if "uploadId" in query:
        if method == "PUT":
            return ("UploadPartCopy" if "x-amz-copy-source" in headers else "UploadPart"), params
        return {"POST": "CompleteMultipartUpload", "DELETE": "AbortMultipartUpload", "GET": "ListParts"}[method], params
    if method == "PUT" and "x-amz-copy-source" in headers:
        return "CopyObject", params
    return {"GET": "GetObject", "HEAD": "HeadObject", "PUT": "PutObject", "DELETE": "DeleteObject",
            "POST": "PostObject"}[method], params


def _deleted_keys(body: bytes) -> list[dict]:
    root = ElementTree.fromstring(body)
    out = []
    for obj in root.iter():
        if obj.tag.endswith("Object"):
            item = {child.tag.rsplit("}", 1)[-1]: child.text for child in obj}
            out.append({"Key": item.get("Key"), "VersionId": item.get("VersionId")})
    return out


# --- rest-json (EMR Serverless): botocore's own request URIs -----------------------------------------

@lru_cache(maxsize=None)
def _routes(service: str) -> list[tuple[str, re.Pattern, str]]:
    import botocore.session
    model = botocore.session.get_session().get_service_model(service)
    routes = []
    for name in model.operation_names:
        http = model.operation_model(name).http
        uri = http["requestUri"].split("?", 1)[0]
        pattern = re.sub(r"\{(\w+)\+?\}", lambda m: f"(?P<{m.group(1)}>[^/]+)", re.escape(uri).replace(r"\{", "{")
                         .replace(r"\}", "}"))
        routes.append((http["method"], re.compile(f"^{pattern}/?$"), name))
    return routes


def _rest_json(service: str, method: str, path: str, body: bytes) -> tuple[str, dict]:
    for m, pattern, name in _routes(service):
        match = pattern.match(path)
        if m == method and match:
            params = {k: unquote(v) for k, v in match.groupdict().items()}
            if body:
                try:
                    params.update(json.loads(body))
                except ValueError:
                    pass
            return name, params
    raise ValueError(f"no {service} operation answers {method} {path}")
