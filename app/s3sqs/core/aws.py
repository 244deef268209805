"""boto3 clients for the driver, the job and the tools: one factory, standard retries, the endpoint's
region and URL. boto3 is imported when a client is made, never at import: the executors' reading code
uses pyarrow's own S3 client and must not pay for boto3."""
from __future__ import annotations

from typing import Callable

from .endpoint import Endpoint


def client(service: str, endpoint: Endpoint, *, session=None, pool: int | None = None,
           connect_timeout: float | None = None, read_timeout: float | None = None):
    import boto3
    from botocore.config import Config

    extra = {k: v for k, v in (("max_pool_connections", pool), ("connect_timeout", connect_timeout),
                               ("read_timeout", read_timeout)) if v is not None}
    config = Config(retries={"max_attempts": endpoint.max_attempts, "mode": "standard"}, **extra)
    return (session or boto3.session.Session()).client(service, region_name=endpoint.region,
                                                       endpoint_url=endpoint.url, config=config)


def lazy_client(service: str, endpoint: Endpoint) -> Callable[[], object]:
    """A function that makes the client when first called, and then returns that one."""
    made: list = []

    def get():
        if not made:
            made.append(client(service, endpoint))
        return made[0]
    return get


def error_code(e: BaseException) -> str:
    """The AWS error code of a ClientError ("" for anything else)."""
    return e.response.get("Error", {}).get("Code", "") if hasattr(e, "response") else ""
