"""The StartJobRun request for one consumer's job, from the stack outputs, the dist/ manifest and the flags.

No I/O: submit-job without --apply prints exactly this, and the packaging proof runs it locally. Every id and
ARN comes from the stack outputs; the consumer is chosen by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from infra.contract import log_group_name
from s3sqs.core.layout import checkpoint_prefix, emr_logs_prefix, job_artifacts_prefix, output_prefix
from ops.cli import command
from ops.emr import SubmitError
from ops.packaging.target import (
    CONNECTOR_ARCHIVE_ALIAS, CONNECTOR_NAME, ENTRY_POINT_NAME, ENV_ARCHIVE_ALIAS, Target, arch_for,
)
from ops.stack_outputs import StackOutputs

ENV_PYTHON = f"./{ENV_ARCHIVE_ALIAS}/bin/python"
DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR = 5


@dataclass(frozen=True)
class JobSpec:
    """What the operator asked for; everything else comes from the stack outputs."""
    consumer: str
    format: str
    schema: str | None  # None: the job infers it
    output: str | None = None
    checkpoint: str | None = None
    partition_by: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    until_drained: bool = False
    region: str | None = None
    name: str | None = None
    trigger_interval: str | None = None
    max_failed_attempts_per_hour: int = DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR
    timeout_minutes: int | None = None
    spark_conf: tuple[str, ...] = ()
    tags: dict = field(default_factory=dict)
    # Only for runs against a local stand-in; on EMR the job reaches AWS's own endpoints.
    job_endpoint_url: str | None = None
    # The job's sink (see app/s3sqs/sinks): delta's table defaults to the output location, iceberg's
    # tables (in the Glue catalog) are created under it.
    sink: str = "parquet"
    table: str | None = None
    transform: str | None = None
    target_file_size: str | None = None
    # delta/iceberg: Spark's own writers unless "python" (EMR bundles their jars; see docs/emr.md)
    table_writer: str | None = None

    @property
    def writer(self) -> str | None:
        return self.table_writer or ("spark" if self.sink in ("delta", "iceberg") else None)

    @property
    def mode(self) -> str:
        return "BATCH" if self.until_drained else "STREAMING"

    @property
    def job_name(self) -> str:
        return self.name or f"s3sqs-{self.consumer}"


# Where a preview without dist/ shows the content digest that package-job's build will put in each key.
PREVIEW_DIGEST = "<package-job>"


def preview_manifest(emr_architecture: str | None) -> dict:
    """A stand-in for dist/manifest.json, so the request can be previewed before anything is built: the
    artifact names package-job will write for the stack's CPU, with a placeholder digest in their keys."""
    target = Target(arch=arch_for(emr_architecture or "X86_64"))
    names = (ENTRY_POINT_NAME, CONNECTOR_NAME, target.env_archive_name)
    return {"preview": True, "target": {"emr_architecture": target.emr_architecture},
            "entry_point": ENTRY_POINT_NAME, "connector": CONNECTOR_NAME, "environment": target.env_archive_name,
            "artifacts": {n: {"size": 0, "sha256": PREVIEW_DIGEST} for n in names}, "transform_modules": []}


@dataclass(frozen=True)
class ArtifactLocations:
    bucket: str
    keys: dict  # artifact file name -> S3 key

    def uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.keys[name]}"


def artifact_locations(manifest: dict, bucket: str, prefix: str) -> ArtifactLocations:
    """<prefix><sha256 prefix>/<file>: the key changes exactly when the content does, so a rebuilt archive
    never overwrites one a running job still reads."""
    keys = {name: f"{prefix}{meta['sha256'][:16]}/{name}" for name, meta in sorted(manifest["artifacts"].items())}
    return ArtifactLocations(bucket, keys)


@dataclass(frozen=True)
class ConsumerPlaces:
    """Where one consumer's job code and logs go: the only places its job role may read code from and write
    logs to, so another consumer's runs can neither read its code nor write into its logs."""
    artifacts_bucket: str
    artifacts_prefix: str
    log_uri: str
    log_group_name: str


