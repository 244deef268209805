"""The pure parts of devtools/iam: a recorded request -> its operation and principal; an operation -> the IAM
requests AWS authorizes; and the evaluator's answers on the cases it is known to get wrong unaided."""
from __future__ import annotations

import base64
import json

import pytest

from devtools.iam.actions import Need, UnknownOperation, needs_of
from devtools.iam.calls import Call, label_of, labelled_credentials, parse_request
from devtools.iam.evaluator import EvaluatorError, IamRequest, evaluate, simulation, wildcard_only

AUTH = ("AWS4-HMAC-SHA256 Credential={key}/20261128/us-east-1/{service}/aws4_request, SignedHeaders=host, "
        "Signature=0")


def entry(method, url, service, key="AKIDS3SQSJOB_RUN", headers=None, body=b""):
    return {"method": method, "url": url, "body": base64.b64encode(body).decode(), "body_encoded": True,
            "headers": {"Authorization": AUTH.format(key=key, service=service), **(headers or {})}}


@pytest.mark.parametrize("method, url, headers, op, params", [
    ("HEAD", "http://h/bkt/a/b%2Bc.csv", {}, "HeadObject", {"Bucket": "bkt", "Key": "a/b+c.csv"}),
    ("GET", "http://h/bkt/a/x?versionId=v1", {}, "GetObject", {"versionId": "v1"}),
    ("GET", "http://h/bkt?list-type=2&prefix=in%2F&delimiter=%2F", {}, "ListObjectsV2",
     {"prefix": "in/", "delimiter": "/"}),
    ("HEAD", "http://h/bkt", {}, "HeadBucket", {"Bucket": "bkt"}),
    ("PUT", "http://h/bkt/k", {"x-amz-copy-source": "/src/a%20b"}, "CopyObject", {"x-amz-copy-source": "/src/a b"}),
    ("PUT", "http://h/bkt/k?partNumber=1&uploadId=u", {}, "UploadPart", {"uploadId": "u"}),
    ("POST", "http://h/bkt/k?uploads", {}, "CreateMultipartUpload", {"Key": "k"}),
    ("GET", "http://h/bkt?policy", {}, "GetBucketPolicy", {"Bucket": "bkt"}),
])
def test_s3_requests_are_the_operations_iam_names(method, url, headers, op, params):
    call = parse_request(entry(method, url, "s3", headers=headers))
    assert call.operation == op and call.label == "JOB_RUN"
    assert params.items() <= call.params.items()


def test_json_query_and_rest_json_protocols():
    sqs = parse_request(entry("POST", "http://h/", "sqs", headers={"X-Amz-Target": "AmazonSQS.ReceiveMessage"},
                              body=json.dumps({"QueueUrl": "http://h/123456789012/q"}).encode()))
    assert (sqs.operation, sqs.params["QueueUrl"]) == ("ReceiveMessage", "http://h/123456789012/q")
    sns = parse_request(entry("POST", "http://h/", "sns", body=b"Action=GetTopicAttributes&TopicArn=arn%3Aaws%3Asns"))
    assert (sns.operation, sns.params) == ("GetTopicAttributes", {"TopicArn": "arn:aws:sns"})
    emr = parse_request(entry("GET", "http://h/applications/app1/jobruns/run1/dashboard", "emr-serverless"))
    assert (emr.operation, emr.params) == ("GetDashboardForJobRun", {"applicationId": "app1", "jobRunId": "run1"})


def test_an_unsigned_request_is_an_error_and_labels_round_trip():
    with pytest.raises(ValueError, match="unsigned"):
        parse_request({"method": "GET", "url": "http://h/bkt/k", "headers": {}})
    assert label_of(labelled_credentials("OPERATOR_SUBMIT_JOB")["AWS_ACCESS_KEY_ID"]) == "OPERATOR_SUBMIT_JOB"
    with pytest.raises(ValueError):
        labelled_credentials("lower case")


class Enc:
    account, region = "111111111111", "us-east-1"
    key = "arn:aws:kms:us-east-1:111111111111:key/k"

    def bucket_key(self, bucket):
        return self.key if bucket == "ckpt" else None

    def queue_key(self, arn):
        return self.key

    def topic_key(self, arn):
        return None

    def key_arn(self, key_id):
        return key_id if key_id.startswith("arn:") else f"arn:aws:kms:us-east-1:111111111111:key/{key_id}"


