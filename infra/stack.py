"""The stack: source bucket -> fan-out topic -> one queue per consumer -> EMR Serverless jobs."""
from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, Aws, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from s3sqs.cleaning import scheduled
from s3sqs.cleaning.rule import Consumer

from infra.config import StackConfig
from infra.contract import (
    CHECKPOINTS_PREFIX, EMR_LOGS_PREFIX, JOB_ARTIFACTS_PREFIX, OUTPUT_PREFIX, SOURCE_CLEANING_PREFIX, alarm_name,
    checkpoint_prefix, cleaner_log_group_name, commit_markers_location, commit_markers_prefix, dashboard_name,
    emr_logs_prefix, job_artifacts_prefix, log_group_name, output_prefix,
)
from infra.patterns import (
    AlarmTopic, ConsumerMonitoring, ConsumerQueue, FanOutTopic, JobRole, OperatorPolicy, ScheduledCleaner,
    SecureBucket, SourceCleanerRole, SparkApplication, acknowledge, insecure_transport_denial, job_log_group,
    mark_policy_owned, reaches_alarm,
)

# The connector's package, which the scheduled source cleaner runs from.
APP_DIR = Path(__file__).resolve().parent.parent / "app"
# How long superseded object versions are kept in the versioned buckets before they expire.
NONCURRENT_VERSION_DAYS = 30


