"""The source cleaner on a schedule: a Lambda function started by an EventBridge rule."""
from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import AlarmConfig
from infra.constructs.alarms import cleaner_failures_alarm
from infra.log_groups import retained_log_group


class ScheduledCleaner(Construct):
    """The source cleaner on a schedule: a function that runs one cleaning run (s3sqs.cleaning.scheduled) as the
    cleaner role, started by an EventBridge rule. One run at a time (reserved concurrency 1); a run stops a
    minute before the function's 15-minute limit and the next takes up the rest. A failed run alarms."""

    def __init__(self, scope: Construct, id: str, *, role: iam.Role, schedule: str, config: dict, code_dir: str,
                 log_group_name: str, retention_days: int, encryption_key: kms.IKey | None, alarms: AlarmConfig,
                 alarm_action: cloudwatch.IAlarmAction) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        log_group = retained_log_group(self, "Logs", name=log_group_name, retention_days=retention_days,
                                       encryption_key=encryption_key)
        self.function = lambda_.Function(
            self, "Function",
            description=f"Archives or deletes source files of {stack.stack_name} that every consumer has committed",
            runtime=lambda_.Runtime.PYTHON_3_14, architecture=lambda_.Architecture.ARM_64,
            handler="s3sqs.cleaning.scheduled.handler",
            # The connector's own package: the cleaner needs only boto3 of what it imports, which Lambda has.
            code=lambda_.Code.from_asset(code_dir, exclude=["**/__pycache__", "*.egg-info", "**/*.pyc"]),
            role=role, timeout=Duration.minutes(15), memory_size=512, reserved_concurrent_executions=1,
            environment={"S3SQS_CLEANER": stack.to_json_string(config)}, log_group=log_group,
        )
        log_group.grant_write(role)
        events.Rule(self, "Schedule", description=f"Runs {stack.stack_name}'s source cleaner",
                    schedule=events.Schedule.expression(schedule),
                    targets=[events_targets.LambdaFunction(self.function, retry_attempts=2)])
        self.failures = cleaner_failures_alarm(self, self.function, alarms, alarm_action)
