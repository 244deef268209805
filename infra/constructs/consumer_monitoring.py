"""One consumer's alarms on what its job reports, and its CloudWatch dashboard."""
from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from s3sqs.job import metrics as job_metrics

from infra.config import AlarmConfig, ConsumerConfig
from infra.constructs.alarms import QueueAlarms, job_alarms, job_metric
from infra.constructs.consumer_queue import ConsumerQueue
from infra.contract import dashboard_name


class ConsumerMonitoring(Construct):
    """One consumer's alarms on what its job reports (quarantined files, malformed rows, failed queries) and its
    dashboard.

    The job writes its per-batch figures as CloudWatch embedded metric format lines to its log group
    (s3sqs.job.metrics), under the consumer's queue name: the dimension SQS's own metrics use too.
    """

    def __init__(self, scope: Construct, id: str, *, consumer: ConsumerConfig, queue: ConsumerQueue,
                 queue_alarms: QueueAlarms, alarms: AlarmConfig, alarm_action: cloudwatch.IAlarmAction,
                 failed_jobs: cloudwatch.MathExpression, failed_jobs_alarm: cloudwatch.IAlarm) -> None:
        super().__init__(scope, id)
        self.alarms = job_alarms(self, consumer, queue.queue.queue_name, alarms, alarm_action)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=dashboard_name(Stack.of(self).stack_name, consumer.name),
            default_interval=Duration.hours(6),
            widgets=[
                [cloudwatch.TextWidget(width=24, height=2, markdown=(
                    f"**Consumer {consumer.name}**: its job's figures come from the EMF lines it logs after each "
                    f"batch. What a batch held, file by file: `source-state files --consumer "
                    f"{consumer.name} --batch N`; one file: `source-state lookup --consumer "
                    f"{consumer.name} KEY`."))],
                [cloudwatch.AlarmStatusWidget(
                    title=f"Alarms of consumer {consumer.name}", width=24, height=3,
                    alarms=[queue_alarms.oldest_message_age, queue_alarms.dlq_messages, *self.alarms,
                            failed_jobs_alarm])],
                _queue_widgets(queue, alarms),
                *_job_widgets(consumer, queue.queue.queue_name, alarms, failed_jobs),
            ],
        )


def _queue_widgets(queue: ConsumerQueue, alarms: AlarmConfig) -> list[cloudwatch.IWidget]:
    """The queue's backlog, its oldest message and its DLQ, from SQS's metrics and the job's own count."""
    period = Duration.seconds(alarms.period_seconds)
    sqs_max = {"period": period, "statistic": "Maximum"}
    q, dlq = queue.queue, queue.dlq
    return [
        _graph("Queue backlog", [
            q.metric_approximate_number_of_messages_visible(label="visible", **sqs_max),
            q.metric_approximate_number_of_messages_not_visible(label="in flight", **sqs_max),
            job_metric(q.queue_name, job_metrics.FILES_PENDING, period, "Maximum", "files recorded, not planned")]),
        _graph("Age of the oldest message (s)", [
            q.metric_approximate_age_of_oldest_message(label="oldest message", **sqs_max)],
            threshold=alarms.oldest_message_age_seconds),
        _graph("Dead-letter queue", [
            dlq.metric_approximate_number_of_messages_visible(label="messages", **sqs_max)],
            threshold=alarms.dlq_messages_threshold),
    ]


def _job_widgets(consumer: ConsumerConfig, queue_name: str, alarms: AlarmConfig,
                 failed_jobs: cloudwatch.MathExpression) -> list[list[cloudwatch.IWidget]]:
    """Two rows of what the job reports after each batch, and the application's failed runs."""
    period = Duration.seconds(alarms.period_seconds)

    def job(name: str, statistic: str = "Sum", label: str | None = None) -> cloudwatch.Metric:
        return job_metric(queue_name, name, period, statistic, label)

    return [
        [_graph("Files and rows in", [job(job_metrics.FILES_IN, label="files"),
                                      job(job_metrics.ROWS_IN, label="rows")]),
         _graph("Bytes in", [job(job_metrics.BYTES_IN, label="bytes")]),
         _graph("Skipped by the source", [job(job_metrics.DUPLICATES, label="duplicates"),
                                          job(job_metrics.FILTERED, label="filtered"),
                                          job(job_metrics.UNPARSEABLE, label="unparseable messages")])],
        # Files on the left, rows on the right (many more of them), each axis with its alarm's threshold.
        [_graph("Not read cleanly", [job(job_metrics.QUARANTINED, label="quarantined files"),
                                     job(job_metrics.MISSING, label="missing files"),
                                     job(job_metrics.NEW_COLUMNS, label="files with new columns")],
                threshold=alarms.quarantined_files_threshold,
                right=[job(job_metrics.MALFORMED, label="malformed rows")],
                right_threshold=alarms.malformed_rows_threshold),
         _graph("Source and batch time (ms)", [job(job_metrics.PLANNING_TIME, label="planning"),
                                               job(job_metrics.SNAPSHOT_TIME, label="snapshots"),
                                               job(job_metrics.BATCH_TIME, "Maximum", "longest batch")]),
         _graph("Failures", [job(job_metrics.QUERY_FAILURES, label=f"{consumer.name} query failures"),
                             failed_jobs.with_(period=period)])],
    ]


def _graph(title: str, metrics: list[cloudwatch.IMetric], threshold: int | None = None,
           right: list[cloudwatch.IMetric] | None = None, right_threshold: int | None = None) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=metrics, width=8, height=6, left_annotations=_alarm_line(threshold),
                                  right=right, right_annotations=_alarm_line(right_threshold))


def _alarm_line(threshold: int | None) -> list[cloudwatch.HorizontalAnnotation] | None:
    return [cloudwatch.HorizontalAnnotation(value=threshold, label="alarm")] if threshold else None
