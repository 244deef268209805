"""CloudWatch and EventBridge on the stand-in: log groups, alarms, dashboards and schedule rules (none fires)."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from infra.stand_in.template import short

if TYPE_CHECKING:
    from infra.stand_in.deployer import Deployer


def log_group(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    logs = d.client("logs")
    name = p.get("LogGroupName") or short(lid, 512)
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=name)
    if "RetentionInDays" in p:
        logs.put_retention_policy(logGroupName=name, retentionInDays=int(p["RetentionInDays"]))
    return {"Ref": name, "Arn": f"arn:aws:logs:{d.region}:{d.account_id}:log-group:{name}:*"}


def alarm(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    """Metric math and Metrics Insights alarms too."""
    p = d.resolve(props)
    name = p.get("AlarmName") or lid
    kwargs = {k: p[k] for k in (
        "AlarmDescription", "ComparisonOperator", "EvaluationPeriods", "MetricName", "Namespace",
        "Period", "Statistic", "Threshold", "TreatMissingData", "Dimensions", "DatapointsToAlarm",
        "AlarmActions", "OKActions", "Metrics",
    ) if k in p}
    for k in ("EvaluationPeriods", "Period", "DatapointsToAlarm"):
        if k in kwargs:
            kwargs[k] = int(kwargs[k])
    for query in kwargs.get("Metrics", ()):
        if "Period" in query:
            query["Period"] = int(query["Period"])
    if "Threshold" in kwargs:
        kwargs["Threshold"] = float(kwargs["Threshold"])
    d.client("cloudwatch").put_metric_alarm(AlarmName=name, **kwargs)
    return {"Ref": name, "Arn": f"arn:aws:cloudwatch:{d.region}:{d.account_id}:alarm:{name}"}


def events_rule(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    """The source cleaner's schedule: created with its targets; nothing runs."""
    p = d.resolve(props)
    name = short(f"{d.prefix}{lid}", 64)
    events = d.client("events")
    arn = events.put_rule(Name=name, **{k: p[k] for k in ("ScheduleExpression", "EventPattern", "State",
                                                           "Description") if k in p})["RuleArn"]
    if p.get("Targets"):
        events.put_targets(Rule=name, Targets=p["Targets"])
    return {"Ref": name, "Arn": arn}


def dashboard(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    name = p.get("DashboardName") or lid
    d.client("cloudwatch").put_dashboard(DashboardName=name, DashboardBody=p["DashboardBody"])
    return {"Ref": name}


HANDLERS = {
    "AWS::Logs::LogGroup": log_group,
    "AWS::CloudWatch::Alarm": alarm,
    "AWS::CloudWatch::Dashboard": dashboard,
    "AWS::Events::Rule": events_rule,
}