class StreamingStack(Stack):
    """Everything one deployment needs; all settings come from a validated StackConfig."""

    def __init__(self, scope: Construct, id: str, *, config: StackConfig, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
        self.config = config
        cfg = config

        key: kms.IKey | None = None
        # Every log group the stack key encrypts: the consumers' and, when it runs on a schedule, the cleaner's.
        log_group_names = [log_group_name(self.stack_name, c.name) for c in cfg.consumers]
        if cfg.source_cleaning.enabled and cfg.cleaning_schedule is not None:
            log_group_names.append(cleaner_log_group_name(self.stack_name))
        if cfg.kms.customer_managed:
            key = kms.Key(
                self,
                "Key",
                description="Encrypts the fan-out and alarm topics, consumer queues, checkpoints, artifacts and job "
                            "logs",
                enable_key_rotation=True,
                removal_policy=RemovalPolicy.RETAIN,
            )
            mark_policy_owned(key)
            # CloudWatch Logs encrypts the stack's log groups with this key, and only those: the names are
            # fixed, so the key policy names each group without a reference. (No kms:Describe*: a DescribeKey
            # request carries no encryption context, so under this condition it could never be allowed.)
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowCloudWatchLogs",
                    principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                    actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions={"StringEquals": {"kms:EncryptionContext:aws:logs:arn": [
                        f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{name}"
                        for name in log_group_names
                    ]}},
                )
            )
            topic_key = key
        else:
            # S3 cannot publish to a topic under the AWS-managed SNS key (nor CloudWatch to the alarm topic), so
            # the topics get a key of their own, the only customer-managed key of this mode.
            topic_key = kms.Key(
                self,
                "TopicKey",
                description="Encrypts the fan-out and alarm topics (S3 and CloudWatch cannot publish under the "
                            "AWS-managed SNS key)",
                enable_key_rotation=True,
                removal_policy=RemovalPolicy.RETAIN,
            )
            mark_policy_owned(topic_key)
        self.key = key

        # Access logs for every bucket here. S3 server access logs can only be written with SSE-S3.
        # Versioned, like every bucket the stack creates: an overwrite or delete keeps the previous version
        # for NONCURRENT_VERSION_DAYS.
        access_logs = SecureBucket(
            self,
            "AccessLogs",
            access_logs=None,
            versioned=True,
            lifecycle_rules=[s3.LifecycleRule(id="ExpireAccessLogs", expiration=Duration.days(365),
                                              noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                                              abort_incomplete_multipart_upload_after=Duration.days(7))],
        ).bucket
        acknowledge(access_logs, "AwsSolutions-S1",
                    "This is the access-log destination; logging it into itself would loop.")
        self.access_logs = access_logs

        if cfg.source_bucket.imported:
            # Its owner keeps its settings (versioning, encryption, policy): CDK cannot change an imported bucket.
            source = s3.Bucket.from_bucket_name(self, "SourceBucket", cfg.source_bucket.bucket_name)
        else:
            source = SecureBucket(
                self, "Source", access_logs=access_logs, access_log_prefix="source/", versioned=True,
                lifecycle_rules=[s3.LifecycleRule(
                    id="ExpireSupersededVersions",
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                )],
            ).bucket
        self.source_bucket = source

        self.checkpoint_bucket = SecureBucket(
            self,
            "Checkpoints",
            access_logs=access_logs,
            access_log_prefix="checkpoints/",
            encryption_key=key,
            versioned=True,
            # Only superseded versions and abandoned uploads expire: live checkpoint files are never touched.
            lifecycle_rules=[s3.LifecycleRule(
                id="ExpireSupersededVersions",
                noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                abort_incomplete_multipart_upload_after=Duration.days(7),
            )],
        ).bucket
        self.artifacts_bucket = SecureBucket(
            self,
            "Artifacts",
            access_logs=access_logs,
            access_log_prefix="artifacts/",
            encryption_key=key,
            # Versioned: the job code a run used can be recovered even after it was overwritten or deleted.
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(id="ExpireMonitoringLogs", prefix=EMR_LOGS_PREFIX, expiration=Duration.days(90)),
                s3.LifecycleRule(id="ExpireSupersededVersions",
                                 noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                                 abort_incomplete_multipart_upload_after=Duration.days(7)),
            ],
        ).bucket

        fan_out = FanOutTopic(self, "FanOut", source_bucket=source, event_filter=cfg.event_filter,
                              encryption_key=topic_key, key_encrypts_queues=key is not None)
        self.topic = fan_out.topic
        self.topic_key = topic_key
        spark = SparkApplication(self, "Spark", emr=cfg.emr)
        self.application = spark.application
        # Alarms notify one topic, under the topics' key: CloudWatch cannot use the AWS-managed SNS key.
        self.alarm_topic = AlarmTopic(self, "Alarms", encryption_key=topic_key, emails=cfg.alarms.emails)
        alarm_action = self.alarm_topic.action
        self.failed_jobs_alarm = reaches_alarm(
            self, "FailedJobRunsAlarm", cfg.alarms, alarm_action, name=alarm_name(self.stack_name, "failed-job-runs"),
            description="A job run on the EMR Serverless application failed: job-runs list --state FAILED",
            metric=spark.failed_jobs.with_(period=Duration.seconds(cfg.alarms.period_seconds)), threshold=1,
        )

        self.read_statements: list[iam.PolicyStatement] = []
        consumers_out: dict[str, dict[str, str]] = {}
        self.consumer_queues: dict[str, ConsumerQueue] = {}
        self.job_roles: dict[str, JobRole] = {}
        self.log_groups = {}
        for consumer in cfg.consumers:
            grant = cfg.grant_for(consumer)
            cq = ConsumerQueue(
                self, f"Consumer{consumer.construct_id}", consumer=consumer, topic=self.topic,
                grant=grant, encryption_key=key, alarms=cfg.alarms, alarm_action=alarm_action,
            )
            ConsumerMonitoring(
                self, f"Monitoring{consumer.construct_id}", consumer=consumer, queue=cq, alarms=cfg.alarms,
                alarm_action=alarm_action, failed_jobs=spark.failed_jobs, failed_jobs_alarm=self.failed_jobs_alarm,
            )
            log_group = job_log_group(
                self, f"JobLogs{consumer.construct_id}", name=log_group_name(self.stack_name, consumer.name),
                retention_days=cfg.emr.log_retention_days, encryption_key=key,
            )
            checkpoints = checkpoint_prefix(consumer.name)
            output = output_prefix(consumer.name)
            artifacts = job_artifacts_prefix(consumer.name)
            monitoring = emr_logs_prefix(consumer.name)
            role = JobRole(
                self, f"JobRole{consumer.construct_id}", consumer=consumer,
                application_arn=self.application.attr_arn, source_bucket=source,
                read_pattern=cfg.read_pattern(consumer), read_prefix=cfg.read_prefix(consumer),
                checkpoint_bucket=self.checkpoint_bucket,
                checkpoint_prefix=checkpoints, output_prefix=output,
                artifacts_bucket=self.artifacts_bucket, artifacts_prefix=artifacts,
                monitoring_prefix=monitoring,
                queue=cq.queue, encryption_key=key, log_group_name=log_group.log_group_name,
            )
            self.consumer_queues[consumer.name] = cq
            self.job_roles[consumer.name] = role
            self.log_groups[consumer.name] = log_group
            if grant.principals:  # a consumer of the deploying account is read by its job role alone
                self.read_statements.append(iam.PolicyStatement(
                    sid=f"CrossAccountRead{consumer.construct_id}",
                    principals=[iam.ArnPrincipal(p) for p in grant.principals],
                    actions=["s3:GetObject", "s3:GetObjectVersion"],
                    resources=[source.arn_for_objects(cfg.read_pattern(consumer))],
                    conditions=grant.conditions or None,
                ))
            consumers_out[consumer.name] = {
                "queueUrl": cq.queue.queue_url,
                "queueArn": cq.queue.queue_arn,
                "dlqUrl": cq.dlq.queue_url,
                "dlqArn": cq.dlq.queue_arn,
                "jobRoleArn": role.role.role_arn,
                "prefix": consumer.prefix,
                "checkpointUri": self.checkpoint_bucket.s3_url_for_object(checkpoints),
                "outputUri": self.checkpoint_bucket.s3_url_for_object(output),
                "artifactsUri": self.artifacts_bucket.s3_url_for_object(artifacts),
                "logUri": self.artifacts_bucket.s3_url_for_object(monitoring),
                "logGroupName": log_group.log_group_name,
                "dashboardName": dashboard_name(self.stack_name, consumer.name),
                # The only Glue database its job role may use for Iceberg tables ("" when it has none).
                "icebergGlueDatabase": consumer.iceberg_glue_database or "",
            }
            CfnOutput(self, f"{consumer.construct_id}QueueUrl", value=cq.queue.queue_url,
                      description=f"Queue of consumer {consumer.name}")
            CfnOutput(self, f"{consumer.construct_id}DlqUrl", value=cq.dlq.queue_url,
                      description=f"Dead-letter queue of consumer {consumer.name}")

        if cfg.source_bucket.imported:
            # add_to_resource_policy is a no-op on an imported bucket: the owner must add these, with the SSL-only
            # denial every bucket the stack makes has.
            denial = insecure_transport_denial(["s3:*"], [source.bucket_arn, source.arn_for_objects("*")],
                                               sid="DenyInsecureTransport")
            CfnOutput(self, "SourceBucketPolicyStatements",
                      value=self.to_json_string([s.to_statement_json() for s in [*self.read_statements, denial]]),
                      description="Statements the source bucket's owner must add to its bucket policy")
        else:
            for statement in self.read_statements:
                source.add_to_resource_policy(statement)

        self.cleaner_role = self._source_cleaner() if cfg.source_cleaning.enabled else None
        self.operator_policy = OperatorPolicy(
            self, "Operator", application=self.application, artifacts_bucket=self.artifacts_bucket,
            artifacts_prefix=JOB_ARTIFACTS_PREFIX, checkpoint_bucket=self.checkpoint_bucket,
            checkpoint_prefix=CHECKPOINTS_PREFIX, output_prefix=OUTPUT_PREFIX,
            job_roles=[r.role for r in self.job_roles.values()],
            log_group_arns=[self.format_arn(service="logs", resource="log-group", resource_name=g.log_group_name,
                                            arn_format=ArnFormat.COLON_RESOURCE_NAME) for g in self.log_groups.values()],
            queues=[q.queue for q in self.consumer_queues.values()], dlqs=[q.dlq for q in self.consumer_queues.values()],
            glue_databases=[c.iceberg_glue_database for c in cfg.consumers if c.iceberg_glue_database],
            encryption_key=key, cleaner_role=self.cleaner_role,
        ).policy
        self._outputs(consumers_out)
        self._acknowledge_notifications_handler()

    def _source_cleaner(self) -> iam.Role:
        """The one role that may delete from the source bucket, and the output `source-state clean` reads."""
        cfg, cleaning = self.config, self.config.source_cleaning
        role = SourceCleanerRole(
            self, "SourceCleaner", source_bucket=self.source_bucket,
            read_patterns=[cfg.read_pattern(c) for c in cfg.consumers], checkpoint_bucket=self.checkpoint_bucket,
            marker_prefixes=[commit_markers_prefix(c.name) for c in cfg.consumers],
            journal_prefix=SOURCE_CLEANING_PREFIX, archive_bucket=cleaning.archive_bucket,
            archive_prefix=cleaning.archive_prefix, encryption_key=self.key,
            scheduled=cfg.cleaning_schedule is not None, operator_roles=cfg.cleaning_operator_roles,
        ).role
        journal = self.checkpoint_bucket.s3_url_for_object(SOURCE_CLEANING_PREFIX)
        published = {**cleaning.as_settings(), "roleArn": role.role_arn, "journalUri": journal,
                     "eventFilter": {"prefix": cfg.event_filter.prefix, "suffix": cfg.event_filter.suffix}}
        if cfg.cleaning_schedule is not None:
            readers = [(Consumer(c.name, c.prefix or cfg.event_filter.prefix, cfg.event_filter.suffix),
                        commit_markers_location(self.checkpoint_bucket.s3_url_for_object(checkpoint_prefix(c.name))))
                       for c in cfg.consumers]
            ScheduledCleaner(
                self, "SourceCleanerSchedule", role=role, schedule=cfg.cleaning_schedule,
                config=scheduled.config_json(cleaning, self.source_bucket.bucket_name, readers, journal),
                code_dir=str(APP_DIR), log_group_name=cleaner_log_group_name(self.stack_name),
                retention_days=cfg.emr.log_retention_days, encryption_key=self.key,
                alarms=cfg.alarms, alarm_action=self.alarm_topic.action,
                alarm_name=alarm_name(self.stack_name, "source-cleaner-failures"),
            )
            published["schedule"] = cfg.cleaning_schedule
        CfnOutput(self, "SourceCleaning", value=self.to_json_string(published),
                  description="JSON: cleanSource, cleanSourceRetention, sourceArchiveLocation, roleArn (the one role "
                              "that may delete source objects), journalUri, eventFilter; read by source-state clean")
        return role

    def _acknowledge_notifications_handler(self) -> None:
        """CDK's own Lambda that writes the bucket notification configuration uses the basic execution role."""
        for child in self.node.children:
            if child.node.id.startswith("BucketNotificationsHandler"):
                acknowledge(
                    child, "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AWSLambdaBasicExecutionRole]",
                    "CDK's notifications handler only writes its own CloudWatch logs through this managed policy.",
                )

    def _outputs(self, consumers_out: dict) -> None:
        # The tools take their region from here, so a shell set to another region cannot send them elsewhere.
        CfnOutput(self, "Region", value=Aws.REGION, description="Region the stack is deployed in")
        CfnOutput(self, "OperatorPolicyArn", value=self.operator_policy.managed_policy_arn,
                  description="Managed policy with what the operator tools call: attach it to the operators' role")
        CfnOutput(self, "TopicArn", value=self.topic.topic_arn, description="SNS fan-out topic")
        CfnOutput(self, "SourceBucketName", value=self.source_bucket.bucket_name,
                  description="Bucket whose ObjectCreated events are streamed")
        CfnOutput(self, "CheckpointBucketName", value=self.checkpoint_bucket.bucket_name,
                  description="Spark checkpoints and file index (checkpoints/<consumer>/), sink (output/<consumer>/)")
        CfnOutput(self, "ArtifactsBucketName", value=self.artifacts_bucket.bucket_name,
                  description="Job code under jobs/<consumer>/; EMR job logs under emr-logs/<consumer>/")
        CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic.topic_arn,
                  description="SNS topic every alarm of the stack notifies; subscribe more endpoints here")
        CfnOutput(self, "EmrApplicationId", value=self.application.attr_application_id,
                  description="EMR Serverless application that runs the consumer jobs")
        CfnOutput(self, "EmrReleaseLabel", value=self.config.emr.release_label,
                  description="Build the packed environment for this release's Python")
        CfnOutput(self, "EmrArchitecture", value=self.config.emr.architecture,
                  description="Build the packed environment for this CPU architecture")
        if self.key is not None:
            CfnOutput(self, "KmsKeyArn", value=self.key.key_arn, description="Customer-managed key of this stack")
        CfnOutput(self, "Consumers", value=self.to_json_string(consumers_out),
                  description="JSON: consumer name -> queueUrl, queueArn, dlqUrl, dlqArn, jobRoleArn, prefix, "
                              "checkpointUri, outputUri, artifactsUri, logUri, logGroupName, dashboardName, "
                              "icebergGlueDatabase")
