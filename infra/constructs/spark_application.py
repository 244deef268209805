"""The EMR Serverless Spark application the consumers' jobs run on."""
from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_emrserverless as emrs
from constructs import Construct

from infra.config import EmrConfig


class SparkApplication(Construct):
    """EMR Serverless Spark application that starts on demand and stops when idle.

    It sets no application-wide S3 or CloudWatch log destination: each consumer's runs log to that
    consumer's own prefix and log group, which submit-job names per run, and a shared default would name
    a place no job role may write.
    """

    def __init__(self, scope: Construct, id: str, *, emr: EmrConfig) -> None:
        super().__init__(scope, id)
        self.application = emrs.CfnApplication(
            self,
            "Application",
            name=f"{Stack.of(self).stack_name}-spark",
            type="SPARK",
            release_label=emr.release_label,
            architecture=emr.architecture,
            auto_start_configuration=emrs.CfnApplication.AutoStartConfigurationProperty(enabled=True),
            auto_stop_configuration=emrs.CfnApplication.AutoStopConfigurationProperty(
                enabled=True, idle_timeout_minutes=emr.idle_timeout_minutes
            ),
            maximum_capacity=emrs.CfnApplication.MaximumAllowedResourcesProperty(
                cpu=f"{emr.max_vcpu} vCPU", memory=f"{emr.max_memory_gb} GB", disk=f"{emr.max_disk_gb} GB"
            ),
        )
        # EMR Serverless counts job runs that ended FAILED in AWS/EMRServerless `FailedJobs`, per minute and per
        # application (the consumers' jobs share this one). From release 7.10, and so on emr-spark-8.0.0, it
        # publishes it with ApplicationName and JobName dimensions beside ApplicationId and stops updating the
        # ApplicationId-only series. An alarm on a plain metric must name its exact dimension set, and a wrong
        # guess never fires, so this is a Metrics Insights query: the largest FailedJobs of any series of this
        # application, whichever dimensions EMR adds.
        self.failed_jobs = cloudwatch.MathExpression(
            expression=f"SELECT MAX(FailedJobs) FROM \"AWS/EMRServerless\" "
                       f"WHERE ApplicationId = '{self.application.attr_application_id}'",
            using_metrics={}, label="failed job runs (application)", period=Duration.minutes(5),
        )
