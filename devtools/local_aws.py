"""The local AWS stand-in: a real moto server on 127.0.0.1, run as a child process and stopped by its PID."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import tempfile
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# The two-account example: every cdk.json key, consumers `ingest` (the whole bucket) and `analytics` (under
# analytics/). The tests' stack (tests/conftest.py) and the benchmarks' wiring, whatever the checkout's cdk.json holds.
EXAMPLE_CDK_JSON = Path(__file__).resolve().parents[1] / "examples" / "cdk.two-accounts.json"

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@contextmanager
def local_aws(log_path: Path | None = None) -> Iterator["MotoServer"]:
    """For a script: fake credentials in this process's environment and a moto server, stopped on the way out."""
    os.environ.update(FAKE_ENV)
    server = start_moto_server(log_path)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def work_dir(keep: str | None) -> Iterator[Path]:
    """`keep` (created, and kept), or a temporary folder removed on the way out."""
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield Path(keep)
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MotoServer:
    process: subprocess.Popen
    endpoint_url: str

    def reset(self) -> None:
        """Drop every resource on the server, so a test starts from nothing."""
        req = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_moto_server(log_path: Path | None = None, port: int | None = None, detached: bool = False,
                      env: dict[str, str] | None = None, module: str | None = None) -> MotoServer:
    """A moto server on 127.0.0.1 (on `port`, else a free one). `detached` puts it in a session of its own, so it
    outlives the command that started it and a Ctrl-C in that terminal (`make local-stack`). `env`: more of
    moto's settings, such as MOTO_RECORDER_FILEPATH for a recording of every request; `module`: a Python module
    that serves moto its own way (devtools.iam.recording_server)."""
    port = port or free_port()
    bin_dir = Path(sys.executable).parent
    exe = bin_dir / "moto_server"
    cmd = [sys.executable, "-m", module] if module else [str(exe)] if exe.exists() else [sys.executable, "-m",
                                                                                          "moto.server"]
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen(
        cmd + ["-H", "127.0.0.1", "-p", str(port)],
        stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **FAKE_ENV, **(env or {})},
        start_new_session=detached,
    )
    if log_path:
        out.close()  # the child has its own copy
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with code {proc.returncode} before it was ready")
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).read()
            return MotoServer(proc, endpoint)
        except OSError:
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise RuntimeError("moto_server did not answer within 60 s")


def wire_consumer(endpoint_url: str, name: str, max_receive_count: int | None = None, consumer: str = "ingest",
                  region: str = "us-east-1"):
    """A fresh copy of the stack's own wiring for one consumer, as `cdk deploy` creates it: the source bucket
    -> the SNS fan-out topic -> the consumer's queue and dead-letter queue, taken from the synthesized template
    (infra/local_stand_in.py) of the two-account example, with every name prefixed by `name`. `max_receive_count` replaces its on the
    queue's redrive policy. Returns the stand-in's ConsumerPath (bucket, queue_url, dlq_url)."""
    import json

    import boto3

    from infra.local_stand_in import deploy_consumer_path, synth_template

    path = deploy_consumer_path(synth_template(cdk_json=EXAMPLE_CDK_JSON), endpoint_url, consumer, f"{name}-", region)
    if max_receive_count is not None:
        sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name=region)
        policy = json.loads(sqs.get_queue_attributes(QueueUrl=path.queue_url, AttributeNames=["RedrivePolicy"])
                            ["Attributes"]["RedrivePolicy"])
        policy["maxReceiveCount"] = str(max_receive_count)
        sqs.set_queue_attributes(QueueUrl=path.queue_url, Attributes={"RedrivePolicy": json.dumps(policy)})
    return path
