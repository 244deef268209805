"""EMR Serverless on the stand-in: the Spark application (job runs succeed at once on moto; nothing executes)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.stand_in.deployer import Deployer

# moto 5.2.5 rejects release labels not shaped like this one (emr-spark-8.0.0 among them).
MOTO_RELEASE_LABEL = "emr-7.1.0"


def emr_application(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    """Created with the template's properties; under MOTO_RELEASE_LABEL when moto refuses the template's label,
    which the tag `releaseLabel` keeps."""
    p = d.resolve(props)
    emr = d.client("emr-serverless")
    name = p.get("Name") or lid
    for app in emr.list_applications().get("applications", []):
        if app["name"] == name and app["state"] not in ("TERMINATED",):
            return {"Ref": app["id"], "ApplicationId": app["id"], "Arn": app["arn"]}
    kwargs: dict[str, Any] = {"name": name, "type": p["Type"], "tags": {"releaseLabel": p["ReleaseLabel"]}}
    if "Architecture" in p:
        kwargs["architecture"] = p["Architecture"]
    if "MaximumCapacity" in p:
        kwargs["maximumCapacity"] = {k[0].lower() + k[1:]: v for k, v in p["MaximumCapacity"].items()}
    if "AutoStartConfiguration" in p:
        kwargs["autoStartConfiguration"] = {"enabled": bool(p["AutoStartConfiguration"]["Enabled"])}
    if "AutoStopConfiguration" in p:
        stop = p["AutoStopConfiguration"]
        kwargs["autoStopConfiguration"] = {"enabled": bool(stop["Enabled"]),
                                           "idleTimeoutMinutes": int(stop.get("IdleTimeoutMinutes", 15))}
    if "MonitoringConfiguration" in p:
        kwargs["monitoringConfiguration"] = camel_keys(p["MonitoringConfiguration"])
    try:
        app = emr.create_application(releaseLabel=p["ReleaseLabel"], **kwargs)
    except emr.exceptions.ValidationException as e:
        if "release label" not in str(e):
            raise
        app = emr.create_application(releaseLabel=MOTO_RELEASE_LABEL, **kwargs)
    return {"Ref": app["applicationId"], "ApplicationId": app["applicationId"], "Arn": app["arn"]}


def camel_keys(node: Any) -> Any:
    """CloudFormation's PascalCase property names -> the EMR Serverless API's camelCase."""
    if isinstance(node, dict):
        return {k[0].lower() + k[1:]: camel_keys(v) for k, v in node.items()}
    if isinstance(node, list):
        return [camel_keys(x) for x in node]
    return node


HANDLERS = {"AWS::EMRServerless::Application": emr_application}
