"""``hyperpod-tenancy onboarding``: what a team member needs, the samples it writes, and the same facts in AWS.

One pure function (:func:`hyperpod_tenancy.k8s.onboarding.onboarding_facts`) feeds the command and the team
stack's outputs and Studio lifecycle script; these tests hold each consumer to it and each sample to the real
checks: the kubectl Job against the Kubernetes schema (``kubernetes-validate``), the POSIX identity webhook's own
patch (``hyperpod_tenancy.webhook.patch.stamp``) and the synthesized admission policies (standard CEL,
:mod:`tenant_admission`), which admit it in its team and deny it in another; the ``hyp`` line through the real
HyperPod CLI 3.12 (:mod:`hyperpod_sdk`); the Studio lifecycle script through shellcheck and bash, with a fake
``aws`` that records its arguments.
"""

from __future__ import annotations

import base64
import copy
import json
import shlex
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import tenant_admission as ta
import yaml
from cfn_lint import lint_template
from hyperpod_sdk import Posted, render
from iam_eval import is_allowed
from platforms import REPO, example
from synth import Synth, resources_of

from hyperpod_tenancy import cli
from hyperpod_tenancy.constructs.tenant.team_tenant import studio_lifecycle_script
from hyperpod_tenancy.k8s import admission, labels, onboarding, workloads
from hyperpod_tenancy.k8s.posix_identity import POSIX_IDENTITY_POLICY
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.webhook import patch as webhook_patch

PLATFORM = REPO / "platform.yaml"
SHELLCHECK = REPO / ".venv" / "bin" / "shellcheck"
START_URL = "https://d-1234567890.awsapps.com/start"
TEAMS = ("research", "inference")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["onboarding", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _facts(platform: Platform, team: str, **kw: Any) -> onboarding.OnboardingFacts:
    return onboarding.onboarding_facts(platform, team, **kw)


# --- the command --------------------------------------------------------------------------------------------


def test_research_onboarding_prints_what_a_member_needs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "research", str(PLATFORM))
    assert (code, err) == (0, "")
    for text in (
        "[profile shared-gpu-research]",
        "sso_account_id = 111122223333",
        "sso_role_name = Research",
        "aws sso login --profile shared-gpu-research",
        "aws eks update-kubeconfig --name shared-gpu --region us-east-1 --profile shared-gpu-research",
        "From Studio: a JupyterLab or Code Editor space of domain shared-gpu-research",
        "namespace      hyperpod-ns-research",
        "queue          hyperpod-ns-research-localqueue",
        "FSx            /fsx/research",
        "home           /fsx/research/home/<your UID>, at /home/hyperpod",
        "S3             s3://<DataBucket>/teams/research/",
        "--stack-name ml-platform-Team-Research --query \"Stacks[0].Outputs[?OutputKey=='SsoRoleArn'].OutputValue\"",
        "starts_with(LogicalResourceId, 'ClusterStorageDataBucket')",
    ):
        assert text in out, text
    # both classes checkpoint in research (it borrows); experimentation at most every 30 minutes
    (training,) = [line for line in out.splitlines() if line.strip().startswith("training-priority")]
    (experiment,) = [line for line in out.splitlines() if line.strip().startswith("experimentation-priority")]
    assert "interval at most 1h" in training and "borrows" in training
    assert "interval at most 30m" in experiment and "preemptible" in experiment
    assert (
        f"name: {labels.CHECKPOINT_DIR_ENV}" in out
        and "value: /fsx/research/checkpoints/onboarding-check" in out
    )
    assert "hyp create hyp-pytorch-job" in out and "--priority training-priority" in out


def test_inference_onboarding_needs_no_checkpoint(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "inference", str(PLATFORM))
    assert code == 0
    (line,) = [x for x in out.splitlines() if x.strip().startswith("inference-priority")]
    assert "no checkpoint required" in line
    assert "[profile shared-gpu-inference]" in out and "sso_role_name = Inference" in out
    assert labels.CHECKPOINT_DIR_ENV not in out.split("# inference-job.yaml")[1]
    assert labels.CHECKPOINT_DIR_ENV not in out.split("# inference-hyp.sh")[1]


def test_the_permission_set_name_of_the_policy_is_the_role(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "vision", str(PLATFORM))
    assert "sso_role_name = ComputerVision" in out


