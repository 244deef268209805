"""submit-job's upload of dist/ against a moto server, through the fault proxy: a HEAD answered 403 (S3's answer
for a missing key to an operator without s3:ListBucket on the artifacts bucket) cannot say whether the artifact is
there, so it is uploaded (its key is its content's digest: uploading again is harmless); other errors stay fatal."""
from __future__ import annotations

import hashlib
import io
import uuid

import boto3
import pytest

from devtools.fault_proxy import FaultProxy, Faults
from ops import aws
from ops.emr import SubmitError
from ops.emr import aws as emr_aws
from ops.emr.request import artifact_locations
from tests.ops.conftest import REGION


@pytest.fixture
def dist(tmp_path, moto_endpoint):
    """Two small artifacts and where they go, in an empty bucket of their own."""
    bucket = f"artifacts-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION).create_bucket(Bucket=bucket)
    artifacts = {}
    for name, body in (("job.py", b"print('job')\n"), ("s3sqs.zip", b"PK\x05\x06" + bytes(18))):
        (tmp_path / name).write_bytes(body)
        artifacts[name] = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    manifest = {"artifacts": artifacts}
    return tmp_path, manifest, artifact_locations(manifest, bucket, "jobs/analytics/")


def _heads(method: str, path: str) -> bool:
    return method == "HEAD" and path.startswith("/artifacts-")


def test_a_head_answered_403_says_it_cannot_tell_and_uploads(moto_endpoint, dist):
    folder, manifest, locations = dist
    direct = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION)
    for attempt in range(2):  # nothing there yet, then everything there: a 403 cannot tell the two apart
        with FaultProxy(moto_endpoint, Faults(), deny=_heads) as proxy:
            _, _, s3 = emr_aws.session_clients(REGION, proxy.endpoint_url)
            out = io.StringIO()
            assert emr_aws.upload_artifacts(s3, folder, manifest, locations, out) == ["job.py", "s3sqs.zip"]
            assert proxy.injected["denied"] == 2  # one HEAD each, not retried
        lines = out.getvalue().splitlines()
        assert lines[0] == (f"  job.py: cannot tell whether it is at {locations.uri('job.py')} (HEAD answered 403: "
                            "no s3:ListBucket or s3:GetObject there); uploading it, which is harmless: its key is its "
                            "content's digest")
        assert lines[1].startswith(f"  job.py: uploading 13 B to {locations.uri('job.py')}")
        assert len(lines) == 4, lines
        for name, meta in manifest["artifacts"].items():
            got = direct.get_object(Bucket=locations.bucket, Key=locations.keys[name])
            assert hashlib.sha256(got["Body"].read()).hexdigest() == meta["sha256"]
            assert got["Metadata"] == {"sha256": meta["sha256"]}
    # A HEAD that answers says they are there: nothing is uploaded.
    _, _, s3 = emr_aws.session_clients(REGION, moto_endpoint)
    out = io.StringIO()
    assert emr_aws.upload_artifacts(s3, folder, manifest, locations, out) == []
    assert "already at" in out.getvalue() and "uploading" not in out.getvalue()


def test_other_errors_of_the_head_stay_fatal(moto_endpoint, dist):
    folder, manifest, locations = dist
    with FaultProxy(moto_endpoint, Faults(slow_down=1.0), applies=_heads) as proxy:
        s3 = aws.client(aws.session(REGION), "s3", proxy.endpoint_url, max_attempts=1)
        with pytest.raises(SubmitError, match=rf"^cannot read s3://{locations.bucket}/jobs/analytics/\w+/job.py: .*\(503\)"):
            emr_aws.upload_artifacts(s3, folder, manifest, locations, io.StringIO())
    listed = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION).list_objects_v2(Bucket=locations.bucket)
    assert listed.get("KeyCount", 0) == 0  # nothing uploaded
