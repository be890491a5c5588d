"""Synthesize platforms once and read what the templates contain (shared by the template-level tests).

CDK's built-in template validation (the CloudFormation Validate plugin, on by default in every ``cdk synth``)
runs on the session's reference platforms (``tests/conftest.py``: ``synthesize(..., validate=True)``), where
a test reads its report. The many variants the other tests synthesize to check one property each skip it:
it was about a tenth of the suite's CPU time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template
from platforms import REPO

from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.policy.plan import TenancyPlan
from hyperpod_tenancy.stacks import PlatformStage

CDK_JSON = REPO / "cdk.json"
K8S_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"
#: Stand-in for every CloudFormation intrinsic found inside a Kubernetes manifest.
TOKEN = "cfn-token"


def cdk_context() -> dict[str, Any]:
    """The ``context`` of ``cdk.json`` (feature flags): what ``cdk synth`` passes the app, so tests see it too."""
    return dict(json.loads(CDK_JSON.read_text())["context"])


def new_app(outdir: Path, *, validate: bool = False, context: dict[str, Any] | None = None) -> cdk.App:
    """A CDK app with the same context (feature flags) as ``cdk synth`` in this repository.

    ``validate``: run CDK's built-in template validation at synth, as ``cdk synth`` does (off by default here).
    ``context``: another context instead (``{}``: CDK's default, what an app without a ``cdk.json`` gets).
    """
    ctx = cdk_context() if context is None else context
    return cdk.App(outdir=str(outdir), context=ctx, builtin_cloud_formation_validation=validate)


@dataclass
class Synth:
    """A synthesized platform: its stage, app and templates by stack name."""

    platform: Platform
    app: cdk.App
    stage: PlatformStage
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    outdir: Path | None = None
    _assertions: dict[str, Template] = field(default_factory=dict, repr=False)

    @property
    def cluster(self) -> dict[str, Any]:
        """Template of the cluster stack."""
        return self.templates[self.stage.cluster_stack.stack_name]

    def team(self, name: str) -> dict[str, Any]:
        """Template of a team's stack."""
        return self.templates[self.stage.team_stacks[name].stack_name]

    def template(self, team: str | None = None) -> Template:
        """An ``aws_cdk.assertions.Template`` of a team's stack (``None``: the cluster stack).

        Built from the already synthesized template (no second synthesis) and kept for later calls.
        """
        key = self.stage.cluster_stack.stack_name if team is None else self.stage.team_stacks[team].stack_name
        if key not in self._assertions:
            self._assertions[key] = Template.from_json(self.templates[key])
        return self._assertions[key]

    def manifests(self) -> list[dict[str, Any]]:
        """Every Kubernetes object applied by every stack (intrinsics replaced by :data:`TOKEN`)."""
        return [obj for tpl in self.templates.values() for obj in manifests_in(tpl)]


def synthesize(
    platform: Platform | TenancyPlan,
    outdir: Path,
    *,
    nag: bool = False,
    validate: bool = False,
    context: dict[str, Any] | None = None,
    **stage_props: Any,
) -> Synth:
    """Synthesize ``platform`` (a policy or a resolved plan) through :class:`PlatformStage` (optionally with cdk-nag).

    ``validate`` runs CDK's built-in template validation and ``context`` replaces the repository's
    (:func:`new_app`); the validation report is
    ``outdir/validation-report.json``. ``stage_props`` are further keyword arguments of the stage
    (``cluster_options``, ``chargeback``...).
    """
    app = new_app(outdir, validate=validate, context=context)
    policy = platform.platform if isinstance(platform, TenancyPlan) else platform
    stage = PlatformStage(app, policy.name, platform=platform, **stage_props)
    if nag:
        from cdk_nag import AwsSolutionsChecks

        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    assembly = stage.synth()
    templates = {s.stack_name: s.template for s in assembly.stacks}
    return Synth(platform=policy, app=app, stage=stage, templates=templates, outdir=outdir)


def render_intrinsics(value: Any) -> Any:
    """Replace CloudFormation intrinsics with :data:`TOKEN` (Fn::Join is joined)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Fn::Join":
                sep, parts = arg
                return sep.join(str(render_intrinsics(p)) for p in parts)
            if key.startswith("Fn::") or key == "Ref":
                return TOKEN
        return {k: render_intrinsics(v) for k, v in value.items()}
    if isinstance(value, list):
        return [render_intrinsics(v) for v in value]
    return value


def manifests_in(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Kubernetes objects of every ``KubernetesManifest`` in a template."""
    found: list[dict[str, Any]] = []
    for resource in template["Resources"].values():
        if resource["Type"] == K8S_RESOURCE:
            text = render_intrinsics(resource["Properties"]["Manifest"])
            found += json.loads(text)
    return found


def resources_of(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    """Resources of one type, by logical ID."""
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def one(template: dict[str, Any], type_: str) -> tuple[str, dict[str, Any]]:
    """The single resource of a type (asserts there is exactly one)."""
    found = resources_of(template, type_)
    assert len(found) == 1, f"expected one {type_}, found {sorted(found)}"
    return next(iter(found.items()))


def depends_on(template: dict[str, Any], logical_id: str) -> set[str]:
    """Direct DependsOn of a resource."""
    deps = template["Resources"][logical_id].get("DependsOn", [])
    return {deps} if isinstance(deps, str) else set(deps)


def transitively_depends(template: dict[str, Any], source: str, target: str) -> bool:
    """Whether ``source`` depends on ``target`` through DependsOn, Ref or GetAtt chains."""
    seen: set[str] = set()
    todo = [source]
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current in seen or current not in template["Resources"]:
            continue
        seen.add(current)
        resource = template["Resources"][current]
        todo += list(depends_on(template, current))
        todo += list(_references(resource.get("Properties", {})))
    return False


def _references(value: Any) -> set[str]:
    refs: set[str] = set()
    if isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                refs.add(arg)
            elif key == "Fn::GetAtt":
                refs.add(arg[0] if isinstance(arg, list) else str(arg).split(".")[0])
            else:
                refs |= _references(arg)
    elif isinstance(value, list):
        for item in value:
            refs |= _references(item)
    return refs