def test_an_unknown_team_is_one_line_naming_the_teams(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "nlp", str(PLATFORM))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "hyperpod-tenancy: error: team 'nlp' is not a team on cluster shared-gpu (teams: inference, research, vision)."
    ]


def test_an_unreadable_policy_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "research", str(tmp_path / "missing.yaml"))
    assert code == 1 and len(err.splitlines()) == 1 and "cannot read policy" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--archive-job"], "go with --offboard"),
        (["--offboard", "alice", "--archive-job"], "--archive-job needs --uid"),
        (["--offboard", "al ice"], "is not an Identity Center user name"),
    ],
)
def test_option_mistakes_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = _run(capsys, "research", str(PLATFORM), *argv)
    assert code == 2 and message in err and len(err.splitlines()) == 1


def test_write_dir_writes_the_two_samples(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "research", str(PLATFORM), "--write-dir", str(tmp_path / "out"))
    assert code == 0
    job = tmp_path / "out" / "research-job.yaml"
    hyp = tmp_path / "out" / "research-hyp.sh"
    assert f"wrote {job}" in out and "apiVersion" not in out  # written, not printed
    facts = _facts(onboarding_platform(), "research")
    assert yaml.safe_load(job.read_text()) == onboarding.kubectl_job(facts)
    assert hyp.stat().st_mode & stat.S_IXUSR
    assert hyp.read_text() == onboarding.hyp_script(facts)
    assert shlex.split(_script_command(hyp.read_text())) == onboarding.hyp_command(facts)


