"""The stack's outputs: what the operator tools and `cdk deploy --outputs-file` read."""
from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Aws, CfnOutput

from infra.consumers import ConsumerWiring
from infra.contract import dashboard_name
from s3sqs.core.layout import checkpoint_prefix, emr_logs_prefix, job_artifacts_prefix, output_prefix

if TYPE_CHECKING:
    from infra.stack import StreamingStack


def consumer_outputs(stack: StreamingStack, wiring: ConsumerWiring) -> dict[str, str]:
    """One consumer's entry in the Consumers output."""
    name = wiring.consumer.name
    return {
        "queueUrl": wiring.queue.queue.queue_url,
        "queueArn": wiring.queue.queue.queue_arn,
        "dlqUrl": wiring.queue.dlq.queue_url,
        "dlqArn": wiring.queue.dlq.queue_arn,
        "jobRoleArn": wiring.role.role.role_arn,
        "prefix": wiring.consumer.prefix,
        "checkpointUri": stack.checkpoint_bucket.s3_url_for_object(checkpoint_prefix(name)),
        "outputUri": stack.checkpoint_bucket.s3_url_for_object(output_prefix(name)),
        "artifactsUri": stack.artifacts_bucket.s3_url_for_object(job_artifacts_prefix(name)),
        "logUri": stack.artifacts_bucket.s3_url_for_object(emr_logs_prefix(name)),
        "logGroupName": wiring.log_group.log_group_name,
        "dashboardName": dashboard_name(stack.stack_name, name),
        # The only Glue database its job role may use for Iceberg tables ("" when it has none).
        "icebergGlueDatabase": wiring.consumer.iceberg_glue_database or "",
    }


def stack_outputs(stack: StreamingStack) -> None:
    """The stack-wide outputs, the Consumers JSON last."""
    # The tools take their region from here, so a shell set to another region cannot send them elsewhere.
    CfnOutput(stack, "Region", value=Aws.REGION, description="Region the stack is deployed in")
    CfnOutput(stack, "OperatorPolicyArn", value=stack.operator_policy.managed_policy_arn,
              description="Managed policy with what the operator tools call: attach it to the operators' role")
    CfnOutput(stack, "TopicArn", value=stack.topic.topic_arn, description="SNS fan-out topic")
    CfnOutput(stack, "SourceBucketName", value=stack.source_bucket.bucket_name,
              description="Bucket whose ObjectCreated events are streamed")
    CfnOutput(stack, "CheckpointBucketName", value=stack.checkpoint_bucket.bucket_name,
              description="Spark checkpoints and file index (checkpoints/<consumer>/), sink (output/<consumer>/)")
    CfnOutput(stack, "ArtifactsBucketName", value=stack.artifacts_bucket.bucket_name,
              description="Job code under jobs/<consumer>/; EMR job logs under emr-logs/<consumer>/")
    CfnOutput(stack, "AlarmTopicArn", value=stack.alarm_topic.topic.topic_arn,
              description="SNS topic every alarm of the stack notifies; subscribe more endpoints here")
    CfnOutput(stack, "EmrApplicationId", value=stack.application.attr_application_id,
              description="EMR Serverless application that runs the consumer jobs")
    CfnOutput(stack, "EmrReleaseLabel", value=stack.config.emr.release_label,
              description="Build the packed environment for this release's Python")
    CfnOutput(stack, "EmrArchitecture", value=stack.config.emr.architecture,
              description="Build the packed environment for this CPU architecture")
    if stack.key is not None:
        CfnOutput(stack, "KmsKeyArn", value=stack.key.key_arn, description="Customer-managed key of this stack")
    CfnOutput(stack, "Consumers", value=stack.to_json_string({w.consumer.name: consumer_outputs(stack, w)
                                                              for w in stack.consumers}),
              description="JSON: consumer name -> queueUrl, queueArn, dlqUrl, dlqArn, jobRoleArn, prefix, "
                          "checkpointUri, outputUri, artifactsUri, logUri, logGroupName, dashboardName, "
                          "icebergGlueDatabase")
