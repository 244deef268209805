"""The recorded calls, as each deploy shape's principals would make them, and what AWS does for the product
without the code calling it (modelled here, each named): EMR Serverless assuming the job role and writing its
logs, EMRFS keeping Spark's checkpoint and file sink, S3, SNS and CloudWatch delivering to each other, and
CloudWatch Logs encrypting the stack's log groups.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from devtools.iam.actions import Need, needs_of
from devtools.iam.calls import Call
from devtools.iam.evaluator import IamRequest
from devtools.iam.world import Principal, World, names_of, role_principal, translate, translation
from ops.onboarding.policy import consumer_role_policy
from tests.iam.scenario import CLEANER, JOB, ONBOARDER, OPERATOR, Recording
from infra import STACK_NAME
from infra.contract import alarm_name, cleaner_log_group_name
from tests.iam.shapes import ARCHIVE_BUCKET, GLUE_DATABASE, OPERATOR_ROLE, SUBJECT

ROOT = Path(__file__).resolve().parents[2]
# Where the operations docs list what onboard-account calls: the data owner's administrator grants exactly that.
OPERATIONS_DOC = ROOT / "docs" / "operations.md"


@dataclass
class Evaluation:
    """What one shape is asked: each request with the policies that decide it, and what was left out, why."""
    batch: list[tuple[IamRequest, dict]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    by_principal: dict[str, int] = field(default_factory=dict)
    _seen: set = field(default_factory=set)

    def add(self, world: World, who: Principal, need: Need, why: str) -> None:
        req, sim = world.request(who, need, why)
        if req.key() in self._seen:
            return
        self._seen.add(req.key())
        self.batch.append((req, sim))
        self.by_principal[who.name] = self.by_principal.get(who.name, 0) + 1

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def operator(world: World) -> Principal:
    arn = f"arn:aws:iam::{world.account}:role/{OPERATOR_ROLE}"
    return role_principal("operator (OperatorPolicy)", arn, [world.managed_policy("OperatorPolicy")])


def doc_actions(cell: str) -> list[str]:
    """The IAM actions a docs table cell names: `s3:GetObject`, `PutObject` (the service carries on)."""
    actions, service = [], None
    for word in re.findall(r"`([^`]+)`", cell):
        if re.fullmatch(r"[a-z0-9-]+:[A-Za-z*]+", word):
            service, word = word.split(":", 1)
        elif not re.fullmatch(r"[A-Z][A-Za-z]+", word) or service is None:
            continue
        actions.append(f"{service}:{word}")
    return actions


def tool_actions(tool: str, doc: Path = OPERATIONS_DOC) -> list[str]:
    """The actions docs/operations.md's "What each tool calls" gives `tool`."""
    row = next(line for line in doc.read_text().splitlines() if line.startswith(f"| `{tool}` |"))
    return doc_actions(row.split("|")[2])


def onboarding_actions() -> list[str]:
    return tool_actions("onboard-account")


def onboarder(world: World) -> Principal:
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": onboarding_actions(),
                                                      "Resource": "*"}]}
    return role_principal("onboarding administrator (docs)", f"arn:aws:iam::{world.account}:role/data-owner-admin",
                          [policy])


def external_readers(world: World, shape: dict) -> list[Principal]:
    """The principals cdk.json grants `ingest` in its own account, with the role policy onboard-account prints
    for them (what a consumer attaches on its side)."""
    consumers = {c["name"]: c for c in shape.get("consumers", [])}
    config = consumers.get(SUBJECT)
    if config is None:  # the shape keeps cdk.json's consumers: read them from the published statements
        from infra.app import cdk_json_context
        config = {c["name"]: c for c in cdk_json_context()["consumers"]}[SUBJECT]
    account = config.get("accountId")
    if not account:
        return []
    c = world.consumer(SUBJECT)
    policy = consumer_role_policy(partition="aws", buckets=[world.outputs["SourceBucketName"]],
                                  prefixes=[c["prefix"]], queue_arn=c["queueArn"],
                                  kms_key_arn=world.outputs.get("KmsKeyArn"))
    org = config.get("accountAccess", {}).get("principalOrgId")
    return [role_principal(f"reader of {SUBJECT} in {account}", f"arn:aws:iam::{account}:role/{SUBJECT}-reader",
                           [policy], org_id=org)]


