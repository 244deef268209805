"""`make local-stack` / `make local-stack-stop`: a moto server with the stack's wiring that the operator scripts
run against exactly as the docs show, ended by its recorded PID."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from infra import STACK_NAME
from devtools.local_aws import EXAMPLE_CDK_JSON, free_port
from ops.local_stack import LocalStackError, stack
from tests.ops.helpers import REPO, run_script


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=300)


# What an operator's shell may hold after the README's AWS steps: each would send the tools elsewhere.
ELSEWHERE = {"AWS_PROFILE": "my-admin", "AWS_DEFAULT_PROFILE": "my-admin", "AWS_SESSION_TOKEN": "token-of-other-keys",
             "AWS_ENDPOINT_URL_S3": "https://s3.example.com", "AWS_ENDPOINT_URL_SQS": "https://sqs.example.com",
             "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}


def sourced_env(env_file) -> dict:
    """The environment of a shell that held ELSEWHERE, then ran `source .local-stack/env`."""
    r = subprocess.run(["bash", "-c", f"source {env_file} && env -0"], env={**os.environ, **ELSEWHERE},
                       capture_output=True, text=True, timeout=30, check=True)
    return dict(item.split("=", 1) for item in r.stdout.split("\0") if "=" in item)


def alive(pid: int) -> bool:
    return stack._is_moto(pid)


def test_make_local_stack_serves_the_scripts_and_stop_ends_it(tmp_path):
    state, outputs_file, port = tmp_path / "state", tmp_path / "cdk-outputs.json", free_port()
    where = [f"PORT={port}", f"LOCAL_STACK_DIR={state}", f"OUTPUTS_FILE={outputs_file}", f"CDK_JSON={EXAMPLE_CDK_JSON}"]
    started = make("local-stack", *where)
    pid = int((state / "moto.pid").read_text()) if (state / "moto.pid").exists() else None
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert pid and alive(pid)
        # The shape `cdk deploy --outputs-file` writes: one stack, its outputs, Consumers as JSON text.
        outputs = json.loads(outputs_file.read_text())
        assert list(outputs) == [STACK_NAME]
        consumers = json.loads(outputs[STACK_NAME]["Consumers"])
        assert {"ingest", "analytics"} <= set(consumers)
        assert consumers["ingest"]["queueUrl"].startswith(f"http://127.0.0.1:{port}/")
        env = sourced_env(state / "env")
        assert env["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{port}" and env["AWS_ACCESS_KEY_ID"] == "testing"
        assert not set(ELSEWHERE) & set(env), "the env file leaves what sends the tools elsewhere"
        assert "clears AWS_PROFILE" in started.stdout and "open another shell for AWS" in started.stdout

        # As the docs show: from the directory holding cdk-outputs.json, after `source .local-stack/env`.
        r = run_script("job-runs", "list", env=env, cwd=tmp_path)
        assert r.returncode == 0 and f"no job runs on application {outputs[STACK_NAME]['EmrApplicationId']}" in r.stdout
        r = run_script("redrive-dlq", "inspect", "--consumer", "ingest", env=env, cwd=tmp_path)
        assert r.returncode == 0 and "messages: 0 (0 visible" in r.stdout, r.stderr
        r = run_script("onboard-account", "--consumer-account", "111122223333", "--principal-arn-like",
                       "arn:aws:iam::111122223333:role/analytics-*", "--consumer", "analytics",
                       "--cdk-json", str(EXAMPLE_CDK_JSON), env=env, cwd=tmp_path)
        assert r.returncode == 0 and "# dry run: 2 of 2 policies would change" in r.stdout, r.stderr

        again = make("local-stack", *where)
        assert again.returncode == 2 and f"a local stack is already running (PID {pid}" in again.stderr

        stopped = make("local-stack-stop", f"LOCAL_STACK_DIR={state}")
        assert stopped.returncode == 0 and f"stopped the moto server (PID {pid})" in stopped.stderr
        assert not alive(pid)
        assert not outputs_file.exists() and not (state / "moto.pid").exists() and not (state / "env").exists()
        assert "no local stack is running" in make("local-stack-stop", f"LOCAL_STACK_DIR={state}").stderr
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_real_deployment_s_outputs_file_is_never_overwritten(tmp_path):
    real = tmp_path / "cdk-outputs.json"
    real.write_text(json.dumps({STACK_NAME: {"Consumers": json.dumps({
        "ingest": {"queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/ingest"}})}}))
    before = real.read_bytes()
    with pytest.raises(LocalStackError, match="is not a local stack's"):
        stack.start(free_port(), real, tmp_path / "state", log=lambda m: None)
    assert real.read_bytes() == before and not (tmp_path / "state" / "moto.pid").exists()


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path, moto_server):
    port = int(moto_server.endpoint_url.rsplit(":", 1)[1])
    with pytest.raises(LocalStackError, match=f"port {port} on 127.0.0.1 is in use"):
        stack.start(port, tmp_path / "o.json", tmp_path / "state", log=lambda m: None)
    assert not (tmp_path / "state" / "moto.pid").exists()


def test_a_stale_pid_is_not_killed(tmp_path):
    """A recorded PID that is no longer a moto server (the machine rebooted, the PID was reused) is left alone."""
    state = tmp_path / "state"
    state.mkdir()
    other = subprocess.Popen(["sleep", "60"])
    try:
        (state / "moto.pid").write_text(f"{other.pid}\n")
        assert stack.stop(state, log=lambda m: None) is False
        assert other.poll() is None and not (state / "moto.pid").exists()
    finally:
        other.kill()
        other.wait()


def test_local_outputs_are_recognised_by_their_queue_urls():
    def outputs(url):
        return {"S": {"Consumers": json.dumps({"a": {"queueUrl": url}})}}
    assert stack.is_local_outputs(outputs("http://127.0.0.1:5000/123456789012/q"))
    assert not stack.is_local_outputs(outputs("https://sqs.us-east-1.amazonaws.com/123456789012/q"))
    assert not stack.is_local_outputs({}) and not stack.is_local_outputs({"S": {"TopicArn": "x"}})


def test_run_job_refuses_a_real_deployment_s_outputs(tmp_path):
    real = tmp_path / "cdk-outputs.json"
    real.write_text(json.dumps({STACK_NAME: {"Consumers": json.dumps({"orders": {
        "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"}})}}))
    r = run_script("local-stack", "run-job", "--consumer", "orders", "--format", "csv", "--outputs-file", str(real),
                   "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert r.returncode == 2 and "is not a local stack's" in r.stderr and "use submit-job" in r.stderr, r.stderr
