"""Local stand-in: the stack's own wiring, created on a moto server from the synthesized template.

moto's CloudFormation cannot deploy this template (it skips notifications, subscriptions, policies and
EMR Serverless, and hangs on Lambda-backed custom resources), so this module reads the resources of the
template that `cdk deploy` would ship and makes the matching API calls itself (infra/stand_in/, a module
per kind of resource). There is one definition of the wiring, the CDK app; the demo and the integration
tests exercise what deploys.

How each resource type in the template is handled:

- AWS::S3::Bucket: created, named after its logical id in lower case (a real deploy generates a name).
  Encryption, versioning, public access block and lifecycle rules are applied. Server access logging
  is not: moto does not deliver access logs.
- Custom::S3BucketNotifications (CDK's Lambda-backed resource): its NotificationConfiguration is
  written with PutBucketNotificationConfiguration, merged with what the bucket already has when the
  resource is not `Managed` (an imported bucket), exactly as CDK's handler does. An imported bucket
  does not exist on a fresh server, so it is created first. The handler's Lambda function and the IAM
  role and policy that only serve it are skipped: without Docker moto cannot run the function.
- AWS::S3::BucketPolicy: stored, less its conditional Deny statements (SSL-only): moto's S3 applies a
  Deny without evaluating its Condition, so that statement would refuse every plain-HTTP local request.
  Other bucket policy statements are stored and, like all resource policies on moto, not enforced.
- AWS::SNS::Topic, AWS::SNS::TopicPolicy, AWS::SQS::Queue (all attributes, RedrivePolicy included;
  moto accepts RedriveAllowPolicy but does not keep it), AWS::SQS::QueuePolicy, AWS::KMS::Key, AWS::IAM::Role, AWS::IAM::Policy,
  AWS::Logs::LogGroup, AWS::CloudWatch::Alarm (metric math and Metrics Insights alarms too) and
  AWS::CloudWatch::Dashboard: created with their template properties, tags included on buckets, topics,
  queues and keys. moto stores these resource policies but does not enforce them, and alarms never fire.
- AWS::SNS::Subscription: created with RawMessageDelivery, FilterPolicy and FilterPolicyScope (the alarm
  topic's e-mail subscriptions too: moto sends no mail). One
  deliberate translation: moto URL-encodes "/" in event keys ("a/b" arrives as "a%2Fb"), real S3 does
  not, so key-prefix filter values are encoded the same way here to keep the template's routing.
- AWS::Events::Rule (the source cleaner's schedule): created with its schedule and targets; nothing runs.
  The scheduled cleaner's Lambda function is skipped like CDK's handler (its name and ARN resolve, for its
  alarm and its rule; its invoke permission is skipped with it), and its role, SourceCleanerRole, is
  created: source-state clean uses it too.
- AWS::EMRServerless::Application: created with its properties. moto 5.2.5 rejects release labels not
  shaped like "emr-7.1.0", so when it refuses the template's label (emr-spark-8.0.0) the application is
  created with MOTO_RELEASE_LABEL (infra.stand_in.emr) and tagged `releaseLabel=<the template's label>`.
  Job runs succeed at once on moto; nothing executes.
- Any other resource type fails loudly, so a new resource cannot silently go missing locally.

Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split are resolved, with the pseudo parameters
of the moto account. The returned dict has the same keys as the stack's outputs.
"""
from __future__ import annotations

import copy
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from infra import STACK_NAME
from infra.stand_in import StandInError
from infra.stand_in.deployer import Deployer
from infra.stand_in.template import PSEUDO, references, short

_SYNTH_CACHE: dict[str, dict] = {}


def synth_template(context_overrides: dict | None = None, cdk_json: Path | None = None) -> dict:
    """Synthesize the stack in-process with the context of `cdk_json` (default: the checkout's cdk.json) plus
    overrides; return its template.

    Overrides replace whole top-level context keys (pass the full `consumers` list, for example).
    Builtin CloudFormation validation and cdk-nag are off here (the tests run both). Results are cached
    per file and overrides for the life of the process; callers get their own copy.
    """
    from infra import app

    cache_key = json.dumps([str(cdk_json or app.CDK_JSON), context_overrides or {}], sort_keys=True)
    if cache_key not in _SYNTH_CACHE:
        from infra.app import build_app, cdk_json_context  # starts jsii: only when needed

        context = {**cdk_json_context(cdk_json), **(context_overrides or {})}
        with tempfile.TemporaryDirectory(prefix="cdk-synth-") as outdir:
            app, _ = build_app(context, nag=False, builtin_validation=False, outdir=outdir)
            assembly = app.synth()
            template = json.loads(Path(outdir, assembly.get_stack_by_name(STACK_NAME).template_file).read_text())
        _SYNTH_CACHE[cache_key] = template
    return copy.deepcopy(_SYNTH_CACHE[cache_key])


def write_outputs_file(outputs: dict, path: str | os.PathLike, stack_name: str = STACK_NAME) -> Path:
    """Write outputs in the shape of `cdk deploy --outputs-file`: {stack_name: {key: value}}."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({stack_name: outputs}, indent=2, sort_keys=True) + "\n")
    return p


def deploy_to_moto(template: dict, endpoint_url: str, region: str = "us-east-1") -> dict[str, str]:
    """Create the template's resources on a moto server; return the values its Outputs would have."""
    return deploy_stand_in(template, endpoint_url, region).outputs


def operator_buckets(outputs: dict) -> list[str]:
    """The buckets the stack expects and does not make: sourceCleaning's archive bucket, when it is not the
    source bucket (an operator owns it on AWS; a rehearsal needs it to exist)."""
    archive = json.loads(outputs.get("SourceCleaning") or "{}").get("sourceArchiveLocation")
    bucket = archive.removeprefix("s3://").split("/", 1)[0] if archive else None
    return [bucket] if bucket and bucket != outputs.get("SourceBucketName") else []


