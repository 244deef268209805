"""Creates a template's resources on a moto server, in dependency order, one module of API calls per kind."""
from __future__ import annotations

import os
from typing import Any, Callable

from infra.stand_in import StandInError, access, buckets, emr, messaging, monitoring
from infra.stand_in.resolver import Resolver
from infra.stand_in.template import creation_order, skipped_resources

# Resource type -> what creates it: (deployer, logical id, template properties) -> its attributes by name.
HANDLERS: dict[str, Callable[[Any, str, dict], dict[str, str]]] = {
    **buckets.HANDLERS, **messaging.HANDLERS, **access.HANDLERS, **monitoring.HANDLERS, **emr.HANDLERS,
}


class Deployer:
    """One deployment of a template (or of the resources `only` names) on a moto server, each resource named with
    `name_prefix`."""

    def __init__(self, template: dict, endpoint_url: str, region: str, name_prefix: str = "",
                 only: set[str] | None = None) -> None:
        import boto3

        self.template = template
        self.resources: dict[str, dict] = template.get("Resources", {})
        self.region = region
        self.prefix = name_prefix
        session = boto3.session.Session(
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
            region_name=region,
        )
        self._client: Callable[[str], Any] = lambda service: session.client(service, endpoint_url=endpoint_url)
        self.clients: dict[str, Any] = {}
        self.account_id = self.client("sts").get_caller_identity()["Account"]
        self.skipped = skipped_resources(template) | (set() if only is None else set(self.resources) - only)
        self.resolver = Resolver(self.resources, self.skipped, self.account_id, region, name_prefix)
        self.physical = self.resolver.physical
        self.resolve = self.resolver.resolve

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = self._client(service)
        return self.clients[service]

    def deploy(self, outputs: bool = True) -> dict[str, str]:
        """Create every resource not skipped; return what the template's Outputs resolve to (with `outputs`)."""
        for lid in creation_order(self.resources, self.skipped):
            rtype = self.resources[lid]["Type"]
            if rtype not in HANDLERS:
                raise StandInError(f"resource {lid} has type {rtype}, which the local stand-in does not handle")
            self.physical[lid] = HANDLERS[rtype](self, lid, self.resources[lid].get("Properties", {})) or {}
        if not outputs:
            return {}
        return {
            key: str(self.resolve(out["Value"]))
            for key, out in self.template.get("Outputs", {}).items()
            if "Condition" not in out
        }
