"""What each deploy shape must refuse, evaluated as AWS would: another consumer's queue, prefixes, checkpoint and
key context; anonymous callers; unrelated roles in either account; AWS services acting for another resource;
plain HTTP. Every cell must come out denied (the SSL-only cells explicitly denied)."""
from __future__ import annotations

import json

import pytest

from devtools.iam.actions import Need, via_context
from devtools.iam.evaluator import evaluate
from devtools.iam.world import ANONYMOUS, Principal, World, role_principal
from tests.iam.contract import external_readers, operator
from tests.iam.shapes import ARCHIVE_BUCKET, KEY_PREFIX, OTHER_ACCOUNT, SHAPES, SUBJECT

ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
ASSUME_ANY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}]}


def service(name: str) -> Principal:
    return Principal(name, name, None, ())


def cells(w: World, shape: dict) -> list[tuple[Principal, Need, str, str]]:
    """(who, what, why it must be refused, the result required: "denied" or "explicit")."""
    consumers = json.loads(w.outputs["Consumers"])
    c, others = consumers[SUBJECT], {n: v for n, v in consumers.items() if n != SUBJECT}
    ckpt, src = w.outputs["CheckpointBucketName"], w.outputs["SourceBucketName"]
    artifacts, key = w.outputs["ArtifactsBucketName"], w.outputs.get("KmsKeyArn")
    job = w.job_role(SUBJECT)
    out: list[tuple[Principal, Need, str, str]] = []

    def deny(who, action, resource, why, context=(), result="denied"):
        out.append((who, Need(action, resource, tuple(context)), why, result))

    for name, o in others.items():
        deny(job, "sqs:ReceiveMessage", o["queueArn"], f"another consumer's ({name}) queue")
        deny(job, "sqs:DeleteMessage", o["queueArn"], f"another consumer's ({name}) queue")
        deny(job, "s3:GetObject", f"arn:aws:s3:::{ckpt}/checkpoints/{name}/source-state/versions/1.json",
             f"{name}'s checkpoint")
        deny(job, "s3:PutObject", f"arn:aws:s3:::{ckpt}/output/{name}/part-0.parquet", f"{name}'s output")
        deny(job, "s3:ListBucket", f"arn:aws:s3:::{ckpt}", f"listing {name}'s checkpoint",
             [("s3:prefix", f"checkpoints/{name}/")])
        deny(job, "s3:GetObject", f"arn:aws:s3:::{artifacts}/jobs/{name}/0123/job.py", f"{name}'s job code")
        deny(job, "logs:PutLogEvents", f"arn:aws:logs:{w.region}:{w.account}:log-group:{o['logGroupName']}"
             ":log-stream:x", f"{name}'s log group")
        if c["prefix"] and not o["prefix"].startswith(c["prefix"]):
            deny(job, "s3:GetObject", f"arn:aws:s3:::{src}/{o['prefix']}x.csv", f"{name}'s source prefix")
            deny(job, "s3:ListBucket", f"arn:aws:s3:::{src}", f"listing {name}'s source prefix",
                 [("s3:prefix", o["prefix"])])
        if key:
            deny(job, "kms:Decrypt", key, f"the key through SQS for {name}'s queue",
                 via_context("sqs", w.region, "aws:sqs:arn", o["queueArn"]))
        for reader in external_readers(w, shape):
            deny(reader, "sqs:ReceiveMessage", o["queueArn"], f"{name}'s queue, for ingest's reader")
            if c["prefix"] and not o["prefix"].startswith(c["prefix"]):
                deny(reader, "s3:GetObject", f"arn:aws:s3:::{src}/{o['prefix']}x.csv",
                     f"{name}'s objects, for ingest's reader")
    # The consumer's own prefixes, listed without their "/", would list every consumer whose name starts so.
    deny(job, "s3:ListBucket", f"arn:aws:s3:::{ckpt}", "checkpoints/ingest without '/' (ingest-v2 too)",
         [("s3:prefix", f"checkpoints/{SUBJECT}")])
    deny(job, "s3:ListBucket", f"arn:aws:s3:::{ckpt}", "the whole checkpoints/ folder", [("s3:prefix", "checkpoints/")])
    deny(job, "s3:DeleteObject", f"arn:aws:s3:::{src}/{KEY_PREFIX}a.csv", "deleting a source file")
    deny(job, "s3:PutObject", f"arn:aws:s3:::{src}/{KEY_PREFIX}a.csv", "writing the source bucket")
    deny(job, "sqs:ReceiveMessage", c["dlqArn"], "its own dead-letter queue (the operator redrives it)")
    if key:
        deny(job, "kms:Decrypt", key, "the key outside S3 and SQS")
        deny(job, "kms:Decrypt", key, "the key through SQS for its dead-letter queue",
             via_context("sqs", w.region, "aws:sqs:arn", c["dlqArn"]))
    for reader in external_readers(w, shape):
        deny(reader, "s3:ListBucket", f"arn:aws:s3:::{src}", "listing the source bucket from another account",
             [("s3:prefix", c["prefix"])])
        if key:
            deny(reader, "kms:Decrypt", key, "the key outside SQS, from another account")
    # Callers with no grant: anonymous, unrelated roles of either account.
    anonymous = Principal("anonymous", ANONYMOUS, None, ())
    stranger = role_principal("unrelated admin role of another account",
                              f"arn:aws:iam::{OTHER_ACCOUNT}:role/not-a-reader", [ADMIN])
    local = role_principal("unrelated role of the account", f"arn:aws:iam::{w.account}:role/unrelated", [])
    local_assumer = role_principal("a role of the account that may assume any role",
                                   f"arn:aws:iam::{w.account}:role/assumes-anything", [ASSUME_ANY])
    for who in (anonymous, stranger, local):
        deny(who, "s3:GetObject", f"arn:aws:s3:::{src}/{KEY_PREFIX}a.csv", "a source object")
        deny(who, "sqs:ReceiveMessage", c["queueArn"], "the consumer's queue")
        deny(who, "sns:Publish", w.outputs["TopicArn"], "the fan-out topic")
        if key:
            deny(who, "kms:Decrypt", key, "the stack key through SQS",
                 via_context("sqs", w.region, "aws:sqs:arn", c["queueArn"]))
    for who in (stranger, local_assumer):
        deny(who, "sts:AssumeRole", c["jobRoleArn"], "the job role")
        if "SourceCleaning" in w.outputs:
            deny(who, "sts:AssumeRole", json.loads(w.outputs["SourceCleaning"])["roleArn"], "the source cleaner's role")
    # AWS services acting for another resource.
    other_topic = f"arn:aws:sns:{w.region}:{w.account}:another-topic"
    deny(service("sns.amazonaws.com"), "sqs:SendMessage", c["queueArn"], "delivery from another topic",
         [("aws:SourceArn", other_topic)])
    deny(service("s3.amazonaws.com"), "sns:Publish", w.outputs["TopicArn"], "notifications of another bucket",
         [("aws:SourceArn", "arn:aws:s3:::another-bucket"), ("aws:SourceAccount", w.account)])
    deny(service("s3.amazonaws.com"), "sns:Publish", w.outputs["TopicArn"], "notifications from another account",
         [("aws:SourceArn", f"arn:aws:s3:::{src}"), ("aws:SourceAccount", OTHER_ACCOUNT)])
    deny(service("emr-serverless.amazonaws.com"), "sts:AssumeRole", c["jobRoleArn"], "another application's run",
         [("aws:SourceArn", f"arn:aws:emr-serverless:{w.region}:{w.account}:/applications/another"),
          ("aws:SourceAccount", w.account)])
    deny(service("cloudwatch.amazonaws.com"), "sns:Publish", w.outputs["AlarmTopicArn"], "another stack's alarm",
         [("aws:SourceArn", f"arn:aws:cloudwatch:{w.region}:{w.account}:alarm:another-stack-alarm"),
          ("aws:SourceAccount", w.account)])
    if key:
        deny(service(f"logs.{w.region}.amazonaws.com"), "kms:GenerateDataKey", key, "another log group",
             [("kms:EncryptionContext:aws:logs:arn", f"arn:aws:logs:{w.region}:{w.account}:log-group:another")])
    cleaning = json.loads(w.outputs.get("SourceCleaning", "{}"))
    if cleaning and "schedule" not in cleaning:
        deny(service("lambda.amazonaws.com"), "sts:AssumeRole", cleaning["roleArn"], "Lambda, with no schedule")
    if cleaning:
        cleaner = w.cleaner_role()
        if all(o["prefix"] for o in consumers.values()):  # else some consumer reads (and is cleaned of) it all
            deny(cleaner, "s3:DeleteObject", f"arn:aws:s3:::{src}/unread/x.csv", "a key no consumer reads")
        deny(cleaner, "s3:PutObject", f"arn:aws:s3:::{ARCHIVE_BUCKET}/elsewhere/x.csv", "outside the archive prefix")
        deny(cleaner, "s3:DeleteObject", f"arn:aws:s3:::{ckpt}/checkpoints/{SUBJECT}/source-state/x",
             "a consumer's state")
    # The operator: job roles pass to EMR Serverless only; no source data, no consumer state written.
    op = operator(w)
    deny(op, "iam:PassRole", c["jobRoleArn"], "a job role passed to another service",
         [("iam:PassedToService", "glue.amazonaws.com")])
    deny(op, "s3:DeleteObject", f"arn:aws:s3:::{src}/{KEY_PREFIX}a.csv", "a source file")
    deny(op, "s3:PutObject", f"arn:aws:s3:::{ckpt}/checkpoints/{SUBJECT}/source-state/x", "a consumer's state")
    # Plain HTTP is refused outright, even to whom the policies allow.
    http = [("aws:SecureTransport", "false")]
    deny(job, "s3:GetObject", f"arn:aws:s3:::{src}/{KEY_PREFIX}a.csv", "a source object over HTTP", http, "explicit")
    deny(job, "sqs:ReceiveMessage", c["queueArn"], "the queue over HTTP", http, "explicit")
    for action in ("sns:Publish", "sns:Subscribe", "sns:GetTopicAttributes"):
        deny(service("s3.amazonaws.com") if action == "sns:Publish" else local, action, w.outputs["TopicArn"],
             f"{action} over HTTP", [*http, ("aws:SourceArn", f"arn:aws:s3:::{src}"), ("aws:SourceAccount", w.account)]
             if action == "sns:Publish" else http, "explicit")
    return out


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_cell_of_the_access_matrix_is_refused(shape, worlds):
    w = worlds[shape]
    matrix = cells(w, SHAPES[shape])
    decisions = evaluate([w.request(who, need, why) for who, need, why, _ in matrix])
    wrong = [f"  {d.result} (wanted {want}): {who.name} {need.action} {need.resource} {dict(need.context)} -- {why}"
             for d, (who, need, why, want) in zip(decisions, matrix)
             if d.allowed or (want == "explicit" and d.result != "ExplicitlyDenied")]
    print(f"\n{shape}: {len(matrix)} cells")
    assert not wrong, f"{len(wrong)} of {len(matrix)} cells not refused in {shape}:\n" + "\n".join(wrong)
    assert len(matrix) > 30
