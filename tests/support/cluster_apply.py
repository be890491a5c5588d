"""What the platform renders, applied to the real control plane as a deploy applies it, and read back.

* :func:`synthesized_objects`: every Kubernetes object of a synthesized platform's templates (cluster stack,
  then the chargeback and team stacks), with the namespace label patches of the Task Governance backend.
* :func:`chart_objects`: the platform chart and every team chart of a policy, rendered without CDK.
* :func:`operator_crds`: the CRDs the platform's objects and the teams' workloads need (:data:`CRD_SOURCES`).
* :func:`posix_webhook`: the real POSIX identity webhook for a synthesized platform, its configurations
  pointed at it (reading the API server with its service account's token, :class:`ApiAccess`).
* :func:`pointed_at`: webhook configurations with their ``clientConfig`` on a loopback server (every other
  field as rendered).
* :func:`differences`: what the server changed in an object, less the entries of :data:`ALLOWED`, each of which
  says why the server may write it.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import fnmatch
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import platforms
import yaml
from kube_client import KubeClient, documents, wait_until
from kubernetes.utils.quantity import parse_quantity
from synth import Synth, manifests_in, render_intrinsics, resources_of
from webhook_server import WebhookProcess, certificates, create_table, serial_moto_server

from hyperpod_tenancy.k8s.kueue import team_objects
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.policy.fairness import fairness_of

__all__ = [
    "ALLOWED",
    "ApiAccess",
    "AppliedPlatform",
    "Outcome",
    "apply_all",
    "chart_objects",
    "differences",
    "flat",
    "operator_crds",
    "pointed_at",
    "posix_webhook",
    "remove_all",
    "same_value",
    "synthesized_objects",
]

KUBERNETES_PATCH = "Custom::AWSCDK-EKS-KubernetesPatch"
#: ``shared/operator-crds`` beside the checkout (unmodified upstream copies, with their source).
SHARED_OPERATOR_CRDS = Path(
    os.environ.get("SHARED_OPERATOR_CRDS_DIR", platforms.REPO.parent / "shared" / "operator-crds")
)
#: The HyperPod training operator's CRD is in no public source: a minimal schema written here.
HYPERPOD_PYTORCHJOB_CRD = Path(__file__).parent / "crds" / "hyperpodpytorchjobs.sagemaker.amazonaws.com.yaml"


@dataclass(frozen=True)
class Patch:
    """A ``KubernetesPatch`` of a template: a strategic merge patch of one object."""

    resource: str
    namespace: str | None
    patch: dict[str, Any]


@dataclass
class AppliedPlatform:
    """The objects and patches of one platform, in the order a deploy applies them."""

    name: str
    objects: list[dict[str, Any]]
    patches: list[Patch] = field(default_factory=list)
    #: Namespaces the fairness backend's service creates before the charts (Task Governance's team namespaces).
    service_namespaces: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------- rendering


def _stack_order(synth: Synth) -> list[dict[str, Any]]:
    stage = synth.stage
    first = [stage.cluster_stack.stack_name]
    return [synth.templates[n] for n in first] + [t for n, t in synth.templates.items() if n not in first]


def synthesized_objects(name: str, synth: Synth) -> AppliedPlatform:
    """Every object and namespace patch of the synthesized templates, cluster stack first (intrinsics rendered)."""
    objects: list[dict[str, Any]] = []
    patches: list[Patch] = []
    for template in _stack_order(synth):
        objects += manifests_in(template)
        for resource in resources_of(template, KUBERNETES_PATCH).values():
            props = render_intrinsics(resource["Properties"])
            patches.append(
                Patch(
                    props["ResourceName"], props.get("ResourceNamespace"), json.loads(props["ApplyPatchJson"])
                )
            )
    platform = synth.platform
    service = (
        []
        if fairness_of(platform).creates_team_namespace
        else [names.namespace(t.name) for t in platform.hosted_teams]
    )
    return AppliedPlatform(name, _namespaces_first(objects), patches, service)


def chart_objects(name: str, platform: Platform) -> AppliedPlatform:
    """The platform chart and each hosted team's chart, rendered from the policy (no CDK)."""
    objects = PlatformChart(platform).to_json()
    for team in platform.hosted_teams:
        chart = TeamChart(platform, team, fsx=platforms.FSX, service_account=DEFAULT_SERVICE_ACCOUNT)
        objects += chart.to_json()
    service: list[str] = []
    if not fairness_of(
        platform
    ).creates_team_namespace:  # the service creates the namespaces: stand in for it
        service = [names.namespace(t.name) for t in platform.hosted_teams]
        objects += [
            o for t in platform.hosted_teams for o in team_objects(platform, t) if o["kind"] != "Namespace"
        ]
    return AppliedPlatform(name, _namespaces_first(objects), [], service)