def _split_s3_uri(uri: str, what: str) -> tuple[str, str]:
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise SubmitError(f"{what} {uri!r} in the stack outputs is not an s3://bucket/prefix/ URI")
    bucket, prefix = uri[5:].split("/", 1)
    return bucket, prefix


def consumer_places(outputs: StackOutputs, consumer: str) -> ConsumerPlaces:
    """From the consumer's own outputs; outputs that predate them fall back to the contract's names."""
    c = outputs.consumer(consumer)
    if c.artifacts_uri:
        bucket, prefix = _split_s3_uri(c.artifacts_uri, "artifactsUri")
    else:
        bucket, prefix = outputs.get("ArtifactsBucketName"), job_artifacts_prefix(consumer)
    log_uri = c.log_uri or f"s3://{outputs.get('ArtifactsBucketName')}/{emr_logs_prefix(consumer)}"
    return ConsumerPlaces(bucket, prefix, log_uri, c.log_group_name or log_group_name(outputs.stack_name, consumer))


def consumer_artifact_locations(manifest: dict, outputs: StackOutputs, consumer: str) -> ArtifactLocations:
    places = consumer_places(outputs, consumer)
    return artifact_locations(manifest, places.artifacts_bucket, places.artifacts_prefix)


def default_locations(outputs: StackOutputs, consumer: str) -> tuple[str, str]:
    """(checkpoint, output) under the prefixes the consumer's job role may write."""
    c = outputs.consumer(consumer)
    bucket = None if (c.checkpoint_uri and c.output_uri) else outputs.get("CheckpointBucketName")
    checkpoint = c.checkpoint_uri or f"s3://{bucket}/{checkpoint_prefix(consumer)}"
    output = c.output_uri or f"s3://{bucket}/{output_prefix(consumer)}"
    return checkpoint.rstrip("/"), output.rstrip("/")


def _check_conf(item: str) -> tuple[str, str]:
    if "=" not in item or not item.split("=", 1)[0]:
        raise SubmitError(f"--conf {item!r} must look like key=value")
    if any(c.isspace() for c in item):
        raise SubmitError(f"--conf {item!r} must not contain whitespace")
    k, v = item.split("=", 1)
    return k, v


def spark_submit_parameters(env_uri: str, connector_uri: str, extra_conf: tuple[str, ...] = ()) -> str:
    """The archive and interpreter settings EMR needs, then the operator's own --conf pairs."""
    confs = [
        ("spark.archives", f"{env_uri}#{ENV_ARCHIVE_ALIAS},"
                           f"{connector_uri}#{CONNECTOR_ARCHIVE_ALIAS}"),
        ("spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON", ENV_PYTHON),
        ("spark.emr-serverless.driverEnv.PYSPARK_PYTHON", ENV_PYTHON),
        ("spark.executorEnv.PYSPARK_PYTHON", ENV_PYTHON),
    ]
    fixed = {k for k, _ in confs}
    for item in extra_conf:
        k, v = _check_conf(item)
        if k in fixed:
            raise SubmitError(f"--conf {k} is set by submit-job; it cannot be overridden")
        confs.append((k, v))
    return " ".join(f"--conf {k}={v}" for k, v in confs)


def entry_point_arguments(spec: JobSpec, queue_url: str, checkpoint: str, output: str, region: str | None) -> list[str]:
    """The flags app/job.py takes, spelled by the job's own flag definitions (s3sqs.job.flags)."""
    from s3sqs.job.flags import job_argv

    options = []
    for opt in spec.options:
        key, sep, value = opt.partition("=")
        if not sep or not key.strip():
            raise SubmitError(f"--option {opt!r} must look like key=value")
        options.append((key.strip(), value))
    return job_argv({
        "queue_url": queue_url, "format": spec.format, "schema": spec.schema, "checkpoint": checkpoint,
        "output": output, "partition_by": tuple(spec.partition_by), "region": region,
        "endpoint_url": spec.job_endpoint_url, "trigger_interval": spec.trigger_interval,
        "until_drained": spec.until_drained, "sink": spec.sink, "table": spec.table, "transform": spec.transform,
        "target_file_size": spec.target_file_size, "option": options, "name": spec.job_name,
        "table_writer": spec.writer})


