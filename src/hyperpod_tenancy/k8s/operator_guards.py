"""Fields of a tenant's object that an operator copies into what runs, or into AWS calls, for the tenant.

An operator acts with its own identity and permissions on fields the tenant chose; the POSIX identity webhook
stamps only the pod templates a tenant writes, so a container or a volume an operator builds from other fields
escapes it. One ``Deny`` policy, :data:`OPERATOR_FIELDS_POLICY`, on CREATE and UPDATE by team members (the
operators themselves are exempt by username):

**KubeRay** (public source; ray-project/kuberay ``v1.4.2`` = 34ea80e0, the chart version the platform pins):

* ``headGroupSpec.enableIngress: true`` is refused (RayCluster, and a RayJob's ``rayClusterSpec``): KubeRay
  then creates an Ingress and copies *every* RayCluster annotation onto it
  (``ray-operator/controllers/ray/common/ingress.go``, lines 28-40), so a team could ask the load balancer
  controller for an internet-facing ALB (``alb.ingress.kubernetes.io/scheme``) or join another namespace's
  IngressGroup (``alb.ingress.kubernetes.io/group.name``);
* ``autoscalerOptions.securityContext`` and ``autoscalerOptions.volumeMounts`` are refused: KubeRay copies
  them into the autoscaler sidecar it adds to the head pod (``common/pod.go`` ``mergeAutoscalerOverrides``,
  lines 554-576), a container the webhook never saw, which could run as a teammate's UID with their home
  directory (the pod-level identity the webhook stamps still applies to it).

**HyperPod inference operator** (source not public: the fields it would copy are refused rather than trusted;
field names from the CRD in aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/inference-operator/
config/crd/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml`` at 011ca927):

* ``spec.kubernetes.initContainers`` and ``spec.kubernetes.volumes``: containers and volumes of the endpoint's
  pods, built by the operator (whose Deployment the webhook only hardens, never stamps);
* S3 locations outside the team's prefix ``teams/<team>/`` (the team read from the namespace label
  ``hyperpod-tenancy.io/team``): ``modelSourceConfig.s3Storage`` with a ``modelLocation`` elsewhere (the S3
  Mountpoint CSI driver reads it with its own role, which may read every team's prefix),
  ``dataCapture.s3Uri`` and ``tlsConfig.tlsCertificateOutputS3Uri`` (written with the operator's execution
  role);
* an FSx model source (``modelSourceConfig.fsxStorage``, or ``modelSourceType: fsx``) with a ``modelLocation``
  outside the team's shared model area ``<team>/models`` of the file system (``/fsx/<team>/models``, which the
  FSx directory Job creates), or with a ``..`` segment: the operator mounts that directory into the endpoint's
  pods, which the webhook only hardens (they run as the worker image's non-root user with the team GID), so a
  teammate's home directory or another team's files must never be a model location.
"""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, labels, vap, workloads
from hyperpod_tenancy.policy import names

__all__ = ["OPERATOR_FIELDS_POLICY", "operator_guard_policies"]

#: Policy (and binding) refusing the tenant-chosen fields operators would act on.
OPERATOR_FIELDS_POLICY = "hyperpod-tenancy-operator-fields"
_RAY = "ray.io"
_INFERENCE = "inference.sagemaker.aws.amazon.com"
_q = vap.cel_quote
_TEAM = f"namespaceObject.metadata.labels[{_q(labels.TEAM_LABEL)}]"
_HAS_TEAM = (
    f"(has(namespaceObject.metadata.labels) && {_q(labels.TEAM_LABEL)} in namespaceObject.metadata.labels)"
)
_PREFIX = f"{_q(names.DATA_PREFIX_ROOT)} + {_TEAM} + '/'"


def _is(resource: str) -> str:
    return f"(request.resource.resource == {_q(resource)})"


def _ray_head_checks(head: str) -> str:
    """CEL: the head group at ``head`` does not ask KubeRay for an Ingress."""
    return f"(!has({head}) || !has({head}.enableIngress) || {head}.enableIngress == false)"


def _autoscaler_checks(spec: str) -> str:
    opts = f"{spec}.autoscalerOptions"
    return f"(!has({opts}) || (!has({opts}.securityContext) && !has({opts}.volumeMounts)))"


def _fsx_source(source: str) -> str:
    """CEL: the model source at ``source`` reads from FSx (an ``fsxStorage`` block, or ``modelSourceType: fsx``)."""
    return (
        f"(has({source}.fsxStorage) || (has({source}.modelSourceType) && {source}.modelSourceType == 'fsx'))"
    )


def _fsx_under_models(location: str) -> str:
    """CEL: ``location`` is under ``<team>/models`` (an optional leading ``/``) and has no ``..`` segment."""
    area = f"'^/?' + {_TEAM} + {_q('/' + fsx_dirs.MODELS_DIRECTORY + '(/|$)')}"
    return f"({_HAS_TEAM} && {location}.matches({area}) && !{location}.matches('(^|/)[.][.](/|$)'))"


def _s3_under_team(value: str) -> str:
    return f"({_HAS_TEAM} && {value}.matches('^s3://[^/]+/' + {_PREFIX}))"