def _namespaces_first(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Namespace"] + [o for o in objects if o["kind"] != "Namespace"]


def service_namespace(namespace: str) -> dict[str, Any]:
    """A team namespace as Task Governance creates it (its labels are the platform's patch to add)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}


# ------------------------------------------------------------------------------------------------ CRDs


def _without_templates(crd: dict[str, Any]) -> dict[str, Any]:
    """A CRD of a Helm chart's files with what only Helm can fill in left out.

    cert-manager's CRD files carry Go-template labels (not label values): dropped. The HyperPod inference
    operator's name its conversion webhook's Service through chart values: no such operator runs here, so the
    versions are served without conversion (``strategy: None``); the tests store objects of one version only.
    """
    labels = crd["metadata"].get("labels", {})
    crd["metadata"]["labels"] = {k: v for k, v in labels.items() if "{{" not in str(v)}
    conversion = crd["spec"].get("conversion", {})
    if "{{" in json.dumps(conversion.get("webhook", {})):
        crd["spec"]["conversion"] = {"strategy": "None"}
    return crd


def operator_crds(operator_crds_dir: Path) -> list[dict[str, Any]]:
    """The CRDs of the operators the platform renders objects or grants for (see docs/testing.md):

    KubeRay's, cert-manager's and Kubeflow's TFJob, XGBoostJob and PaddleJob from their Go modules
    (``make control-plane``), the HyperPod inference operator's, Kubeflow's PyTorchJob and the MPIJob from
    ``shared/operator-crds`` (unmodified upstream copies), and the minimal
    ``HyperPodPyTorchJob`` schema written here (:data:`HYPERPOD_PYTORCHJOB_CRD`).
    """
    files = [
        *sorted((operator_crds_dir / "kuberay").glob("*.yaml")),
        *sorted((operator_crds_dir / "cert-manager").glob("*.yaml")),
        *sorted((operator_crds_dir / "training-operator").glob("*.yaml")),
        *sorted(SHARED_OPERATOR_CRDS.glob("*.yaml")),
        HYPERPOD_PYTORCHJOB_CRD,
    ]
    if not SHARED_OPERATOR_CRDS.is_dir():
        raise FileNotFoundError(f"{SHARED_OPERATOR_CRDS}: the operator CRDs of shared/ are missing")
    return [
        _without_templates(doc)
        for f in files
        for doc in documents(f)
        if doc.get("kind") == "CustomResourceDefinition"
    ]


# -------------------------------------------------------------------------------------------- webhooks


def pointed_at(objects: Sequence[Mapping[str, Any]], *, url: str, ca: Path) -> list[dict[str, Any]]:
    """The objects, each webhook's ``clientConfig`` replaced by ``url`` + its service path and the CA bundle."""
    bundle = base64.b64encode(ca.read_bytes()).decode()
    found: list[dict[str, Any]] = []
    for obj in objects:
        copied = copy.deepcopy(dict(obj))
        if copied["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for hook in copied["webhooks"]:
                path = hook["clientConfig"]["service"].get("path", "/")
                hook["clientConfig"] = {"url": url + path, "caBundle": bundle}
        found.append(copied)
    return found


# --------------------------------------------------------------------------------------------- read-back


@dataclass(frozen=True)
class Allowed:
    """A field the server may write that the rendered object does not have: kinds, a path pattern, why."""

    kinds: str
    path: str
    reason: str

    def matches(self, kind: str, path: str) -> bool:
        """Whether ``path`` (list indices as ``[*]``) of an object of ``kind`` is this entry's."""
        below = path == self.path or path.startswith((self.path + ".", self.path + "["))
        return below and fnmatch.fnmatchcase(kind, self.kinds)


def _load_allowed() -> tuple[Allowed, ...]:
    data = yaml.safe_load((Path(__file__).parent / "readback_allowed.yaml").read_text())
    return tuple(Allowed(e["kinds"], e["path"], e["reason"]) for e in data)


#: What the API server, its admission defaults and the controllers may add (``readback_allowed.yaml``).
ALLOWED: tuple[Allowed, ...] = _load_allowed()


def flat(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of ``value`` with its dotted path (list items of maps as ``[i]``)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from flat(item, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        for index, item in enumerate(value):
            yield from flat(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def _pattern(path: str) -> str:
    out, depth = [], 0
    for char in path:
        if char == "[":
            depth += 1
            out.append("[*]")
        elif char == "]":
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _quantity(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        parsed: Decimal = parse_quantity(value)
    except ValueError:
        return None
    return parsed


def same_value(rendered: Any, served: Any) -> bool:
    """Equal, or the same quantity in the server's canonical form (``12`` -> ``"12"``, ``"18432Gi"`` -> ``"18Ti"``).

    The API server stores a resource quantity (``resource.Quantity``: ResourceQuota ``hard``, Kueue quotas and
    weights) in canonical form; a field of another type keeps the JSON type it was given (strict field validation
    refuses a number where a string belongs), so only a quantity can come back as a string of the same value.
    """
    if rendered == served:
        return True
    if not isinstance(served, str):
        return False
    mine, theirs = _quantity(rendered), _quantity(served)
    return mine is not None and mine == theirs


def differences(rendered: Mapping[str, Any], served: Mapping[str, Any]) -> list[str]:
    """Every field the server has that differs from the rendered object and that :data:`ALLOWED` does not name.

    A rendered field read back with another value (:func:`same_value`) is always a difference; a field only the
    server has is one unless an entry of :data:`ALLOWED` names its path for the object's kind. An empty rendered
    value (``""``, ``{}``, ``[]``) is not stored, as the API omits empty fields.
    """
    kind = str(rendered["kind"])
    mine = dict(flat(rendered))
    theirs = dict(flat(served))
    found: list[str] = []
    for path, value in mine.items():
        if path not in theirs:
            if value in ({}, [], None, ""):
                continue
            found.append(f"{path}: rendered {value!r}, not read back")
        elif not same_value(value, theirs[path]):
            found.append(f"{path}: rendered {value!r}, read back {theirs[path]!r}")
    for path, value in theirs.items():
        if path in mine or any(a.matches(kind, _pattern(path)) for a in ALLOWED):
            continue
        if any(m.startswith(path) for m in mine):
            continue
        found.append(f"{path}: {value!r} added by the server")
    return found


# --------------------------------------------------------------------------------------- the POSIX webhook


def _webhook_configuration(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    for obj in objects:
        if obj["kind"] == "ConfigMap" and "teams.json" in obj.get("data", {}):
            config: dict[str, Any] = json.loads(obj["data"]["teams.json"])
            return config
    return None


def _team_records(synth: Synth, prefix: str) -> dict[str, str]:
    """The SSM parameters the team stacks write under the webhook's ``teamRecords.ssmPath``."""
    found: dict[str, str] = {}
    for template in synth.templates.values():
        for resource in resources_of(template, "AWS::SSM::Parameter").values():
            props = render_intrinsics(resource["Properties"])
            if str(props.get("Name", "")).startswith(prefix):
                found[props["Name"]] = props["Value"]
    return found


@dataclass(frozen=True)
class ApiAccess:
    """How the webhook reaches the API server, as in its pod: the server, its CA and a service-account token file.

    The webhook re-reads the token file on every call (kubelet rotates projected tokens), so the token can be
    written once the platform's ServiceAccount exists (:meth:`grant`), after the webhook has started.
    """

    server: str
    ca: Path
    token_file: Path

    def args(self) -> tuple[str, ...]:
        """``hyperpod-tenancy webhook serve``'s flags for this access."""
        return (
            "--kube-api",
            self.server,
            "--kube-token-file",
            str(self.token_file),
            "--kube-ca-file",
            str(self.ca),
        )

    def grant(self, token: str) -> None:
        """Write the webhook's service-account token (read at its next call to the API server)."""
        self.token_file.write_text(token + "\n")


@contextlib.contextmanager
def posix_webhook(
    applied: AppliedPlatform, synth: Synth | None, workdir: Path, *, api: ApiAccess | None = None
) -> Iterator[list[dict[str, Any]]]:
    """The real POSIX identity webhook for the platform's configuration; yields the platform's objects with the
    webhook configurations pointed at it (as rendered where the platform has no webhook).

    With ``api`` the webhook reads Pods and writes Events through the API server as its pod does (a CONNECT
    carries the connect options, not the Pod); without it, every request into a pod is denied (it cannot be
    judged).
    """
    config = _webhook_configuration(applied.objects)
    if config is None or synth is None:  # the charts alone render no webhook
        yield [dict(o) for o in applied.objects]
        return
    config_path = workdir / "teams.json"
    config_path.write_text(json.dumps(config))
    if api is not None and not api.token_file.exists():
        api.token_file.write_text("")  # no token yet: the API server refuses the webhook until it is granted
    with serial_moto_server():
        ssm = boto3.client("ssm")
        for name, value in _team_records(synth, config["teamRecords"]["ssmPath"]).items():
            ssm.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)
        certs = certificates(workdir)
        extra = api.args() if api is not None else ()
        with WebhookProcess(
            certs=certs, table=create_table(), config_path=config_path, extra_args=extra
        ) as server:
            yield pointed_at(applied.objects, url=f"https://127.0.0.1:{server.port}", ca=certs.ca)


# ------------------------------------------------------------------------------------------ on a cluster


@dataclass
class Outcome:
    """What the server said of each object of one platform: refusals, warnings, read-back differences."""

    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    applied: int = 0


def _label(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


def apply_all(client: KubeClient, applied: AppliedPlatform, objects: Sequence[Mapping[str, Any]]) -> Outcome:
    """Create the service's namespaces, patch them, server-side apply every object and read each back."""
    outcome = Outcome()
    for namespace in applied.service_namespaces:
        answer = client.create(service_namespace(namespace))
        assert answer.ok, (namespace, answer)
    for patch in applied.patches:
        kind, name = patch.resource.split("/", 1)
        assert kind == "namespace", f"a patch of {patch.resource}: only namespace patches are rendered"
        answer = client.request(
            "PATCH",
            f"/api/v1/namespaces/{name}",
            body=patch.patch,
            content_type="application/strategic-merge-patch+json",
        )
        if not answer.ok:
            outcome.refused.append(f"patch {patch.resource}: {answer.status} {answer.message}")
        outcome.warnings += [f"patch {patch.resource}: {w}" for w in answer.warnings]
    for obj in objects:
        answer = client.apply(obj)
        outcome.warnings += [f"{_label(obj)}: {w}" for w in answer.warnings]
        if not answer.ok:
            outcome.refused.append(f"{_label(obj)}: {answer.status} {answer.message}")
            continue
        outcome.applied += 1
        served = client.get(obj)
        assert served is not None, f"{_label(obj)} applied, then not found"
        outcome.changed += [f"{_label(obj)}: {d}" for d in differences(obj, served)]
    return outcome


def remove_all(
    client: KubeClient,
    applied: AppliedPlatform,
    objects: Sequence[Mapping[str, Any]],
    *,
    timeout: float = 120,
) -> list[str]:
    """Delete what :func:`apply_all` made (namespaces last), wait until it is gone; return what is left."""
    namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    namespaces |= set(applied.service_namespaces)
    rest = [o for o in reversed(objects) if o["kind"] != "Namespace"]
    for obj in rest:
        client.delete(obj)
    for name in namespaces:
        client.request("DELETE", f"/api/v1/namespaces/{name}")

    def left() -> list[str]:
        found = [_label(o) for o in rest if client.get(o) is not None]
        return found + [
            f"Namespace {n}" for n in namespaces if client.request("GET", f"/api/v1/namespaces/{n}").ok
        ]

    try:
        wait_until(
            lambda: not left(),
            timeout=timeout,
            what=f"the objects of {applied.name} to be deleted",
            interval=0.5,
        )
    except AssertionError:
        return left()
    return []