def test_the_start_url_comes_from_cdk_json_beside_the_policy(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copy(PLATFORM, tmp_path / "platform.yaml")
    (tmp_path / "cdk.json").write_text(json.dumps({"context": {onboarding.SSO_START_URL_CONTEXT: START_URL}}))
    _, out, _ = _run(capsys, "research", str(tmp_path / "platform.yaml"))
    assert f"sso_start_url = {START_URL}" in out
    _, out, _ = _run(capsys, "research", str(PLATFORM), "--sso-start-url", "https://other.awsapps.com/start")
    assert "sso_start_url = https://other.awsapps.com/start" in out


def test_on_kueue_there_is_no_hyp_sample(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = PLATFORM.read_text()
    assert "fairnessBackend: task-governance" in text
    (tmp_path / "platform.yaml").write_text(
        text.replace("fairnessBackend: task-governance", "fairnessBackend: kueue")
    )
    code, out, _ = _run(
        capsys, "research", str(tmp_path / "platform.yaml"), "--write-dir", str(tmp_path / "out")
    )
    assert code == 0
    assert "hyp-pytorch-job is refused on fairnessBackend kueue" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["research-job.yaml"]


def onboarding_platform() -> Platform:
    from hyperpod_tenancy.policy import load_platform

    return load_platform(PLATFORM)


def _script_command(script: str) -> str:
    """The ``hyp`` command of a written ``<team>-hyp.sh`` (its continued lines joined)."""
    body = script.split("set -euo pipefail\n", 1)[1]
    return body.replace(" \\\n", " ").strip()


# --- the kubectl sample at admission ------------------------------------------------------------------------


@pytest.mark.parametrize("team", TEAMS)
def test_the_kubectl_job_is_a_valid_kubernetes_object(reference_platform: Platform, team: str) -> None:
    kubernetes_validate.validate(
        onboarding.kubectl_job(_facts(reference_platform, team)), "1.33.0", strict=True
    )


def _stamped(job: dict[str, Any], team: str) -> dict[str, Any]:
    """The Job as the POSIX identity webhook leaves it for a member of ``team`` (its own patch code)."""
    obj = copy.deepcopy(job)
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if (k.group, k.kind) == ("batch", "Job")]
    ident = webhook_patch.Identity(person="sso:alice", uid=ta.SUBMITTER_UID, gid=ta.team_gid(team))
    webhook_patch.stamp(
        obj, kind=kind, ident=ident, home_claim="fsx", keep=False, default_queue=names.local_queue(team)
    )
    return obj


@pytest.mark.parametrize("team", TEAMS)
def test_the_kubectl_job_passes_its_team_after_the_webhook_stamped_it(synth: Synth, team: str) -> None:
    job = _stamped(onboarding.kubectl_job(_facts(synth.platform, team)), team)
    spec = job["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsUser"] == ta.SUBMITTER_UID
    assert [m["mountPath"] for m in spec["containers"][0]["volumeMounts"]] == [
        f"/fsx/{team}",
        "/home/hyperpod",
    ]
    decision = ta.decide(synth, job, team=team)
    assert decision.allowed, decision.denied
    # the pods job-controller creates from the stamped template pass the pod policies, POSIX identity included
    pod = ta.child(
        "Pod",
        job,
        spec=spec,
        labels=ta.kueue_labels(team, job["metadata"]["labels"][labels.PRIORITY_CLASS_LABEL]),
    )
    pod_decision = ta.decide(synth, pod, team=team, user=ta.JOB_CONTROLLER)
    assert POSIX_IDENTITY_POLICY in pod_decision.policies()
    assert pod_decision.allowed, pod_decision.denied


@pytest.mark.parametrize(
    ("team", "other"), [("research", "vision"), ("inference", "research"), ("research", "inference")]
)
def test_the_kubectl_job_fails_in_another_team(synth: Synth, team: str, other: str) -> None:
    job = onboarding.kubectl_job(_facts(synth.platform, team))
    job["metadata"]["namespace"] = names.namespace(other)  # kubectl apply -n <other team>
    denied = ta.decide(synth, _stamped(job, other), team=other).denied
    assert any(f"label kueue.x-k8s.io/queue-name must be {names.local_queue(other)}" in m for m in denied), (
        denied
    )


def test_a_sample_without_its_checkpoint_is_denied_where_the_team_must_checkpoint(synth: Synth) -> None:
    job = onboarding.kubectl_job(_facts(synth.platform, "research"))
    del job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert any(labels.CHECKPOINT_DIR_ENV in m for m in ta.decide(synth, _stamped(job, "research")).denied)


def test_the_checkpoint_rule_printed_is_the_one_admission_applies(synth: Synth) -> None:
    """For every hosted team and class it may use: a Job without a declaration is refused by the checkpoint
    policy exactly when the facts say that class needs one in that team."""
    seen = set()
    for team in synth.platform.hosted_teams:
        facts = _facts(synth.platform, team.name)
        for rule in facts.classes:
            job = onboarding.kubectl_job(facts)
            job["spec"]["template"]["spec"]["containers"][0].pop("env", None)
            job["metadata"]["labels"][labels.PRIORITY_CLASS_LABEL] = rule.workload_priority_class
            decision = ta.decide(synth, _stamped(job, team.name), team=team.name)
            refused = any(o.policy == admission.CHECKPOINT_POLICY and o.failures for o in decision.outcomes)
            assert refused == rule.checkpoint_required, (team.name, rule)
            other = [
                m for o in decision.outcomes if o.policy != admission.CHECKPOINT_POLICY for m in o.failures
            ]
            assert not other, other
            seen.add(rule.checkpoint_required)
    assert seen == {True, False}  # the reference platform has both cases


def test_the_reasons_name_each_way_work_is_preempted(reference_platform: Platform) -> None:
    """inference neither borrows nor has a class above inference; a lower class it may not use would be
    preemptible and preempted by its own inference work (preemptTeamTasks: LowerPriority)."""
    inference = reference_platform.team("inference")
    assert onboarding.checkpoint_reasons(reference_platform, inference, "inference") == ()
    assert onboarding.checkpoint_reasons(reference_platform, inference, "experimentation") == (
        "experimentation is preemptible",
        "the team's own inference work preempts it",
    )


# --- the hyp sample through the real CLI --------------------------------------------------------------------


@pytest.fixture(scope="module")
def hyp_bodies() -> dict[str, Posted]:
    platform = onboarding_platform()
    lines = [shlex.join(onboarding.hyp_command(_facts(platform, team))) for team in TEAMS]
    return dict(zip(TEAMS, render(lines), strict=True))


@pytest.mark.parametrize("team", TEAMS)
def test_the_hyp_line_renders_with_the_team_namespace_queue_and_priority(
    hyp_bodies: dict[str, Posted], team: str
) -> None:
    facts = _facts(onboarding_platform(), team)
    posted = hyp_bodies[team]
    assert (posted.group, posted.plural, posted.namespace) == (
        "sagemaker.amazonaws.com",
        "hyperpodpytorchjobs",
        facts.namespace,
    )
    meta = posted.body["metadata"]
    assert meta["labels"][labels.QUEUE_NAME_LABEL] == facts.local_queue
    assert meta["labels"][labels.PRIORITY_CLASS_LABEL] == facts.sample_class.workload_priority_class
    (replica,) = posted.body["spec"]["replicaSpecs"]
    (container,) = replica["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    if facts.sample_class.checkpoint_required:
        assert env[labels.CHECKPOINT_DIR_ENV] == facts.checkpoint_directory
    else:
        assert labels.CHECKPOINT_DIR_ENV not in env
    assert container["volumeMounts"] == [{"name": "fsx", "mountPath": facts.fsx_directory}]


@pytest.mark.parametrize("team", TEAMS)
def test_the_hyp_body_is_admitted_on_task_governance_and_refused_on_kueue(
    synth: Synth, hyp_bodies: dict[str, Posted], team: str
) -> None:
    facts = _facts(synth.platform, team)
    decision = ta.decide(synth, copy.deepcopy(hyp_bodies[team].body), team=team)
    assert facts.hyp_supported is not ta.on_kueue(synth)
    if facts.hyp_supported:
        assert decision.allowed, decision.denied
    else:
        ta.assert_refused_on_kueue(decision)


# --- the team stack: outputs and the Studio lifecycle configuration -----------------------------------------


def _outputs(template: dict[str, Any]) -> dict[str, Any]:
    return {k: v["Value"] for k, v in template["Outputs"].items()}


@pytest.mark.parametrize("team", TEAMS)
def test_the_team_stack_outputs_are_the_facts_the_command_prints(
    reference: Synth, capsys: pytest.CaptureFixture[str], team: str
) -> None:
    outputs = _outputs(reference.team(team))
    expected = onboarding.stack_outputs(_facts(reference.platform, team))
    assert set(outputs) == {o.key for o in expected}
    _, printed, _ = _run(capsys, team, str(PLATFORM))
    for output in expected:
        if output.value is None:
            assert not isinstance(outputs[output.key], str), output.key  # a reference, resolved at deploy
            assert f"OutputKey=='{output.key}'" in printed, output.key
            continue
        assert outputs[output.key] == output.value
        if output.key not in ("PriorityClasses", "HomeDirectory", "OnboardingCommand"):
            assert output.value in printed, output.key
    assert reference.stage.team_stacks[team].stack_name == onboarding.team_stack_name(
        reference.platform, team
    )
    assert outputs["SsoRoleArn"] == {
        "Fn::GetAtt": [_one_of(reference, team, "Custom::SsoRoleArn"), "RoleArn"]
    }
    # no output re-exports a cluster value (cfn-lint W6001): the shared ones are read from the cluster stack
    assert "Fn::ImportValue" not in json.dumps(reference.team(team)["Outputs"])
    for key in onboarding.CLUSTER_RESOURCES:
        assert onboarding.cluster_resource_command(reference.platform, key) in printed


def _one_of(synth: Synth, team: str, type_: str) -> str:
    (logical_id,) = resources_of(synth.team(team), type_)
    return logical_id


def test_the_cluster_resources_printed_are_one_resource_each(reference: Synth) -> None:
    """The describe-stack-resources query of each shared value names exactly one resource of the cluster stack."""
    for key, (resource_type, prefix, _) in onboarding.CLUSTER_RESOURCES.items():
        found = [lid for lid in resources_of(reference.cluster, resource_type) if lid.startswith(prefix)]
        assert len(found) == 1, (key, found)
        assert (
            reference.cluster["Resources"][found[0]]["DeletionPolicy"] == "Retain"
        )  # so its ID never changes
    assert reference.stage.cluster_stack.stack_name == onboarding.cluster_stack_name(reference.platform)


def test_members_may_read_their_own_team_stack_only(reference: Synth) -> None:
    stacks = {
        t: f"arn:aws:cloudformation:us-east-1:111122223333:stack/{onboarding.team_stack_name(reference.platform, t)}/0f1e"
        for t in ("research", "vision", "inference")
    }
    cluster = f"arn:aws:cloudformation:us-east-1:111122223333:stack/{onboarding.cluster_stack_name(reference.platform)}/0f1e"
    for team in TEAMS:
        (permission_set,) = resources_of(reference.team(team), "AWS::SSO::PermissionSet").values()
        document = permission_set["Properties"]["InlinePolicy"]
        statements = [s for s in document["Statement"] if "cloudformation" in json.dumps(s["Action"])]
        assert len(statements) == 1 and "Fn::" not in json.dumps(statements), statements
        docs = [{"Statement": statements}]
        assert is_allowed(docs, "cloudformation:DescribeStacks", stacks[team])
        for other, arn in stacks.items():
            if other != team:
                assert not is_allowed(docs, "cloudformation:DescribeStacks", arn), other
        assert not is_allowed(docs, "cloudformation:DescribeStacks", cluster)
        assert not is_allowed(docs, "cloudformation:DescribeStackResources", stacks[team])


def _lifecycle(synth: Synth, team: str) -> dict[str, dict[str, Any]]:
    return resources_of(synth.team(team), "AWS::SageMaker::StudioLifecycleConfig")


def test_each_domain_runs_the_lifecycle_configuration_in_jupyterlab_and_code_editor(reference: Synth) -> None:
    for team in reference.platform.hosted_teams:
        template = reference.team(team.name)
        configs = _lifecycle(reference, team.name)
        by_app = {c["Properties"]["StudioLifecycleConfigAppType"]: (lid, c) for lid, c in configs.items()}
        assert set(by_app) == {"JupyterLab", "CodeEditor"}
        facts = _facts(reference.platform, team.name)
        for _lid, config in by_app.values():
            props = config["Properties"]
            script = base64.b64decode(props["StudioLifecycleConfigContent"]).decode()
            assert script == studio_lifecycle_script(facts)
            assert len(props["StudioLifecycleConfigContent"]) <= 16384
            name = props["StudioLifecycleConfigName"]
            assert len(name) <= 63 and name.startswith(f"shared-gpu-{team.name}-")
        (domain,) = resources_of(template, "AWS::SageMaker::Domain").values()
        settings = domain["Properties"]["DefaultUserSettings"]
        for key, app in (("JupyterLabAppSettings", "JupyterLab"), ("CodeEditorAppSettings", "CodeEditor")):
            arn = {"Fn::GetAtt": [by_app[app][0], "StudioLifecycleConfigArn"]}
            assert settings[key] == {
                "DefaultResourceSpec": {"LifecycleConfigArn": arn},
                "LifecycleConfigArns": [arn],
            }
        assert not [
            m for m in lint_template(template, reference.platform.region) if m.rule.id.startswith("E")
        ]


def test_the_start_url_of_the_cdk_context_reaches_the_studio_script(
    reference_platform: Platform, tmp_path: Path
) -> None:
    """``cdk.json`` context ``hyperpod-tenancy:ssoStartUrl`` (what the CLI reads beside the policy) is the URL the
    team stack bakes into the lifecycle script."""
    from synth import new_app

    from hyperpod_tenancy.stacks import PlatformStage

    app = new_app(tmp_path / "out")
    app.node.set_context(onboarding.SSO_START_URL_CONTEXT, START_URL)
    stage = PlatformStage(app, reference_platform.name, platform=reference_platform)
    template = stage.synth().get_stack_by_name(stage.team_stacks["research"].stack_name).template
    (config, *_) = resources_of(template, "AWS::SageMaker::StudioLifecycleConfig").values()
    script = base64.b64decode(config["Properties"]["StudioLifecycleConfigContent"]).decode()
    assert script == studio_lifecycle_script(_facts(reference_platform, "research", sso_start_url=START_URL))
    assert f"HPT_SSO_START_URL={START_URL}\n" in script


def test_a_team_without_studio_has_no_studio_outputs(reference_platform: Platform) -> None:
    import dataclasses

    teams = tuple(
        dataclasses.replace(t, studio=False) if t.name == "research" else t for t in reference_platform.teams
    )
    facts = _facts(dataclasses.replace(reference_platform, teams=teams), "research")
    assert facts.studio_domain is None
    keys = {o.key for o in onboarding.stack_outputs(facts)}
    assert "SsoRoleArn" in keys and not {k for k in keys if k.startswith("Studio")}


def test_a_changed_script_gets_a_new_name(reference_platform: Platform) -> None:
    """Every property is create-only: CloudFormation creates the replacement first, so its name must differ."""
    facts = _facts(reference_platform, "research")
    one = onboarding.lifecycle_config_name(facts, "JupyterLab", content="a")
    assert one != onboarding.lifecycle_config_name(facts, "JupyterLab", content="b")
    assert one != onboarding.lifecycle_config_name(facts, "CodeEditor", content="a")
    long = onboarding.OnboardingFacts(**{**facts.__dict__, "cluster": "c" * 40, "team": "t" * 30})
    name = onboarding.lifecycle_config_name(long, "CodeEditor", content="a")
    assert len(name) == 63 and name[0].isalnum() and name[-1].isalnum()


# --- the Studio lifecycle script, run ------------------------------------------------------------------------

FAKE_AWS = """#!/bin/bash
# records every call; `sts get-caller-identity` succeeds once the user has signed in ($SIGNED_IN exists)
printf '%s\\n' "$*" >> "$AWS_CALLS"
case "$1 $2" in
  "sts get-caller-identity") [ -e "$SIGNED_IN" ] ;;
  "sso login") : > "$SIGNED_IN" ;;
  "eks update-kubeconfig")
    while [ $# -gt 0 ]; do case "$1" in --kubeconfig) file="$2"; shift ;; --alias) alias="$2"; shift ;; esac; shift; done
    mkdir -p "$(dirname "$file")"  # as the AWS CLI does
    printf 'contexts:\\n- name: %s\\n' "$alias" >> "$file" ;;
  *) exit 64 ;;
esac
"""


def _shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SHELLCHECK), "-s", "bash", str(path)], capture_output=True, text=True, check=False
    )


