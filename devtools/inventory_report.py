"""S3 Inventory reports written in AWS's documented layout, for the tests and the benchmark (moto does not
produce them): a manifest.json in a destination bucket naming gzipped CSV, ORC or Parquet data files."""
from __future__ import annotations

import gzip
import io
import json
import uuid
from urllib.parse import quote_plus

import pyarrow as pa

CSV_SCHEMA = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag"
CSV_COLUMNS = [c.strip() for c in CSV_SCHEMA.split(",")]


def csv_body(rows: list[dict]) -> bytes:
    """Rows (dicts keyed by CSV_COLUMNS) as a gzipped CSV data file: every value quoted, keys URL-encoded."""
    def cell(column: str, value) -> str:
        text = quote_plus(str(value), safe="/=") if column == "Key" else str(value)
        return '"' + text.replace('"', '""') + '"'
    return gzip.compress("".join(",".join(cell(c, r[c]) for c in CSV_COLUMNS) + "\n" for r in rows).encode())


def columnar_body(rows: list[dict], fmt: str) -> bytes:
    """The same rows as an ORC or Parquet data file, with the column names and types those reports use."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    modified = pa.array([r["LastModifiedDate"][:19] for r in rows]).cast(pa.timestamp("s")).cast(pa.timestamp("ms"))
    table = pa.table({
        "bucket": [r["Bucket"] for r in rows], "key": [r["Key"] for r in rows],
        "version_id": [r["VersionId"] or None for r in rows], "is_latest": [r["IsLatest"] == "true" for r in rows],
        "is_delete_marker": [r["IsDeleteMarker"] == "true" for r in rows],
        "size": pa.array([int(r["Size"]) for r in rows], pa.int64()), "last_modified_date": modified,
        "e_tag": [r["ETag"] for r in rows]})
    buf = io.BytesIO()
    (pq.write_table if fmt == "Parquet" else orc.write_table)(table, buf)
    return buf.getvalue()


def write_report(s3, source_bucket: str, fmt: str, bodies: list[bytes]) -> str:
    """Put the data files and their manifest into a fresh destination bucket; returns the manifest's URI."""
    dest = f"inv-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=dest)
    suffix = "csv.gz" if fmt == "CSV" else fmt.lower()
    files = []
    for body in bodies:
        key = f"{source_bucket}/daily/data/{uuid.uuid4()}.{suffix}"
        s3.put_object(Bucket=dest, Key=key, Body=body)
        files.append({"key": key, "size": len(body), "MD5checksum": "not-checked"})
    manifest = {"sourceBucket": source_bucket, "destinationBucket": f"arn:aws:s3:::{dest}", "version": "2016-11-30",
                "creationTimestamp": "1795900000000", "fileFormat": fmt, "files": files}
    if fmt == "CSV":
        manifest["fileSchema"] = CSV_SCHEMA
    key = f"{source_bucket}/daily/2026-11-24T01-00Z/manifest.json"
    s3.put_object(Bucket=dest, Key=key, Body=json.dumps(manifest).encode())
    return f"s3://{dest}/{key}"