def _streams(need: Need, world: World) -> bool:
    """What a consumer in another account does with the stack's resources: read its queue and the objects it
    announces (a backfill's listing is not granted across accounts)."""
    c = world.consumer(SUBJECT)
    if need.action.startswith("sqs:"):
        return need.resource == c["queueArn"]
    if need.action in ("s3:GetObject", "s3:GetObjectVersion"):
        return need.resource.startswith(f"arn:aws:s3:::{world.outputs['SourceBucketName']}/")
    if need.action.startswith("kms:"):
        context = dict(need.context)
        return context.get("kms:EncryptionContext:aws:sqs:arn") == c["queueArn"] or context.get(
            "kms:EncryptionContext:aws:s3:arn") == f"arn:aws:s3:::{world.outputs['SourceBucketName']}"
    return False


def applicable(what: str, src: World, dst: World) -> str | None:
    """Why a recorded run does not happen in `dst` (None: it does)."""
    dst_ingest = dst.consumer(SUBJECT) if SUBJECT in json.loads(dst.outputs["Consumers"]) else None
    if "iceberg" in what and (dst_ingest or {}).get("icebergGlueDatabase") != GLUE_DATABASE:
        return "Iceberg in Glue: ingest has no icebergGlueDatabase here (submit-job refuses the sink)"
    if what.startswith(("source-state clean", "scheduled source cleaner")) and "SourceCleaning" not in dst.outputs:
        return "source cleaning is off here"
    return None


def principals(kind: str, dst: World) -> list[Principal]:
    """Who makes a kind of process's calls in `dst` (none: not evaluated, such as the harness's uploads)."""
    if kind == JOB:
        return [dst.job_role(SUBJECT)]
    if kind == OPERATOR:
        return [operator(dst)]
    if kind == CLEANER:
        cleaner = dst.cleaner_role()
        return [cleaner] if cleaner else []
    if kind == ONBOARDER:
        return [onboarder(dst)]
    return []


def recorded(ev: Evaluation, rec: Recording, src: World, dst: World, shape: dict) -> None:
    """Every recorded call, translated into `dst`, for the principal its process plays there."""
    pairs = translation(src, dst)
    foreign = names_of(src) - set(pairs) - names_of(dst)
    archive = json.loads(dst.outputs.get("SourceCleaning", "{}")).get("sourceArchiveLocation")
    readers = external_readers(dst, shape)
    for what, label in rec.runs.items():
        kind = rec.kind(what)
        reason = applicable(what, src, dst)
        calls = rec.of(what)
        if reason:
            ev.skip(f"{what}: {reason}")
            continue
        who = principals(kind, dst)
        if not who:
            continue
        for call in calls:
            params = translate(call.params, pairs)
            text = json.dumps(params)
            if any(name in text for name in foreign):
                ev.skip(f"{what}: names a resource this shape does not have")
                continue
            if kind == CLEANER and ARCHIVE_BUCKET in text and not archive:
                ev.skip(f"{what}: copies into the archive, and this shape deletes")
                continue
            call = Call(call.access_key, call.service, call.operation, params, call.region)
            for need in needs_of(call, dst):
                for p in who:
                    ev.add(dst, p, need, f"{what}: {call.service} {call.operation}")
                if kind == JOB:
                    for reader in readers:
                        if _streams(need, dst):
                            ev.add(dst, reader, need, f"{what} (from {reader.account}): {call.operation}")


# --- what the code calls on paths the scenario cannot take ------------------------------------------------