def _validations() -> list[dict[str, str]]:
    iec = "object.spec"
    return [
        {
            "expression": f"!{_is('rayclusters')} || {_ray_head_checks('object.spec.headGroupSpec')}",
            "message": "RayCluster: headGroupSpec.enableIngress must not be true in team namespaces: KubeRay would "
            "create an Ingress carrying every annotation of the RayCluster (an internet-facing load balancer, "
            "another namespace's IngressGroup). Reach the dashboard with kubectl port-forward instead.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_is('rayjobs')} || !has(object.spec.rayClusterSpec) || "
            + _ray_head_checks("object.spec.rayClusterSpec.headGroupSpec"),
            "message": "RayJob: rayClusterSpec.headGroupSpec.enableIngress must not be true in team namespaces: "
            "KubeRay would create an Ingress carrying every annotation of the cluster. Use kubectl "
            "port-forward to reach the dashboard.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!({_is('rayclusters')} || {_is('rayjobs')}) || ({_is('rayclusters')} ? "
            f"{_autoscaler_checks('object.spec')} : (!has(object.spec.rayClusterSpec) || "
            f"{_autoscaler_checks('object.spec.rayClusterSpec')}))",
            "message": "autoscalerOptions.securityContext and autoscalerOptions.volumeMounts are not allowed in "
            "team namespaces: KubeRay copies them into the autoscaler container of the head pod, which the "
            "POSIX identity webhook never sees (it could run as another person's UID with their home "
            "directory). Remove them; the autoscaler runs with the head pod's identity.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_is('inferenceendpointconfigs')} || !has({iec}.kubernetes) || "
            f"((!has({iec}.kubernetes.initContainers) || size({iec}.kubernetes.initContainers) == 0) && "
            f"(!has({iec}.kubernetes.volumes) || size({iec}.kubernetes.volumes) == 0))",
            "message": "InferenceEndpointConfig: spec.kubernetes.initContainers and spec.kubernetes.volumes are "
            "not allowed in team namespaces: the inference operator builds them into the endpoint's pods, "
            "outside the POSIX identity webhook (a container could run as a teammate with their home "
            "directory). Put the setup in the worker image instead.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_is('inferenceendpointconfigs')} || !has({iec}.modelSourceConfig) || "
            f"!has({iec}.modelSourceConfig.s3Storage) || ({_HAS_TEAM} && has({iec}.modelSourceConfig.modelLocation) "
            f"&& {iec}.modelSourceConfig.modelLocation.startsWith({_PREFIX}))",
            "messageExpression": "'InferenceEndpointConfig: modelSourceConfig.modelLocation must be under '"
            f" + ({_HAS_TEAM} ? {_PREFIX} : 'teams/<team>/') + ' of the data bucket: the S3 Mountpoint driver "
            "reads the model with a role that may read the prefix of every team.'",
            "message": "InferenceEndpointConfig: modelSourceConfig.modelLocation must be under teams/<team>/.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_is('inferenceendpointconfigs')} || !has({iec}.modelSourceConfig) || "
            f"!{_fsx_source(f'{iec}.modelSourceConfig')} || (has({iec}.modelSourceConfig.modelLocation) && "
            f"{_fsx_under_models(f'{iec}.modelSourceConfig.modelLocation')})",
            "messageExpression": "'InferenceEndpointConfig: an FSx modelSourceConfig.modelLocation must be under '"
            f" + ({_HAS_TEAM} ? {_TEAM} : '<team>') + {_q('/' + fsx_dirs.MODELS_DIRECTORY + '/')} + ', the "
            "team\\'s shared model area (/fsx/<team>/models), with no .. segment: the operator mounts it into the "
            "endpoint\\'s pods outside the POSIX identity webhook, so a home directory or another team\\'s files "
            "must never be a model location.'",
            "message": "InferenceEndpointConfig: an FSx modelSourceConfig.modelLocation must be under "
            "<team>/models/, never a home directory.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_is('inferenceendpointconfigs')} || "
            f"((!has({iec}.dataCapture) || !has({iec}.dataCapture.s3Uri) || {_s3_under_team(f'{iec}.dataCapture.s3Uri')}) "
            f"&& (!has({iec}.tlsConfig) || !has({iec}.tlsConfig.tlsCertificateOutputS3Uri) || "
            f"{_s3_under_team(f'{iec}.tlsConfig.tlsCertificateOutputS3Uri')}))",
            "messageExpression": "'InferenceEndpointConfig: dataCapture.s3Uri and tlsConfig.tlsCertificateOutputS3Uri "
            f"must be s3://<bucket>/' + ({_HAS_TEAM} ? {_PREFIX} : 'teams/<team>/') + '...: the operator writes "
            "there with its own role. Leave tlsCertificateOutputS3Uri out to use the TLS bucket of the platform.'",
            "message": "InferenceEndpointConfig: S3 URIs must be under s3://<bucket>/teams/<team>/.",
            "reason": "Forbidden",
        },
    ]


def operator_guard_policies() -> list[dict[str, Any]]:
    """Return :data:`OPERATOR_FIELDS_POLICY` and its ``Deny`` binding (tenant namespaces; see the module docstring)."""
    rules = [
        {
            "apiGroups": [_RAY],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["rayclusters", "rayjobs"],
            "scope": "Namespaced",
        },
        {
            "apiGroups": [_INFERENCE],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["inferenceendpointconfigs"],
            "scope": "Namespaced",
        },
    ]
    return [
        vap.policy(
            OPERATOR_FIELDS_POLICY,
            rules=rules,
            match_conditions=[
                vap.not_sent_by("not-from-a-controller", workloads.controller_usernames()),
                {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
            ],
            validations=_validations(),
        ),
        vap.policy_binding(OPERATOR_FIELDS_POLICY, ["Deny"]),
    ]
