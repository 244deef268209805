"""What EMR Serverless does with a StartJobRun request, as a spark-submit on this machine against the stand-in.

No I/O but finding the S3A jars: the request, the local paths of its artifacts and the stand-in's endpoint
in; the command line and the driver's environment out. What is the same as on EMR: the request submit-job builds, unchanged (archives,
interpreters, the job's flags, the consumer's s3:// checkpoint and output); `spark.emr-serverless.driverEnv.*`
becomes the driver's environment. What differs: `--master local[2]`, no Spark UI, the artifacts' s3:// URIs
replaced by the dist/ files, and s3:// read and written through Hadoop's S3A filesystem on the stand-in, where
EMR has EMRFS.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from devtools.jars import s3a_conf
from devtools.local_aws import FAKE_ENV

DRIVER_ENV_PREFIX = "spark.emr-serverless.driverEnv."
# EMR's emr-spark-8.0.0 runs Spark 4.0.2; the pinned S3A jars fit its Hadoop (3.4.1).
EMR_SPARK = "4.0.2"
LOCAL_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}


def spark_submit_args(request: dict, local_paths: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The request's spark-submit arguments and driver environment, its s3:// artifact URIs replaced by the local
    paths in `local_paths` (URI -> path)."""
    driver = request["jobDriver"]["sparkSubmit"]

    def localize(text: str) -> str:
        for uri, path in local_paths.items():
            text = text.replace(uri, path)
        return text

    argv, env = [], {}
    words = shlex.split(driver.get("sparkSubmitParameters", ""))
    i = 0
    while i < len(words):
        if words[i] == "--conf":
            k, v = words[i + 1].split("=", 1)
            if k.startswith(DRIVER_ENV_PREFIX):
                env[k[len(DRIVER_ENV_PREFIX):]] = v
            else:
                argv += ["--conf", f"{k}={localize(v)}"]
            i += 2
        else:
            argv.append(localize(words[i]))
            i += 1
    argv.append(localize(driver["entryPoint"]))
    argv += [localize(a) for a in driver.get("entryPointArguments", [])]
    return argv, env


def s3_conf(endpoint_url: str, region: str) -> dict[str, str]:
    """Hadoop's s3:// on the stand-in: S3A (the benchmarks' s3a:// settings: path-style over plain HTTP, the
    driver environment's fake keys, so no key is on the command line) for the scheme EMRFS serves on EMR,
    where Spark's checkpoint and file sink write."""
    return {**s3a_conf(endpoint_url, region), "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A"}


def local_command(spark_home: Path, request: dict, local_paths: dict[str, str], endpoint_url: str,
                  region: str) -> list[str]:
    """The spark-submit command line of the request's run on the stand-in."""
    argv, _ = spark_submit_args(request, local_paths)
    conf = {**LOCAL_CONF, **s3_conf(endpoint_url, region)}
    head = [str(spark_home / "bin" / "spark-submit"), "--master", "local[2]"]
    for k, v in conf.items():
        head += ["--conf", f"{k}={v}"]
    return head + argv


def driver_environment(request: dict, spark_home: Path, inherited: dict[str, str]) -> dict[str, str]:
    """The driver's environment: what EMR sets (the request's driverEnv), the stand-in's fake credentials and
    region, and from `inherited` only what finds Java and a temporary folder. Nothing else of the caller's
    (no AWS_PROFILE, no virtualenv, no PYTHONPATH): every connector import comes from the two archives."""
    _, driver_env = spark_submit_args(request, {})
    env = {"PATH": inherited.get("PATH", "/usr/bin:/bin"), "HOME": inherited.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1", **FAKE_ENV, **driver_env}
    env.update({k: inherited[k] for k in ("JAVA_HOME", "TMPDIR") if k in inherited})
    return env
