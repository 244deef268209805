"""The checkov findings this stack accepts, each with the reason, in one place.

Keyed by check id: the logical-id prefixes of the resources it may fail on, the checked contexts it may
fail in (None: any), and why that is acceptable.
tests/infra/test_checks.py runs checkov on the templates of every checked context, with nothing skipped,
and fails on any finding not listed here, or on an entry here that no longer matches a finding.
"""
from __future__ import annotations

MANAGED_KEYS = ("default", "single-account", "source-cleaning")  # the checked contexts with kms.mode "managed"

ACCEPTED: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None, str]] = {
    # CDK's own singleton Lambda behind Custom::S3BucketNotifications; the stack has no other function.
    "CKV_AWS_115": (("BucketNotificationsHandler",), None,
                    "CDK's notifications handler runs only while CloudFormation deploys the stack, once per "
                    "update, so reserved concurrency would only cost an account-level reservation."),
    "CKV_AWS_116": (("BucketNotificationsHandler",), None,
                    "CDK's notifications handler is invoked synchronously by CloudFormation, which reports a "
                    "failure as a failed deployment; an asynchronous dead-letter queue would never receive anything."),
    "CKV_AWS_117": (("BucketNotificationsHandler",), None,
                    "CDK's notifications handler only calls the S3 API to write the bucket's notification "
                    "configuration; it reads no data, and a VPC would add NAT or endpoints for no isolation gained."),
    "CKV_AWS_18": (("AccessLogsBucket",), None,
                   "This is the server access log destination of the other buckets; logging it into itself "
                   "would loop, and S3 logs its own deliveries into it."),
    "CKV_AWS_27": (("Consumer",), MANAGED_KEYS,
                   "With kms.mode managed the queues are encrypted at rest with SSE-SQS (SqsManagedSseEnabled); "
                   "this check only recognises KmsMasterKeyId. kms.mode customer puts them under the stack's key."),
    "CKV_AWS_158": (("JobLogs",), MANAGED_KEYS,
                    "With kms.mode managed, CloudWatch Logs encrypts the log groups at rest with its own keys; "
                    "kms.mode customer encrypts them with the stack's customer-managed key."),
}