def test_object_operations_imply_key_use_through_s3_on_kms_buckets_only():
    get = needs_of(Call("", "s3", "GetObject", {"Bucket": "ckpt", "Key": "a"}), Enc())
    assert get == [Need("s3:GetObject", "arn:aws:s3:::ckpt/a"),
                   Need("kms:Decrypt", Enc.key, (("kms:ViaService", "s3.us-east-1.amazonaws.com"),
                                                 ("kms:EncryptionContext:aws:s3:arn", "arn:aws:s3:::ckpt")))]
    assert needs_of(Call("", "s3", "GetObject", {"Bucket": "src", "Key": "a"}), Enc()) == [
        Need("s3:GetObject", "arn:aws:s3:::src/a")]
    copy = needs_of(Call("", "s3", "CopyObject", {"Bucket": "arch", "Key": "b", "x-amz-copy-source": "src/a?versionId=v"}),
                    Enc())
    assert {(n.action, n.resource) for n in copy} == {
        ("s3:GetObjectVersion", "arn:aws:s3:::src/a"), ("s3:PutObject", "arn:aws:s3:::arch/b"),
        ("s3:GetObjectVersionTagging", "arn:aws:s3:::src/a"), ("s3:PutObjectTagging", "arn:aws:s3:::arch/b")}


def test_batches_and_deletes_are_authorized_per_item_and_receives_decrypt_through_sqs():
    deletes = needs_of(Call("", "s3", "DeleteObjects", {"Bucket": "b", "Keys": [{"Key": "x"}, {"Key": "y",
                                                                                           "VersionId": "1"}]}), Enc())
    assert [(n.action, n.resource) for n in deletes] == [("s3:DeleteObject", "arn:aws:s3:::b/x"),
                                                         ("s3:DeleteObjectVersion", "arn:aws:s3:::b/y")]
    receive = needs_of(Call("", "sqs", "ReceiveMessage", {"QueueUrl": "http://h/111111111111/q"}), Enc())
    assert receive[0] == Need("sqs:ReceiveMessage", "arn:aws:sqs:us-east-1:111111111111:q")
    assert receive[1].action == "kms:Decrypt" and dict(receive[1].context)["kms:ViaService"] == "sqs.us-east-1.amazonaws.com"
    batch = needs_of(Call("", "sqs", "DeleteMessageBatch", {"QueueUrl": "http://h/111111111111/q"}), Enc())
    assert batch == [Need("sqs:DeleteMessage", "arn:aws:sqs:us-east-1:111111111111:q")]
    with pytest.raises(UnknownOperation):
        needs_of(Call("", "dynamodb", "GetItem", {}), Enc())


KEY_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS":
              "arn:aws:iam::111111111111:root"}, "Action": "kms:*", "Resource": "*"}]}


def _decrypt(context_queue: str):
    identity = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*",
                "Condition": {"StringEquals": {"kms:EncryptionContext:aws:sqs:arn": "arn:aws:sqs:us-east-1:1:q"}}}]}
    req = IamRequest("arn:aws:sts::111111111111:assumed-role/r/s", "kms:Decrypt", Enc.key,
                     {"kms:EncryptionContext:aws:sqs:arn": context_queue})
    return req, simulation(req, [identity], KEY_POLICY, "111111111111")


def test_encryption_context_conditions_are_evaluated_both_ways():
    # The validated engine drops kms:EncryptionContext:<key> keys (a false deny): the unvalidated one decides.
    allowed, denied = evaluate([_decrypt("arn:aws:sqs:us-east-1:1:q"), _decrypt("arn:aws:sqs:us-east-1:1:other")])
    assert (allowed.result, allowed.engine) == ("Allowed", "unvalidated")
    assert denied.result == "ImplicitlyDenied"


def test_a_malformed_policy_is_an_error_not_a_denial_and_wildcard_only_actions_use_star():
    req = IamRequest("arn:aws:sts::111111111111:assumed-role/r/s", "s3:GetObject", "arn:aws:s3:::b/k", {})
    with pytest.raises(EvaluatorError, match="refused"):
        evaluate([(req, simulation(req, [{"Version": "2012-10-17", "Statement": [{"Effect": "Perhaps"}]}], None,
                                   "111111111111"))])
    assert wildcard_only("logs:DescribeLogGroups") and not wildcard_only("logs:DescribeLogStreams")
    assert simulation(IamRequest("p", "sqs:ListQueues", "arn:aws:sqs:us-east-1:1:*"), [], None, "1")[
        "request"]["resource"]["resource"] == "*"
