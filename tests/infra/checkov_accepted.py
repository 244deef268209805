"""The checkov findings this stack accepts, each with the reason, in one place.

Keyed by check id: the logical-id prefixes of the resources it may fail on, the checked contexts it may
fail in (None: any), and why that is acceptable.
tests/infra/test_checks.py runs checkov on the templates of every checked context, with nothing skipped,
and fails on any finding not listed here, or on an entry here that no longer matches a finding.
"""
from __future__ import annotations

MANAGED_KEYS = ("default", "single-account", "source-cleaning")  # the checked contexts with kms.mode "managed"

ACCEPTED: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None, str]] = {
    # CDK's own singleton Lambda behind Custom::S3BucketNotifications, and the scheduled source cleaner (when on).
    "CKV_AWS_115": (("BucketNotificationsHandler",), None,
                    "CDK's notifications handler runs only while CloudFormation deploys the stack, once per "
                    "update, so reserved concurrency would only cost an account-level reservation."),
    "CKV_AWS_116": (("BucketNotificationsHandler", "SourceCleanerScheduleFunction"), None,
                    "CDK's notifications handler is invoked synchronously by CloudFormation, which reports a "
                    "failure as a failed deployment; the scheduled source cleaner is started by its EventBridge "
                    "rule, which retries a failed start twice, a failed run raises the source-cleaner-failures "
                    "alarm, and the next run takes up what it left: a dead-letter queue of schedule events would "
                    "hold nothing to redo."),
    "CKV_AWS_117": (("BucketNotificationsHandler", "SourceCleanerScheduleFunction"), None,
                    "CDK's notifications handler only calls the S3 API to write the bucket's notification "
                    "configuration, and the source cleaner only the S3 API on the stack's buckets under its role's "
                    "scoped policy; a VPC would add NAT or endpoints for no isolation gained."),
    "CKV_AWS_173": (("SourceCleanerScheduleFunction",), None,
                    "The source cleaner's environment holds bucket names, prefixes and the cleaning settings, no "
                    "secret; Lambda encrypts environment variables at rest with its own key."),
    "CKV_AWS_18": (("AccessLogsBucket",), None,
                   "This is the server access log destination of the other buckets; logging it into itself "
                   "would loop, and S3 logs its own deliveries into it."),
    "CKV_AWS_27": (("Consumer",), MANAGED_KEYS,
                   "With kms.mode managed the queues are encrypted at rest with SSE-SQS (SqsManagedSseEnabled); "
                   "this check only recognises KmsMasterKeyId. kms.mode customer puts them under the stack's key."),
    "CKV_AWS_158": (("JobLogs", "SourceCleanerScheduleLogs"), MANAGED_KEYS,
                    "With kms.mode managed, CloudWatch Logs encrypts the log groups at rest with its own keys; "
                    "kms.mode customer encrypts them with the stack's customer-managed key."),
}
