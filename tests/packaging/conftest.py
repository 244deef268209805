"""Fixtures for the packaging and submission tests: one real build per session, and AWS on moto."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import boto3
import pytest

from ops import packaging

ACCOUNT = "123456789012"
REGION = "us-east-1"


def local_python_home(version: str) -> str:
    """Where the archive's bin/python should point for a local run: the system interpreter when it
    exists (as on EMR, /usr/bin), else the directory of the interpreter running the tests."""
    if Path(f"/usr/bin/python{version}").exists():
        return "/usr/bin"
    return str(Path(os.path.realpath(sys.executable)).parent)


@pytest.fixture(scope="session")
def local_target() -> packaging.Target:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return packaging.Target(python=version, arch=packaging.host_arch(), python_home=local_python_home(version))


@pytest.fixture(scope="session")
def built_dist(tmp_path_factory, local_target) -> packaging.BuildResult:
    """dist/ for this machine's Python and CPU, built once per session (wheels cached under build/)."""
    return packaging.build(local_target, dist=tmp_path_factory.mktemp("dist"))


def clients(endpoint: str):
    kw = dict(region_name=REGION, endpoint_url=endpoint)
    return {name: boto3.client(name, **kw) for name in ("s3", "sqs", "emr-serverless", "logs", "iam")}


def make_stack(endpoint: str, suffix: str, architecture: str = "X86_64", consumers=("analytics",)) -> dict:
    """The resources submit-job touches, on the moto server, and the outputs `cdk deploy` would write."""
    c = clients(endpoint)
    artifacts, checkpoints = f"artifacts-{suffix}", f"checkpoints-{suffix}"
    for b in (artifacts, checkpoints, f"source-{suffix}"):
        c["s3"].create_bucket(Bucket=b)
    log_group = f"/s3sqs/{suffix}"
    c["logs"].create_log_group(logGroupName=log_group)
    app = c["emr-serverless"].create_application(
        name=f"s3sqs-{suffix}", releaseLabel="emr-spark-8.0.0", type="SPARK", architecture=architecture,
    )
    consumer_out = {}
    for name in consumers:
        q = c["sqs"].create_queue(QueueName=f"{name}-{suffix}")["QueueUrl"]
        dlq = c["sqs"].create_queue(QueueName=f"{name}-{suffix}-dlq")["QueueUrl"]
        role = c["iam"].create_role(RoleName=f"job-{name}-{suffix}", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "emr-serverless.amazonaws.com"}}]}))
        consumer_out[name] = {
            "queueUrl": q, "queueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}-{suffix}",
            "dlqUrl": dlq, "dlqArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}-{suffix}-dlq",
            "jobRoleArn": role["Role"]["Arn"], "prefix": f"{name}/",
            "checkpointUri": f"s3://{checkpoints}/checkpoints/{name}/",
            "outputUri": f"s3://{checkpoints}/output/{name}/",
        }
    return {
        "EmrApplicationId": app["applicationId"],
        "ArtifactsBucketName": artifacts,
        "CheckpointBucketName": checkpoints,
        "SourceBucketName": f"source-{suffix}",
        "LogGroupName": log_group,
        "Consumers": json.dumps(consumer_out),
    }


def write_outputs(path: Path, outputs: dict, stack: str = "S3SqsStack") -> Path:
    path.write_text(json.dumps({stack: outputs}, indent=2))
    return path
