"""Reads the JSON that `cdk deploy --outputs-file` writes, so nobody copies ids and ARNs by hand.

The stack publishes one output per shared resource plus `Consumers`, a JSON object keyed by consumer
name. The local stand-in (infra/local_stand_in.py) returns the same shape, so scripts work on both.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ops.errors import OperatorError
from s3sqs.core.names import did_you_mean


class OutputsError(OperatorError, ValueError):
    """The outputs file is missing, malformed, or lacks what was asked for."""


@dataclass(frozen=True)
class ConsumerOutputs:
    name: str
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    job_role_arn: str
    prefix: str
    checkpoint_uri: str = ""  # where this consumer's job may keep checkpoints ("" if not published)
    output_uri: str = ""      # where it may write its table
    artifacts_uri: str = ""   # where its job code is uploaded, the only artifacts its job role may read
    log_uri: str = ""         # where EMR writes its job logs, the only place there its job role may write
    log_group_name: str = ""  # its CloudWatch Logs group
    dashboard_name: str = ""  # its CloudWatch dashboard
    # The Glue database its job role may keep Iceberg tables in: "" for none, None when the outputs predate it.
    iceberg_glue_database: str | None = None


@dataclass(frozen=True)
class StackOutputs:
    stack_name: str
    values: dict

    def get(self, key: str) -> str:
        try:
            return self.values[key]
        except KeyError:
            raise OutputsError(
                f"stack {self.stack_name!r} has no output {key!r}; it has: {', '.join(sorted(self.values))}. "
                "Re-run `cdk deploy --outputs-file` with the current infra/ code."
            ) from None

    def consumer_names(self) -> list[str]:
        return sorted(self._consumers())

    def consumer(self, name: str) -> ConsumerOutputs:
        consumers = self._consumers()
        if name not in consumers:
            known = ", ".join(sorted(consumers)) or "none"
            raise OutputsError(f"unknown consumer {name!r}{did_you_mean(name, consumers)}; the stack defines: {known}")
        c = consumers[name]
        try:
            return ConsumerOutputs(
                name=name, queue_url=c["queueUrl"], queue_arn=c["queueArn"], dlq_url=c["dlqUrl"],
                dlq_arn=c["dlqArn"], job_role_arn=c["jobRoleArn"], prefix=c.get("prefix", ""),
                checkpoint_uri=c.get("checkpointUri", ""), output_uri=c.get("outputUri", ""),
                artifacts_uri=c.get("artifactsUri", ""), log_uri=c.get("logUri", ""),
                log_group_name=c.get("logGroupName", ""), dashboard_name=c.get("dashboardName", ""),
                iceberg_glue_database=c.get("icebergGlueDatabase"),
            )
        except KeyError as e:
            raise OutputsError(f"consumer {name!r} in output 'Consumers' lacks {e.args[0]!r}") from None

    def _consumers(self) -> dict:
        raw = self.get("Consumers")
        try:
            consumers = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as e:
            raise OutputsError(f"output 'Consumers' is not valid JSON: {e}") from None
        if not isinstance(consumers, dict):
            raise OutputsError("output 'Consumers' must be a JSON object keyed by consumer name")
        return consumers


def load_outputs(path: str | Path, stack_name: str | None = None) -> StackOutputs:
    """Load one stack's outputs; with one stack in the file, stack_name may be omitted."""
    p = Path(path)
    if not p.is_file():
        raise OutputsError(f"outputs file {str(p)!r} not found; create it with `cdk deploy --outputs-file {p}` "
                           "(or `make local-stack` for a local one)")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise OutputsError(f"outputs file {str(p)!r} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not data or not all(isinstance(v, dict) for v in data.values()):
        raise OutputsError(f"outputs file {str(p)!r} must map stack names to objects of outputs")
    if stack_name is None:
        if len(data) != 1:
            raise OutputsError(f"outputs file has stacks {', '.join(sorted(data))}; choose one with --stack")
        stack_name = next(iter(data))
    if stack_name not in data:
        raise OutputsError(f"stack {stack_name!r} not in outputs file; it has {', '.join(sorted(data))}")
    return StackOutputs(stack_name, data[stack_name])