def create_operator_buckets(outputs: dict, endpoint_url: str, region: str = "us-east-1") -> list[str]:
    """Create operator_buckets(outputs) on the moto server; returns their names."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint_url, region_name=region,
                      aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                      aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
    names = operator_buckets(outputs)
    for name in names:
        s3.create_bucket(Bucket=name)
    return names


@dataclass(frozen=True)
class StandIn:
    """A template deployed on moto: its outputs, and each resource's properties resolved to the local names (what
    a policy evaluator reads: the same ARNs the code calls). A resource the stand-in skips (a Lambda function) is
    listed with what of it resolves (its role), or without properties."""
    outputs: dict[str, str]
    resources: dict[str, dict]  # logical id -> {"Type", "Properties", "Physical"}
    account_id: str
    region: str


def deploy_stand_in(template: dict, endpoint_url: str, region: str = "us-east-1") -> StandIn:
    deployer = Deployer(template, endpoint_url, region)
    outputs = deployer.deploy()
    resolved = {}
    for lid, r in deployer.resources.items():
        props: dict = {}
        try:
            props = deployer.resolve(r.get("Properties", {}))
        except StandInError:
            if lid not in deployer.skipped:
                raise
            for k, v in r.get("Properties", {}).items():  # a skipped function: what of it is known here
                try:
                    props[k] = deployer.resolve(v)
                except StandInError:
                    pass
        resolved[lid] = {"Type": r["Type"], "Properties": props, "Physical": deployer.physical.get(lid, {})}
    return StandIn(outputs, resolved, deployer.account_id, region)


@dataclass(frozen=True)
class ConsumerPath:
    bucket: str
    queue_url: str
    dlq_url: str


# What an S3 event travels through on its way to a consumer's queue.
_PATH_TYPES = {"AWS::S3::Bucket", "AWS::S3::BucketPolicy", "Custom::S3BucketNotifications", "AWS::KMS::Key",
               "AWS::SNS::Topic", "AWS::SNS::TopicPolicy", "AWS::SNS::Subscription", "AWS::SQS::Queue",
               "AWS::SQS::QueuePolicy"}


def consumer_path(template: dict, consumer: str) -> set[str]:
    """The logical ids of the resources between the source bucket and one consumer's queue: the bucket and its
    notifications, the fan-out topic, the consumer's subscription, queue and dead-letter queue, their policies
    and keys, and what those need (the access-log bucket)."""
    from infra.contract import queue_name

    resources = template["Resources"]
    wanted = queue_name(STACK_NAME, consumer)
    queues = [lid for lid, r in resources.items()
              if r["Type"] == "AWS::SQS::Queue" and r.get("Properties", {}).get("QueueName") == wanted]
    if not queues:
        raise StandInError(f"the template has no queue {wanted!r}: is {consumer!r} a consumer in cdk.json?")
    chosen = {queues[0]} | {lid for lid, r in resources.items() if r["Type"] == "Custom::S3BucketNotifications"}
    chosen |= {lid for lid, r in resources.items() if r["Type"] == "AWS::SNS::Subscription"
               and queues[0] in references(r.get("Properties", {}))}
    while True:  # what the chosen ones reference, and the policies of what is chosen
        refs = set().union(*(references({k: v for k, v in resources[lid].get("Properties", {}).items()
                                         if k != "ServiceToken"}) for lid in chosen))
        grown = chosen | {lid for lid in refs if resources.get(lid, {}).get("Type") in _PATH_TYPES}
        grown |= {lid for lid, r in resources.items() if r["Type"].endswith("Policy") and r["Type"] in _PATH_TYPES
                  and references(r.get("Properties", {})) & grown
                  and references(r.get("Properties", {})) <= grown | set(PSEUDO)}
        if grown == chosen:
            return chosen
        chosen = grown


def source_bucket_name(template: dict, name_prefix: str) -> str:
    """The name deploy_consumer_path gives the source bucket; an existing bucket of that name is kept, with its
    objects (as `cdk deploy` keeps an imported bucket's)."""
    lid = next(lid for lid, r in template["Resources"].items() if r["Type"] == "Custom::S3BucketNotifications")
    bucket = template["Resources"][lid]["Properties"]["BucketName"]["Ref"]
    return short(name_prefix + (template["Resources"][bucket].get("Properties", {}).get("BucketName")
                                or bucket.lower()), 63)


def deploy_consumer_path(template: dict, endpoint_url: str, consumer: str, name_prefix: str,
                         region: str = "us-east-1") -> ConsumerPath:
    """Create one consumer's path (consumer_path) on a moto server, every bucket, topic and queue named with
    `name_prefix`, so each caller (a test, a benchmark run) gets its own copy of the production wiring."""
    d = Deployer(template, endpoint_url, region, name_prefix=name_prefix, only=consumer_path(template, consumer))
    d.deploy(outputs=False)
    resources = template["Resources"]
    notifications = next(lid for lid in d.physical if resources[lid]["Type"] == "Custom::S3BucketNotifications")
    bucket = d.resolve(resources[notifications]["Properties"]["BucketName"])
    queues = [lid for lid in d.physical if resources[lid]["Type"] == "AWS::SQS::Queue"]
    main = next(lid for lid in queues if "RedrivePolicy" in resources[lid].get("Properties", {}))
    dlq = next(lid for lid in queues if lid != main)
    return ConsumerPath(bucket, d.physical[main]["QueueUrl"], d.physical[dlq]["QueueUrl"])