def _unrecorded_calls(dst: World) -> dict[tuple[str, str], tuple[str, Call | None]]:
    """(who, operation) -> (why the scenario does not make it, the call as the code would make it in `dst`, or
    None where `dst` has no such path)."""
    c = dst.consumer(SUBJECT)
    source, ckpt = dst.outputs["SourceBucketName"], dst.outputs["CheckpointBucketName"]
    archive = json.loads(dst.outputs.get("SourceCleaning", "{}")).get("sourceArchiveLocation")
    big = f"{c['prefix'] or 'ingest/'}big.csv"

    def s3(op: str, bucket: str, key: str | None = None, **more) -> Call:
        return Call("", "s3", op, {"Bucket": bucket, **({"Key": key} if key else {}), **more}, dst.region)

    copy = {}
    if archive:
        a_bucket, a_prefix = archive[len("s3://"):].split("/", 1)
        a_key = f"{a_prefix}{big}"
        why = "an archive copy in parts: only objects over 5 GiB"
        copy = {(CLEANER, "CreateMultipartUpload"): (why, s3("CreateMultipartUpload", a_bucket, a_key)),
                (CLEANER, "UploadPartCopy"): (why, s3("UploadPartCopy", a_bucket, a_key, uploadId="u",
                                                      **{"x-amz-copy-source": f"{source}/{big}"})),
                (CLEANER, "CompleteMultipartUpload"): (why, s3("CompleteMultipartUpload", a_bucket, a_key, uploadId="u")),
                (CLEANER, "AbortMultipartUpload"): ("a failed copy in parts", s3("AbortMultipartUpload", a_bucket,
                                                                                  a_key, uploadId="u")),
                (CLEANER, "GetObjectTagging"): ("the tags a copy in parts carries over", s3("GetObjectTagging",
                                                                                              source, big))}
    topic = dst.outputs["TopicArn"]
    return {
        **copy,
        (JOB, "ChangeMessageVisibilityBatch"): ("visibility extended: only for a batch longer than its messages' "
                                                "visibility timeout", Call("", "sqs", "ChangeMessageVisibilityBatch",
                                                                           {"QueueUrl": c["queueUrl"]}, dst.region)),
        (JOB, "DeleteObjects"): ("snapshots pruned: only after many batches", s3(
            "DeleteObjects", ckpt, Keys=[{"Key": f"{c['checkpointUri'].split('/', 3)[3]}source-state/sst/1.sst"}])),
        (ONBOARDER, "DeleteBucketPolicy"): ("a revoke that empties a bucket policy", s3("DeleteBucketPolicy",
                                                                                          source)),
        (ONBOARDER, "SetTopicAttributes"): ("a revoke of an earlier version's sns:Subscribe grant", Call(
            "", "sns", "SetTopicAttributes", {"TopicArn": topic}, dst.region)),
        (ONBOARDER, "SetSubscriptionAttributes"): ("a grant of more prefixes to a subscription made before", Call(
            "", "sns", "SetSubscriptionAttributes", {"SubscriptionArn": f"{topic}:0000"}, dst.region)),
        (OPERATOR, "StartMessageMoveTask"): ("moto answers 500 to it; redrive-dlq falls back to receive and send",
                                             Call("", "sqs", "StartMessageMoveTask", {"SourceArn": c["dlqArn"]},
                                                  dst.region)),
        (OPERATOR, "GetDashboardForJobRun"): ("moto does not serve it (job-runs show --dashboard)", Call(
            "", "emr-serverless", "GetDashboardForJobRun", {"applicationId": dst.outputs["EmrApplicationId"],
                                                             "jobRunId": "run"}, dst.region)),
    }


def unrecorded(ev: Evaluation, dst: World) -> None:
    for (kind, op), (why, call) in _unrecorded_calls(dst).items():
        for need in needs_of(call, dst):
            for p in principals(kind, dst):
                ev.add(dst, p, need, f"not recorded ({why}): {call.service} {op}")


def unrecorded_operations(world: World) -> dict[tuple[str, str], str]:
    """(who, operation) -> why the scenario does not make it: for the coverage test."""
    return {k: why for k, (why, _) in _unrecorded_calls(world).items()}


# --- what AWS does for the product, not recorded here ------------------------------------------------------

def _service(name: str) -> Principal:
    return Principal(name, name, None, ())


