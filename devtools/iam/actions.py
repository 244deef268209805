"""What AWS authorizes for one operation: its IAM actions, on which resources, with which condition keys, and
the KMS use it implies (reading an SSE-KMS object is also kms:Decrypt through S3; receiving from a KMS queue
is kms:Decrypt through SQS). Pure: the encryption facts come from the deployed shape (`world.World`).

The mapping follows the Service Authorization Reference; an operation this module does not know is an error,
so a new kind of call cannot pass unevaluated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from devtools.iam.calls import Call


@dataclass(frozen=True)
class Need:
    """One IAM authorization an operation needs: `action` on `resource`, with the request's condition keys."""
    action: str
    resource: str
    context: tuple = ()  # ((key, value), ...): hashable


class Encryption(Protocol):
    account: str
    region: str

    def bucket_key(self, bucket: str) -> str | None: ...
    def queue_key(self, queue_arn: str) -> str | None: ...
    def topic_key(self, topic_arn: str) -> str | None: ...
    def key_arn(self, key_id: str) -> str: ...


class UnknownOperation(ValueError):
    pass


def queue_arn(url: str, region: str) -> str:
    account, name = [p for p in urlsplit(url).path.split("/") if p][-2:]
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _obj(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def _bucket(bucket: str) -> str:
    return f"arn:aws:s3:::{bucket}"


def via_context(service: str, region: str, context_key: str, context_value: str) -> tuple:
    """The condition keys of a KMS request an AWS service makes for a caller: the service, and the resource's
    ARN as encryption context."""
    return (("kms:ViaService", f"{service}.{region}.amazonaws.com"),
            (f"kms:EncryptionContext:{context_key}", context_value))


def _via(enc: Encryption, service: str, key: str, actions: tuple[str, ...], context_key: str, context_value: str):
    ctx = via_context(service, enc.region, context_key, context_value)
    return [Need(a, key, ctx) for a in actions]


def _s3_kms(enc: Encryption, bucket: str, actions: tuple[str, ...]) -> list[Need]:
    key = enc.bucket_key(bucket)
    # The stack's buckets use S3 Bucket Keys: S3 asks KMS with the bucket's ARN as the encryption context.
    return _via(enc, "s3", key, actions, "aws:s3:arn", _bucket(bucket)) if key else []


_S3_OBJECT = {
    "GetObject": ("s3:GetObject",), "HeadObject": ("s3:GetObject",), "PutObject": ("s3:PutObject",),
    "CreateMultipartUpload": ("s3:PutObject",), "UploadPart": ("s3:PutObject",),
    "CompleteMultipartUpload": ("s3:PutObject",), "AbortMultipartUpload": ("s3:AbortMultipartUpload",),
    "ListParts": ("s3:ListMultipartUploadParts",), "DeleteObject": ("s3:DeleteObject",),
    "GetObjectTagging": ("s3:GetObjectTagging",), "PutObjectTagging": ("s3:PutObjectTagging",),
    "DeleteObjectTagging": ("s3:DeleteObjectTagging",), "GetObjectAttributes": ("s3:GetObjectAttributes",),
}
_S3_VERSIONED = {"s3:GetObject": "s3:GetObjectVersion", "s3:DeleteObject": "s3:DeleteObjectVersion",
                 "s3:GetObjectTagging": "s3:GetObjectVersionTagging",
                 "s3:PutObjectTagging": "s3:PutObjectVersionTagging"}
_S3_BUCKET = {
    "GetBucketLocation": "s3:GetBucketLocation", "GetBucketPolicy": "s3:GetBucketPolicy",
    "PutBucketPolicy": "s3:PutBucketPolicy", "DeleteBucketPolicy": "s3:DeleteBucketPolicy",
    "GetBucketTagging": "s3:GetBucketTagging", "GetBucketEncryption": "s3:GetEncryptionConfiguration",
    "GetBucketNotificationConfiguration": "s3:GetBucketNotification",
    "PutBucketNotificationConfiguration": "s3:PutBucketNotification",
    "GetBucketVersioning": "s3:GetBucketVersioning", "ListMultipartUploads": "s3:ListBucketMultipartUploads",
    "ListObjectVersions": "s3:ListBucketVersions", "HeadBucket": "s3:ListBucket",
}
# KMS use an object operation implies on an SSE-KMS bucket (the S3 user guide's "permissions for SSE-KMS").
_S3_KMS = {"GetObject": ("kms:Decrypt",), "CopyObject": ("kms:Decrypt", "kms:GenerateDataKey"),
           "PutObject": ("kms:GenerateDataKey",), "CreateMultipartUpload": ("kms:GenerateDataKey", "kms:Decrypt"),
           "UploadPart": ("kms:GenerateDataKey",), "CompleteMultipartUpload": ("kms:Decrypt",)}


def s3_needs(call: Call, enc: Encryption) -> list[Need]:
    op, p = call.operation, call.params
    bucket, key = p.get("Bucket"), p.get("Key")
    if op in ("ListObjectsV2", "ListObjects"):
        ctx = tuple((k, v) for k, v in (("s3:prefix", p.get("prefix")), ("s3:delimiter", p.get("delimiter")),
                                         ("s3:max-keys", p.get("max-keys"))) if v is not None)
        return [Need("s3:ListBucket", _bucket(bucket), ctx)]
    if op in _S3_BUCKET:
        return [Need(_S3_BUCKET[op], _bucket(bucket))]
    if op == "DeleteObjects":
        return [Need("s3:DeleteObjectVersion" if k.get("VersionId") else "s3:DeleteObject", _obj(bucket, k["Key"]))
                for k in p["Keys"]]
    needs: list[Need] = []
    if op in ("CopyObject", "UploadPartCopy"):
        src_bucket, src_key = p["x-amz-copy-source"].lstrip("/").split("/", 1)
        src_key, _, version = src_key.partition("?versionId=")
        needs.append(Need("s3:GetObjectVersion" if version else "s3:GetObject", _obj(src_bucket, src_key)))
        needs += _s3_kms(enc, src_bucket, ("kms:Decrypt",))
        needs.append(Need("s3:PutObject", _obj(bucket, key)))
        needs += _s3_kms(enc, bucket, ("kms:GenerateDataKey",))
        if p.get("x-amz-tagging-directive", "COPY") == "COPY":
            needs.append(Need("s3:GetObjectVersionTagging" if version else "s3:GetObjectTagging",
                              _obj(src_bucket, src_key)))
            needs.append(Need("s3:PutObjectTagging", _obj(bucket, key)))
        elif "x-amz-tagging" in p:
            needs.append(Need("s3:PutObjectTagging", _obj(bucket, key)))
        return needs
    if op not in _S3_OBJECT:
        raise UnknownOperation(f"s3 {op}")
    for action in _S3_OBJECT[op]:
        needs.append(Need(_S3_VERSIONED.get(action, action) if p.get("versionId") else action, _obj(bucket, key)))
    if op in ("PutObject", "CreateMultipartUpload") and "x-amz-tagging" in p:
        needs.append(Need("s3:PutObjectTagging", _obj(bucket, key)))
    needs += _s3_kms(enc, bucket, _S3_KMS.get(op, ()))
    return needs


_SQS_QUEUE_OPS = {"ReceiveMessage", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
                  "ChangeMessageVisibilityBatch", "GetQueueAttributes", "SetQueueAttributes", "SendMessage",
                  "SendMessageBatch", "PurgeQueue", "ListQueueTags", "ListDeadLetterSourceQueues",
                  "StartMessageMoveTask", "ListMessageMoveTasks", "TagQueue"}


def sqs_needs(call: Call, enc: Encryption) -> list[Need]:
    op, p = call.operation, call.params
    if op == "GetQueueUrl":
        account = p.get("QueueOwnerAWSAccountId", enc.account)
        return [Need("sqs:GetQueueUrl", f"arn:aws:sqs:{call.region}:{account}:{p['QueueName']}")]
    if op == "ListQueues":
        return [Need("sqs:ListQueues", f"arn:aws:sqs:{call.region}:{enc.account}:*")]
    if op == "CancelMessageMoveTask":
        return [Need("sqs:CancelMessageMoveTask", p["TaskHandle"])]
    if op not in _SQS_QUEUE_OPS:
        raise UnknownOperation(f"sqs {op}")
    if op in ("StartMessageMoveTask", "ListMessageMoveTasks"):
        arn = p["SourceArn"]
    else:
        arn = queue_arn(p["QueueUrl"], call.region)
    action = "sqs:" + op.removesuffix("Batch")
    needs = [Need(action, arn)]
    key = enc.queue_key(arn)
    if key and op == "ReceiveMessage":
        needs += _via(enc, "sqs", key, ("kms:Decrypt",), "aws:sqs:arn", arn)
    elif key and op.startswith("SendMessage"):
        needs += _via(enc, "sqs", key, ("kms:GenerateDataKey", "kms:Decrypt"), "aws:sqs:arn", arn)
    return needs


def emr_needs(call: Call, enc: Encryption) -> list[Need]:
    op, p = call.operation, call.params
    base = f"arn:aws:emr-serverless:{call.region}:{enc.account}:/applications"
    if op in ("TagResource", "UntagResource", "ListTagsForResource"):
        return [Need(f"emr-serverless:{op}", p["resourceArn"])]
    if op in ("ListApplications", "CreateApplication"):
        return [Need(f"emr-serverless:{op}", f"{base}/*")]
    resource = f"{base}/{p['applicationId']}"
    if "jobRunId" in p:
        resource += f"/jobruns/{p['jobRunId']}"
    needs = [Need(f"emr-serverless:{op}", resource)]
    if op == "StartJobRun":
        needs.append(Need("iam:PassRole", p["executionRoleArn"],
                          (("iam:PassedToService", "emr-serverless.amazonaws.com"),)))
        if p.get("tags"):  # tags on create: TagResource on the run being made
            needs.append(Need("emr-serverless:TagResource", f"{resource}/jobruns/starting"))
    return needs


def logs_needs(call: Call, enc: Encryption) -> list[Need]:
    op, p = call.operation, call.params
    base = f"arn:aws:logs:{call.region}:{enc.account}:log-group"
    if op == "DescribeLogGroups":
        return [Need("logs:DescribeLogGroups", f"{base}:*")]
    group = p.get("logGroupName") or p["logGroupIdentifier"].rsplit(":log-group:", 1)[-1]
    if op in ("GetLogEvents", "PutLogEvents", "CreateLogStream"):
        return [Need(f"logs:{op}", f"{base}:{group}:log-stream:{p['logStreamName']}")]
    return [Need(f"logs:{op}", f"{base}:{group}")]


def glue_needs(call: Call, enc: Encryption) -> list[Need]:
    """Glue authorizes a table operation on the catalog, the database and the table, each."""
    op, p = call.operation, call.params

    def arn(resource: str) -> str:
        return f"arn:aws:glue:{call.region}:{p.get('CatalogId') or enc.account}:{resource}"
    if op == "CreateDatabase":
        database, table = p["DatabaseInput"]["Name"], None
    elif op in ("GetDatabase", "DeleteDatabase", "UpdateDatabase"):
        database, table = p["Name"], None
    elif op in ("CreateTable", "UpdateTable"):
        database, table = p["DatabaseName"], p["TableInput"]["Name"]
    elif op in ("GetTable", "DeleteTable"):
        database, table = p["DatabaseName"], p["Name"]
    elif op == "GetTables":
        database, table = p["DatabaseName"], "*"
    else:
        raise UnknownOperation(f"glue {op}")
    resources = [arn("catalog"), arn(f"database/{database}")] + ([arn(f"table/{database}/{table}")] if table else [])
    return [Need(f"glue:{op}", r) for r in resources]


def sns_needs(call: Call, enc: Encryption) -> list[Need]:
    op, p = call.operation, call.params
    if op in ("ListTopics", "ListSubscriptions"):
        return [Need(f"sns:{op}", f"arn:aws:sns:{call.region}:{enc.account}:*")]
    if op in ("Unsubscribe", "GetSubscriptionAttributes", "SetSubscriptionAttributes"):
        topic = p["SubscriptionArn"].rsplit(":", 1)[0]
        return [Need(f"sns:{op}", topic)]
    arn = p.get("TopicArn") or p["ResourceArn"]
    needs = [Need(f"sns:{op}", arn)]
    key = enc.topic_key(arn)
    if key and op == "Publish":
        needs += _via(enc, "sns", key, ("kms:GenerateDataKey", "kms:Decrypt"), "aws:sns:topicArn", arn)
    return needs


def kms_needs(call: Call, enc: Encryption) -> list[Need]:
    return [Need(f"kms:{call.operation}", enc.key_arn(call.params["KeyId"]))]


def sts_needs(call: Call, enc: Encryption) -> list[Need]:
    if call.operation == "GetCallerIdentity":  # needs no permission
        return []
    if call.operation == "AssumeRole":
        return [Need("sts:AssumeRole", call.params["RoleArn"])]
    raise UnknownOperation(f"sts {call.operation}")


_BY_SERVICE = {"s3": s3_needs, "sqs": sqs_needs, "sns": sns_needs, "kms": kms_needs, "sts": sts_needs,
               "emr-serverless": emr_needs, "logs": logs_needs, "glue": glue_needs}


def needs_of(call: Call, enc: Encryption) -> list[Need]:
    """Every IAM authorization `call` needs ([] for one that needs none); an unknown service is an error."""
    if call.service not in _BY_SERVICE:
        raise UnknownOperation(f"{call.service} {call.operation}")
    return _BY_SERVICE[call.service](call, enc)
