"""Starting and stopping the local stack: the server process, the wiring on it, and the files it leaves.

The wiring is the synthesized template's own (infra/local_stand_in.py). The server's PID, log, the fake
credentials to use and a fingerprint of the outputs file written live in the state directory
(.local-stack/); stop ends the server by that PID and removes the outputs file only if it is still the one
written here.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

from devtools import processes
from devtools.local_aws import FAKE_ENV, start_moto_server
from ops.local_stack import LocalStackError

DEFAULT_PORT = 5000  # moto's own default
DEFAULT_STATE_DIR = Path(".local-stack")
REGION = FAKE_ENV["AWS_DEFAULT_REGION"]


class StatePaths:
    """The files of the state directory `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pid = root / "moto.pid"
        self.log = root / "moto.log"
        self.env = root / "env"
        # Where the outputs file went, and its sha256 when written.
        self.outputs = root / "outputs-written.json"


# What would send the tools elsewhere than the stand-in: a profile (one missing here fails every call, one
# present brings its own keys' region and settings), a session token or role that belongs to other keys, the
# switch that makes botocore ignore AWS_ENDPOINT_URL, and per-service endpoints, which it prefers to that one.
CLEARED = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN",
           "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")


def use_stand_in_credentials(environ=os.environ) -> None:
    """This process talks to the stand-in only: the caller's profile, keys and endpoints must not reach it (a
    profile missing here would fail every call), so they go, and the stand-in's fake keys come in."""
    for name in [*CLEARED, *(k for k in environ if k.startswith("AWS_ENDPOINT_URL_"))]:
        environ.pop(name, None)
    environ.update({k: FAKE_ENV[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")})


def env_lines(endpoint_url: str) -> list[str]:
    """What `source .local-stack/env` does: clear what would send the tools to AWS (CLEARED, AWS_ENDPOINT_URL_*),
    then set fake credentials, the region, and the endpoint for every AWS client (botocore reads
    AWS_ENDPOINT_URL), so the scripts need no --endpoint-url."""
    values = {"AWS_ACCESS_KEY_ID": FAKE_ENV["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": FAKE_ENV["AWS_SECRET_ACCESS_KEY"],
              "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ENDPOINT_URL": endpoint_url}
    return [f"# The local stack at {endpoint_url}: every AWS tool and SDK in this shell goes there, with fake keys.",
            f"# It clears {', '.join(CLEARED)} and AWS_ENDPOINT_URL_*: use another shell for AWS.",
            f"unset {' '.join(CLEARED)}",
            "for _s3sqs_var in $(env | sed -n 's/^\\(AWS_ENDPOINT_URL_[A-Za-z0-9_]*\\)=.*/\\1/p'); do "
            'unset "$_s3sqs_var"; done; unset _s3sqs_var',
            *(f"export {k}={v}" for k, v in values.items())]


def is_local_outputs(data: dict) -> bool:
    """Whether an outputs file points at a local endpoint (every queue URL on 127.0.0.1 or localhost)."""
    try:
        consumers = json.loads(next(iter(data.values()))["Consumers"])
        urls = [c["queueUrl"] for c in consumers.values()]
    except (StopIteration, KeyError, TypeError, AttributeError, json.JSONDecodeError):
        return False
    return bool(urls) and all(u.startswith(("http://127.0.0.1:", "http://localhost:")) for u in urls)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _running_pid(paths: StatePaths) -> int | None:
    """The recorded PID if that process still is a moto server; a stale record is removed."""
    try:
        pid = int(paths.pid.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    if _is_moto(pid):
        return pid
    paths.pid.unlink(missing_ok=True)
    return None


def _is_moto(pid: int) -> bool:
    """Whether `pid` is alive and runs moto (a recycled PID must never be killed)."""
    proc = Path(f"/proc/{pid}/cmdline")
    if proc.exists():
        try:
            return b"moto" in proc.read_bytes()
        except OSError:
            return False
    result = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True)
    return result.returncode == 0 and "moto" in result.stdout


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start(port: int, outputs_file: Path, state_dir: Path, log: Callable[[str], None], cdk_json: Path | None = None,
          context: dict | None = None) -> dict:
    """Start the server, build on it the wiring of the stack `cdk_json` (default: the checkout's) describes, its
    top-level keys replaced by `context`, and write the outputs file; returns the outputs."""
    from infra.local_stand_in import create_operator_buckets, deploy_to_moto, write_outputs_file

    paths = StatePaths(state_dir)
    pid = _running_pid(paths)
    if pid:
        raise LocalStackError(f"a local stack is already running (PID {pid}, state in {state_dir}): "
                              "stop it first with `make local-stack-stop`")
    if outputs_file.exists():
        try:
            data = json.loads(outputs_file.read_text())
        except json.JSONDecodeError:
            data = {}
        if not is_local_outputs(data):
            raise LocalStackError(f"{outputs_file} exists and is not a local stack's (a real deployment's?): move it "
                                  "away, or write the local one elsewhere with --outputs-file")
    if not _port_free(port):
        raise LocalStackError(f"port {port} on 127.0.0.1 is in use: stop what uses it, or choose another port "
                              "(make local-stack PORT=5001, or --port)")
    paths.root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log(f"[1/3] starting a moto server on http://127.0.0.1:{port} (log: {paths.log})")
    server = start_moto_server(paths.log, port=port, detached=True)
    paths.pid.write_text(f"{server.process.pid}\n")
    try:
        log(f"[2/3] synthesizing the stack from {cdk_json or 'cdk.json'}"
            + (f" with {', '.join(sorted(context))} replaced" if context else "") + " (about 10 s)")
        template = _template(cdk_json, context)
        log("[3/3] creating its buckets, topic, queues, policies, roles and EMR application on the server")
        outputs = deploy_to_moto(template, server.endpoint_url, REGION)
        for bucket in create_operator_buckets(outputs, server.endpoint_url, REGION):
            log(f"created bucket {bucket}, sourceCleaning's archive: on AWS it is yours to create (the stack does not)")
    except BaseException:
        stop(state_dir, log=lambda m: None)  # nothing half-made stays behind
        raise
    write_outputs_file(outputs, outputs_file)
    paths.outputs.write_text(json.dumps({"path": str(outputs_file.resolve()), "sha256": _sha256(outputs_file)}) + "\n")
    paths.env.write_text("\n".join(env_lines(server.endpoint_url)) + "\n")
    log(f"ready in {time.monotonic() - started:.0f} s: PID {server.process.pid}, outputs in {outputs_file}")
    return outputs


def _template(cdk_json: Path | None, context: dict | None) -> dict:
    """The synthesized template, or the cdk.json problem in one line."""
    from infra.config import ConfigError
    from infra.local_stand_in import synth_template

    try:
        return synth_template(context, cdk_json)
    except FileNotFoundError as e:
        raise LocalStackError(f"--cdk-json {cdk_json}: no such file") from e
    except json.JSONDecodeError as e:
        raise LocalStackError(f"{cdk_json or 'cdk.json'} is not JSON: {e}") from None
    except ConfigError as e:
        raise LocalStackError(f"{cdk_json or 'cdk.json'}: the context is invalid: {e}") from None


def stop(state_dir: Path, log: Callable[[str], None] = print, timeout: float = 10) -> bool:
    """End the recorded server by its PID and remove what start wrote; False when nothing was running."""
    paths = StatePaths(state_dir)
    pid = _running_pid(paths)
    if pid:
        processes.terminate(lambda sig: os.kill(pid, sig), lambda: _is_moto(pid), timeout, lambda: processes.reap(pid))
        log(f"stopped the moto server (PID {pid})")
    else:
        log(f"no local stack is running (no live PID in {paths.pid})")
    paths.pid.unlink(missing_ok=True)
    paths.env.unlink(missing_ok=True)
    if paths.outputs.exists():
        written = json.loads(paths.outputs.read_text())
        target = Path(written["path"])
        if target.exists() and _sha256(target) == written["sha256"]:
            target.unlink()
            log(f"removed {target}")
        paths.outputs.unlink()
    return pid is not None