def modelled(ev: Evaluation, dst: World) -> None:
    acct, region = dst.account, dst.region
    c = dst.consumer(SUBJECT)
    app = f"arn:aws:emr-serverless:{region}:{acct}:/applications/{dst.outputs['EmrApplicationId']}"
    job = dst.job_role(SUBJECT)
    checkpoint = c["checkpointUri"][len("s3://"):].split("/", 1)
    artifacts = c["artifactsUri"][len("s3://"):].split("/", 1)
    logs_uri = c["logUri"][len("s3://"):].split("/", 1)
    emr = "EMR Serverless for the job role"
    ev.add(dst, _service("emr-serverless.amazonaws.com"), Need("sts:AssumeRole", c["jobRoleArn"], (
        ("aws:SourceArn", app), ("aws:SourceAccount", acct))), f"{emr}: assumes it for a run")
    group = f"arn:aws:logs:{region}:{acct}:log-group:{c['logGroupName']}"
    for action, resource in (("logs:DescribeLogGroups", f"arn:aws:logs:{region}:{acct}:log-group:*"),
                             ("logs:CreateLogStream", f"{group}:log-stream:{SUBJECT}/driver/stdout"),
                             ("logs:DescribeLogStreams", group),
                             ("logs:PutLogEvents", f"{group}:log-stream:{SUBJECT}/driver/stdout")):
        ev.add(dst, job, Need(action, resource), f"{emr}: the run's logs and EMF metrics")
    s3_calls = [  # (operation, bucket, key or prefix, why)
        ("GetObject", artifacts[0], f"{artifacts[1]}0123456789abcdef/job.py", "reads the run's code"),
        ("PutObject", logs_uri[0], f"{logs_uri[1]}applications/x/jobs/y/SPARK_DRIVER/stdout.gz", "writes run logs"),
        ("PutObject", checkpoint[0], f"{checkpoint[1]}offsets/0", "EMRFS: Spark's checkpoint"),
        ("GetObject", checkpoint[0], f"{checkpoint[1]}commits/0", "EMRFS: Spark's checkpoint"),
        ("DeleteObject", checkpoint[0], f"{checkpoint[1]}offsets/.0.tmp", "EMRFS: Spark's checkpoint"),
        ("ListObjectsV2", checkpoint[0], checkpoint[1], "EMRFS: Spark's checkpoint"),
        ("PutObject", checkpoint[0], c["outputUri"].split("/", 3)[3] + "_spark_metadata/0", "EMRFS: Spark's file sink"),
        ("ListObjectsV2", checkpoint[0], c["outputUri"].split("/", 3)[3], "EMRFS: Spark's file sink"),
    ]
    for op, bucket, key, why in s3_calls:
        params = {"Bucket": bucket, "prefix": key, "delimiter": "/"} if op.startswith("List") else {
            "Bucket": bucket, "Key": key}
        for need in needs_of(Call("", "s3", op, params, region), dst):
            ev.add(dst, job, need, f"{emr}: {why}")
    # S3 -> the fan-out topic -> each queue, and the alarms -> the alarm topic: the services' own requests.
    topic, source = dst.outputs["TopicArn"], f"arn:aws:s3:::{dst.outputs['SourceBucketName']}"
    delivery = [(_service("s3.amazonaws.com"), topic, (("aws:SourceArn", source), ("aws:SourceAccount", acct)),
                 "sns:Publish", "S3 notifies the fan-out topic")]
    for name, consumer in json.loads(dst.outputs["Consumers"]).items():
        delivery.append((_service("sns.amazonaws.com"), consumer["queueArn"], (("aws:SourceArn", topic),),
                         "sqs:SendMessage", f"SNS delivers to {name}'s queue"))
    alarm = f"arn:aws:cloudwatch:{region}:{acct}:alarm:{alarm_name(STACK_NAME, SUBJECT, 'dlq-messages')}"
    delivery.append((_service("cloudwatch.amazonaws.com"), dst.outputs["AlarmTopicArn"], (
        ("aws:SourceArn", alarm), ("aws:SourceAccount", acct)), "sns:Publish", "an alarm notifies the alarm topic"))
    for who, resource, context, action, why in delivery:
        ev.add(dst, who, Need(action, resource, context), why)
        key = dst.topic_key(resource) if action == "sns:Publish" else dst.queue_key(resource)
        if key:
            for kms_action in ("kms:GenerateDataKey", "kms:Decrypt"):
                ev.add(dst, who, Need(kms_action, key, context), f"{why}, encrypted")
    # CloudWatch Logs encrypts each log group the stack key encrypts, with the group's ARN as context.
    for group_arn, key in dst.log_group_keys.items():
        for action in ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"):
            ev.add(dst, _service(f"logs.{region}.amazonaws.com"), Need(action, key, (
                ("kms:EncryptionContext:aws:logs:arn", group_arn),)), f"CloudWatch Logs encrypts {group_arn}")
    cleaner = dst.cleaner_role()
    if cleaner is not None:
        cleaning = json.loads(dst.outputs["SourceCleaning"])
        ev.add(dst, operator(dst), Need("sts:AssumeRole", cleaning["roleArn"]), "the operator runs source-state clean")
        if "schedule" in cleaning:
            ev.add(dst, _service("lambda.amazonaws.com"), Need("sts:AssumeRole", cleaning["roleArn"]),
                   "Lambda runs the scheduled cleaner")
            group = f"arn:aws:logs:{region}:{acct}:log-group:{cleaner_log_group_name(STACK_NAME)}"
            ev.add(dst, cleaner, Need("logs:CreateLogStream", f"{group}:log-stream:x"), "Lambda writes the function's logs")
            ev.add(dst, cleaner, Need("logs:PutLogEvents", f"{group}:log-stream:x"), "Lambda writes the function's logs")