def test_the_lifecycle_script_is_shellcheck_clean(reference: Synth, tmp_path: Path) -> None:
    rendered = tmp_path / "rendered.sh"
    (config, *_) = _lifecycle(reference, "research").values()
    rendered.write_bytes(base64.b64decode(config["Properties"]["StudioLifecycleConfigContent"]))
    # a domain in the team's own account: the script's other end
    team_account = tmp_path / "team-account.sh"
    team_account.write_text(
        studio_lifecycle_script(onboarding.onboarding_facts(example("team-accounts"), "research"))
    )
    for path in (rendered, team_account):
        result = _shellcheck(path)
        assert result.returncode == 0, result.stdout
    broken = tmp_path / "broken.sh"
    broken.write_text("#!/bin/bash\necho $1\n")
    assert _shellcheck(broken).returncode != 0  # the check can fail


class Studio:
    """A fake Studio home: the script run as the app start would, with a fake ``aws`` on PATH."""

    def __init__(self, root: Path, script: str) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.bin = root / "bin"
        self.bin.mkdir()
        (self.bin / "aws").write_text(FAKE_AWS)
        (self.bin / "aws").chmod(0o755)
        self.calls = root / "calls"
        self.signed_in = root / "signed-in"
        self.script = root / "lifecycle.sh"
        self.script.write_text(script)

    @property
    def env(self) -> dict[str, str]:
        """The environment of the app: the fake home and the fake ``aws`` first on PATH."""
        return {
            "HOME": str(self.home),
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "AWS_CALLS": str(self.calls),
            "SIGNED_IN": str(self.signed_in),
        }

    def run(self) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["bash", str(self.script)], env=self.env, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr
        return result

    def terminal(self, command: str) -> str:
        """Run ``command`` in a new interactive-like bash that reads ``~/.bashrc``, as a Studio terminal does."""
        script = f". {shlex.quote(str(self.home / '.bashrc'))}; {command}"
        result = subprocess.run(
            ["bash", "-c", script], env=self.env, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def calls_made(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def files(self) -> dict[str, str]:
        return {
            str(p.relative_to(self.home)): p.read_text() for p in sorted(self.home.rglob("*")) if p.is_file()
        }


@pytest.fixture
def studio(reference_platform: Platform, tmp_path: Path) -> Studio:
    return Studio(
        tmp_path, studio_lifecycle_script(_facts(reference_platform, "research", sso_start_url=START_URL))
    )


def test_the_lifecycle_script_writes_the_profile_and_the_login_helper(studio: Studio) -> None:
    out = studio.run().stdout
    config = (studio.home / ".aws" / "config").read_text()
    assert config == (
        "[sso-session ml-platform]\n"
        f"sso_start_url = {START_URL}\n"
        "sso_region = us-east-1\n"
        "sso_registration_scopes = sso:account:access\n"
        "\n"
        "[profile shared-gpu-research]\n"
        "sso_session = ml-platform\n"
        "sso_account_id = 111122223333\n"
        "sso_role_name = Research\n"
        "region = us-east-1\n"
    )
    assert stat.S_IMODE((studio.home / ".aws" / "config").stat().st_mode) == 0o600
    # not signed in yet: no kubeconfig, the next step printed
    assert studio.calls_made() == ["sts get-caller-identity --profile shared-gpu-research"]
    assert not (studio.home / ".kube").exists()
    assert (
        "next, in a terminal: hyperpod_login (that is: aws sso login --profile shared-gpu-research && " in out
    )
    helper = studio.home / ".hyperpod-tenancy" / "shared-gpu-research.sh"
    assert (studio.home / ".bashrc").read_text() == f'[ -r "{helper}" ] && . "{helper}"\n'
    # the helper reminds the user in each terminal until the kubeconfig has the cluster; hyperpod_login signs in
    # (device code: a Studio terminal has no browser) and then writes the kubeconfig
    assert "run hyperpod_login to sign in as yourself and reach shared-gpu" in studio.terminal("true")
    studio.terminal("hyperpod_login")
    kubeconfig = studio.home / ".kube" / "config"
    assert studio.calls_made()[1:] == [
        "sso login --profile shared-gpu-research --use-device-code",
        "eks update-kubeconfig --name shared-gpu --region us-east-1 --profile shared-gpu-research "
        f"--alias shared-gpu-research --kubeconfig {kubeconfig}",
    ]
    assert "run hyperpod_login" not in studio.terminal("true")


def test_the_lifecycle_script_is_idempotent(studio: Studio) -> None:
    studio.run()
    first = studio.files()
    out = studio.run().stdout
    assert studio.files() == first
    assert "already has [profile shared-gpu-research]: left as it is" in out


def test_once_signed_in_the_script_adds_the_cluster_to_the_kubeconfig(studio: Studio) -> None:
    studio.run()
    studio.signed_in.touch()  # aws sso login happened (the token outlives an app restart)
    out = studio.run().stdout
    kubeconfig = studio.home / ".kube" / "config"
    assert studio.calls_made()[-1] == (
        "eks update-kubeconfig --name shared-gpu --region us-east-1 --profile shared-gpu-research "
        f"--alias shared-gpu-research --kubeconfig {kubeconfig}"
    )
    assert "added context shared-gpu-research" in out
    calls = len(studio.calls_made())
    studio.run()
    assert len(studio.calls_made()) == calls  # the context is there: nothing called again
    assert kubeconfig.read_text().count("name: shared-gpu-research") == 1


def test_the_script_keeps_what_the_user_already_has(studio: Studio) -> None:
    aws = studio.home / ".aws"
    aws.mkdir()
    mine = "[default]\nregion = eu-west-1\n[profile shared-gpu-research]\nsso_role_name = Mine"  # no final newline
    (aws / "config").write_text(mine)
    (studio.home / ".bashrc").write_text("export EDITOR=vim\n")
    out = studio.run().stdout
    config = (aws / "config").read_text()
    assert config.startswith(mine + "\n\n[sso-session ml-platform]\n")
    assert "sso_role_name = Research" not in config
    assert "left as it is" in out
    assert (studio.home / ".bashrc").read_text().startswith("export EDITOR=vim\n")


def test_without_a_start_url_the_script_says_how_to_configure_sso(reference: Synth, tmp_path: Path) -> None:
    (config, *_) = _lifecycle(reference, "research").values()  # the reference cdk.json names no portal URL
    studio = Studio(tmp_path, base64.b64decode(config["Properties"]["StudioLifecycleConfigContent"]).decode())
    out = studio.run().stdout
    assert "run: aws configure sso --profile shared-gpu-research" in out
    assert not (studio.home / ".aws").exists()
    assert studio.calls_made() == []


# --- offboarding --------------------------------------------------------------------------------------------


def test_offboarding_prints_the_runbook(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "research", str(PLATFORM), "--offboard", "alice")
    assert code == 0
    assert "Nothing below has been run" in out
    assert "aws identitystore delete-group-membership" in out
    assert "--group-id 906754abcd-11111111-aaaa-bbbb-cccc-111111111111" in out
    assert '"hyperpod-tenancy.io/posix-user"] == "sso:alice"' in out
    assert "hyperpodpytorchjobs.sagemaker.amazonaws.com" in out and "deployments.apps" not in out
    assert '--key \'{"pk": {"S": "person#sso:alice"}}\'' in out and "delete-item" not in out
    assert "--stack-name ml-platform-Cluster" in out
    _, inference, _ = _run(capsys, "inference", str(PLATFORM), "--offboard", "bob")
    assert "deployments.apps" in inference


def test_the_uid_record_query_names_the_webhook_table(reference: Synth) -> None:
    (table,) = resources_of(reference.cluster, "AWS::DynamoDB::Table")
    assert table.startswith("ClusterPosixIdentity")


def _selected(annotation_owner: str) -> list[str]:
    """What the runbook's jq filter picks from a listing with one workload of alice and one of bob."""
    facts = _facts(onboarding_platform(), "research")
    steps = onboarding.offboarding_steps(
        facts, annotation_owner, inference=False, cluster_stack="s", instance_arn="arn", group_id="g"
    )
    (_, commands) = steps[1]
    filter_ = shlex.split(commands[1].split("| jq -r ", 1)[1].split(" | xargs", 1)[0])[0]
    listing = {
        "items": [
            {
                "kind": "HyperPodPyTorchJob",
                "apiVersion": "sagemaker.amazonaws.com/v1",
                "metadata": {"name": "a", "annotations": {labels.POSIX_USER_ANNOTATION: "sso:alice"}},
            },
            {
                "kind": "Job",
                "apiVersion": "batch/v1",
                "metadata": {"name": "b", "annotations": {labels.POSIX_USER_ANNOTATION: "sso:bob"}},
            },
            {"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "c"}},
        ]
    }
    result = subprocess.run(
        ["jq", "-r", filter_], input=json.dumps(listing), capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def test_the_runbook_selects_only_the_persons_workloads() -> None:
    if shutil.which("jq") is None:  # the runbook's own tool: never skipped, as a missing checkov is not
        pytest.fail("jq is not installed: run `make jq` (or `sudo apt-get install -y jq`)", pytrace=False)
    assert _selected("alice") == ["hyperpodpytorchjob.sagemaker.amazonaws.com/a"]
    assert _selected("bob") == ["job.batch/b"]


def test_the_archive_job_is_a_valid_platform_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "research", str(PLATFORM), "--offboard", "alice", "--uid", "200007", "--archive-job"
    )
    assert code == 0
    job = json.loads(out)
    kubernetes_validate.validate(job, "1.33.0", strict=True)
    assert job["metadata"]["namespace"] == "hyperpod-tenancy-system"
    (volume,) = job["spec"]["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == names.fsx_root_claim("research")
    code, _, err = _run(
        capsys, "research", str(PLATFORM), "--offboard", "alice", "--uid", "7", "--archive-job"
    )
    assert code == 2 and "below the platform's uidRange" in err


def _archive_script(tmp_path: Path, uid: int) -> Path:
    """The archive Job's script with the file system root moved under ``tmp_path`` (the test's /fsx)."""
    facts = _facts(onboarding_platform(), "research")
    (container,) = onboarding.archive_job(facts, uid)["spec"]["template"]["spec"]["containers"]
    script = container["command"][2].replace(f"{names.FSX_MOUNT_PATH}/", f"{tmp_path}/fsx/")
    path = tmp_path / "archive.sh"
    path.write_text(script)
    return path


def test_the_archive_job_archives_then_removes_the_home_and_nothing_else(tmp_path: Path) -> None:
    home = tmp_path / "fsx" / "research" / "home" / "200007"
    (home / "runs").mkdir(parents=True)
    (home / "runs" / "notes.txt").write_text("mine")
    neighbour = tmp_path / "fsx" / "research" / "home" / "200008"
    neighbour.mkdir()
    script = _archive_script(tmp_path, 200007)
    result = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    archive = tmp_path / "fsx" / ".offboarded" / "research" / "200007.tar.gz"
    assert not home.exists() and neighbour.exists()
    with tarfile.open(archive) as tar:
        assert tar.extractfile("200007/runs/notes.txt").read() == b"mine"  # type: ignore[union-attr]
    for directory in (archive.parent, archive.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    # run again: the home is gone and the archive stays as it was
    again = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=False)
    assert again.returncode == 2 and archive.exists()


def test_the_archive_job_refuses_a_symbolic_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "fsx" / "research" / "home").mkdir(parents=True)
    (tmp_path / "fsx" / "research" / "home" / "200007").symlink_to(target)
    result = subprocess.run(
        ["sh", str(_archive_script(tmp_path, 200007))], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2 and target.exists()
    assert not (tmp_path / "fsx" / ".offboarded").exists()
