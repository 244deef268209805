"""CDK entry point (`cdk.json` runs `python -m infra.app`) and the in-process App builder used by tests."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

# Node 20 still runs jsii here; the end-of-life banner would only add noise to every synth.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, Validations  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra import STACK_NAME  # noqa: E402
from infra.config import ConfigError, config_from_node  # noqa: E402
from infra.stack import StreamingStack  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
CDK_JSON = REPO_ROOT / "cdk.json"


def cdk_json_context(path: Path | None = None) -> dict[str, Any]:
    """The "context" of a cdk.json (default: the checkout's): feature flags plus this app's settings."""
    return dict(json.loads(Path(path or CDK_JSON).read_text()).get("context", {}))


def build_app(
    context: dict[str, Any] | None = None,
    *,
    nag: bool = True,
    builtin_validation: bool | None = None,
    outdir: str | None = None,
) -> tuple[App, StreamingStack]:
    """Build the App and its one stack.

    With `context` None the App reads what the CDK CLI passes (cdk.json plus `-c`); in-process callers
    pass cdk.json's context explicitly, since a bare App would use different feature-flag defaults.
    """
    kwargs: dict[str, Any] = {}
    if context is not None:
        kwargs["context"] = context
    if builtin_validation is not None:
        kwargs["builtin_cloud_formation_validation"] = builtin_validation
    if outdir is not None:
        kwargs["outdir"] = outdir
    app = App(**kwargs)
    config = config_from_node(app.node)
    stack = StreamingStack(
        app, STACK_NAME, config=config,
        description="S3 notifications -> SNS fan-out -> per-consumer SQS queues -> EMR Serverless Spark",
    )
    if nag:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


def main() -> None:
    # The CLI passes cdk.json's context itself; run directly, read it from the file.
    context = None if "CDK_CONTEXT_JSON" in os.environ or "CDK_OUTDIR" in os.environ else cdk_json_context()
    try:
        app, _ = build_app(context)
    except ConfigError as e:
        raise SystemExit(f"cdk.json context is invalid: {e}") from None
    app.synth()


if __name__ == "__main__":
    main()