def check_sink(spec: JobSpec, output: str, manifest: dict):
    """The job's own check of its sink flags, run here so a mistake fails now, not on EMR minutes later;
    and a --transform module must travel in the connector archive."""
    import argparse

    from s3sqs.sinks import SinkError
    from s3sqs.sinks.kinds import from_flags

    flags = argparse.Namespace(
        sink=spec.sink, table=spec.table, output=output, partition_by=list(spec.partition_by),
        transform=spec.transform, target_file_size=spec.target_file_size, catalog=None,
        catalog_uri=None, warehouse=None, endpoint_url=None, region=spec.region, table_writer=spec.writer)
    try:
        cfg = from_flags(flags)
    except SinkError as e:
        raise SubmitError(str(e)) from None
    if spec.transform and not manifest.get("preview"):  # without dist/, package-job has not chosen them yet
        module = spec.transform.split(":", 1)[0].split(".")[0]
        shipped = manifest.get("transform_modules", [])
        if module not in shipped:
            raise SubmitError(f"--transform {spec.transform}: module {module!r} is not in dist/ (it has "
                              f"{', '.join(shipped) or 'none'}); run {command('package-job')} --transform-module "
                              f"PATH/{module}.py (or its package folder)")
    return cfg


def table_writer_conf(sink) -> tuple[str, ...]:
    """Spark's own table writers: EMR's bundled jars on the classpath, and the session settings the job
    also sets itself (its sink kind's session_conf), so the request shows what the job runs with."""
    return tuple(f"{k}={v}" for k, v in sink.emr_conf().items())


def build_start_job_run_request(
    outputs: StackOutputs, spec: JobSpec, locations: ArtifactLocations, manifest: dict, client_token: str,
) -> dict:
    consumer = outputs.consumer(spec.consumer)  # raises for an unknown consumer, naming the known ones
    places = consumer_places(outputs, spec.consumer)
    checkpoint_default, output_default = default_locations(outputs, spec.consumer)
    checkpoint = (spec.checkpoint or checkpoint_default).rstrip("/")
    output = (spec.output or output_default).rstrip("/")
    if not 1 <= spec.max_failed_attempts_per_hour <= 10:
        raise SubmitError("--max-failed-attempts-per-hour must be between 1 and 10")
    sink = check_sink(spec, output, manifest)
    request = {
        "applicationId": outputs.get("EmrApplicationId"),
        "clientToken": client_token,
        "executionRoleArn": consumer.job_role_arn,
        "name": spec.job_name,
        "mode": spec.mode,
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": locations.uri(manifest["entry_point"]),
                "entryPointArguments": entry_point_arguments(spec, consumer.queue_url, checkpoint, output,
                                                             spec.region),
                "sparkSubmitParameters": spark_submit_parameters(
                    locations.uri(manifest["environment"]), locations.uri(manifest["connector"]),
                    table_writer_conf(sink) + spec.spark_conf),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {
                # The consumer's own log prefix and log group: the only ones its job role may write to.
                "s3MonitoringConfiguration": {"logUri": places.log_uri},
                "cloudWatchLoggingConfiguration": {
                    "enabled": True,
                    "logGroupName": places.log_group_name,
                    "logStreamNamePrefix": spec.consumer,
                },
            }
        },
        "tags": {"s3sqs:consumer": spec.consumer, **spec.tags},
    }
    if spec.mode == "STREAMING":
        # EMR restarts a failed streaming run from its checkpoint, at most this often per hour.
        request["retryPolicy"] = {"maxFailedAttemptsPerHour": spec.max_failed_attempts_per_hour}
        # 0 = never time out: a streaming run is meant to keep going.
        request["executionTimeoutMinutes"] = spec.timeout_minutes if spec.timeout_minutes is not None else 0
    elif spec.timeout_minutes is not None:
        request["executionTimeoutMinutes"] = spec.timeout_minutes
    return request


def validate_request(request: dict) -> None:
    """Check the request against botocore's EMR Serverless model (field names, types, lengths, enums)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("emr-serverless")
    shape = model.operation_model("StartJobRun").input_shape
    report = ParamValidator().validate(request, shape)
    if report.has_errors():
        raise SubmitError("the StartJobRun request is invalid:\n" + report.generate_report())
