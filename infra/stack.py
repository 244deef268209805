"""The stack: source bucket -> fan-out topic -> one queue per consumer -> EMR Serverless jobs."""
from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from s3sqs.cleaning import scheduled
from s3sqs.cleaning.rule import Consumer
from s3sqs.core.layout import (
    CHECKPOINTS_PREFIX, JOB_ARTIFACTS_PREFIX, OUTPUT_PREFIX, SOURCE_CLEANING_PREFIX, checkpoint_prefix,
    commit_markers_prefix,
)

from infra.buckets import stack_buckets
from infra.config import StackConfig
from infra.constructs.alarms import AlarmTopic, failed_job_runs_alarm
from infra.constructs.fan_out_topic import FanOutTopic
from infra.constructs.operator_policy import OperatorPolicy
from infra.constructs.scheduled_cleaner import ScheduledCleaner
from infra.constructs.source_cleaner_role import SourceCleanerRole
from infra.constructs.spark_application import SparkApplication
from infra.consumers import wire_consumer
from infra.contract import cleaner_log_group_name, commit_markers_location
from infra.keys import stack_keys
from infra.nag import acknowledge
from infra.outputs import stack_outputs
from infra.policies import insecure_transport_denial

# The connector's package, which the scheduled source cleaner runs from.
APP_DIR = Path(__file__).resolve().parent.parent / "app"


class StreamingStack(Stack):
    """Everything one deployment needs; all settings come from a validated StackConfig."""

    def __init__(self, scope: Construct, id: str, *, config: StackConfig, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
        self.config = config
        self.key, self.topic_key = stack_keys(self, config)
        buckets = stack_buckets(self, config, self.key)
        self.source_bucket, self.checkpoint_bucket, self.artifacts_bucket = (buckets.source, buckets.checkpoints,
                                                                             buckets.artifacts)
        self.topic = FanOutTopic(self, "FanOut", source_bucket=self.source_bucket, event_filter=config.event_filter,
                                 encryption_key=self.topic_key, key_encrypts_queues=self.key is not None).topic
        self.spark = SparkApplication(self, "Spark", emr=config.emr)
        self.application = self.spark.application
        # Alarms notify one topic, under the topics' key: CloudWatch cannot use the AWS-managed SNS key.
        self.alarm_topic = AlarmTopic(self, "Alarms", encryption_key=self.topic_key, emails=config.alarms.emails)
        self.failed_jobs_alarm = failed_job_runs_alarm(self, config.alarms, self.alarm_topic.action,
                                                       self.spark.failed_jobs)
        self.consumers = [wire_consumer(self, c) for c in config.consumers]
        self._grant_source_reads()
        self.cleaner_role = self._source_cleaner() if config.source_cleaning.enabled else None
        self.operator_policy = self._operator_policy()
        stack_outputs(self)
        self._acknowledge_notifications_handler()

    def _grant_source_reads(self) -> None:
        """Each other-account consumer's principals may read its part of the source bucket: through the bucket's
        policy, or, for an imported bucket, through statements its owner adds."""
        cfg, source = self.config, self.source_bucket
        statements = []
        for consumer in cfg.consumers:
            grant = cfg.grant_for(consumer)
            if grant.principals:  # a consumer of the deploying account is read by its job role alone
                statements.append(iam.PolicyStatement(
                    sid=f"CrossAccountRead{consumer.construct_id}",
                    principals=[iam.ArnPrincipal(p) for p in grant.principals],
                    actions=["s3:GetObject", "s3:GetObjectVersion"],
                    resources=[source.arn_for_objects(cfg.read_pattern(consumer))], conditions=grant.conditions or None,
                ))
        if not cfg.source_bucket.imported:
            for statement in statements:
                source.add_to_resource_policy(statement)
            return
        # add_to_resource_policy is a no-op on an imported bucket: the owner must add these, with the SSL-only
        # denial every bucket the stack makes has.
        denial = insecure_transport_denial(["s3:*"], [source.bucket_arn, source.arn_for_objects("*")],
                                           sid="DenyInsecureTransport")
        CfnOutput(self, "SourceBucketPolicyStatements",
                  value=self.to_json_string([s.to_statement_json() for s in [*statements, denial]]),
                  description="Statements the source bucket's owner must add to its bucket policy")

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
            )
            published["schedule"] = cfg.cleaning_schedule
        CfnOutput(self, "SourceCleaning", value=self.to_json_string(published),
                  description="JSON: cleanSource, cleanSourceRetention, sourceArchiveLocation, roleArn (the one role "
                              "that may delete source objects), journalUri, eventFilter; read by source-state clean")
        return role

    def _operator_policy(self) -> iam.ManagedPolicy:
        return OperatorPolicy(
            self, "Operator", application=self.application, artifacts_bucket=self.artifacts_bucket,
            artifacts_prefix=JOB_ARTIFACTS_PREFIX, checkpoint_bucket=self.checkpoint_bucket,
            checkpoint_prefix=CHECKPOINTS_PREFIX, output_prefix=OUTPUT_PREFIX,
            job_roles=[w.role.role for w in self.consumers],
            log_group_arns=[self.format_arn(service="logs", resource="log-group",
                                            resource_name=w.log_group.log_group_name,
                                            arn_format=ArnFormat.COLON_RESOURCE_NAME) for w in self.consumers],
            queues=[w.queue.queue for w in self.consumers], dlqs=[w.queue.dlq for w in self.consumers],
            glue_databases=[c.iceberg_glue_database for c in self.config.consumers if c.iceberg_glue_database],
            encryption_key=self.key, cleaner_role=self.cleaner_role,
        ).policy

    def _acknowledge_notifications_handler(self) -> None:
        """CDK's own Lambda that writes the bucket notification configuration uses the basic execution role."""
        for child in self.node.children:
            if child.node.id.startswith("BucketNotificationsHandler"):
                acknowledge(
                    child, "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AWSLambdaBasicExecutionRole]",
                    "CDK's notifications handler only writes its own CloudWatch logs through this managed policy.",
                )
