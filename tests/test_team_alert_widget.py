"""Each team sees the state of its own alerts and of the cluster-wide ones, and nothing of another team's.

* The rules are the synthesized platform's own (every ``AWS::APS::RuleGroupsNamespace`` of every stack), loaded
  into a real Prometheus (Debian's ``prometheus``, which ``make promtool`` installs) served under the path of an
  Amazon Managed Prometheus workspace, so ``/workspaces/<id>/api/v1/rules`` answers in the format of
  Prometheus' HTTP API that AMP's ListRules returns (AMP User Guide, "ListRules"). A scrape target holds one of
  research's workloads pending, so its waiting alert and the cluster's admission-stalled alert go ``pending``.
* The team's widget function runs for real (SigV4-signed for ``aps``, through a recording proxy) and draws what
  the team may see; the permission set is evaluated offline: it may invoke its own widget, never another team's,
  and has no ``aps`` permission at all.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from iam_eval import is_allowed
from kube_api_server import ServedOnThread
from prometheus_server import running_prometheus
from synth import Synth, render_intrinsics, resources_of

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime import alert_widget

ACCOUNT = "111122223333"
CLUSTER = "shared-gpu"
WORKSPACE = "ws-00000000-0000-0000-0000-000000000000"
WAITING = "research"


class _Exporter(ServedOnThread):
    """A scrape target with Kueue's pending-workloads gauge: one of ``WAITING``'s workloads never admitted."""

    def __init__(self) -> None:
        body = (
            "# TYPE kueue_pending_workloads gauge\n"
            f'kueue_pending_workloads{{cluster_queue="{names.cluster_queue(WAITING)}",status="active",'
            'replica_role="leader"} 1\n'
            "# TYPE kueue_admission_attempts_total counter\n"
            'kueue_admission_attempts_total{result="inadmissible",replica_role="leader"} 0\n'
        ).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)


class _RecordingProxy(ServedOnThread):
    """Forwards GETs to ``upstream`` and keeps each request's path and headers (what the function sent)."""

    def __init__(self, upstream: str) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append((self.path, dict(self.headers)))
                with urllib.request.urlopen(upstream + self.path, timeout=10) as answer:
                    data = answer.read()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def _rule_files(synth: Synth, into: Path) -> list[Path]:
    """Every rule groups namespace of the platform as a rule file named after it, evaluated every second."""
    files = []
    for template in synth.templates.values():
        for namespace in resources_of(template, "AWS::APS::RuleGroupsNamespace").values():
            data = json.loads(render_intrinsics(namespace["Properties"]["Data"]))
            for group in data["groups"]:
                group["interval"] = "1s"
            path = into / namespace["Properties"]["Name"]
            path.write_text(json.dumps(data), encoding="utf-8")
            files.append(path)
    return files


@pytest.fixture(scope="module")
def prometheus(reference: Synth, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus with the platform's rules, under a workspace's path; yields its base URL."""
    root = tmp_path_factory.mktemp("prometheus")
    rules = _rule_files(reference, root)
    assert len(rules) == len(reference.platform.hosted_teams) + 1  # one per team, one cluster-wide
    with _Exporter() as exporter:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in rules],
            "scrape_configs": [
                {"job_name": "kueue", "static_configs": [{"targets": [exporter.url.removeprefix("http://")]}]}
            ],
        }
        with running_prometheus(root, config, route_prefix=f"/workspaces/{WORKSPACE}") as workspace:
            deadline = time.monotonic() + 60
            while True:
                states = {
                    (r["name"], (r.get("labels") or {}).get("team")): r["state"]
                    for r in _raw_rules(workspace)
                }
                if states.get(("HyperPodTenancyWorkloadsWaiting", WAITING)) == "pending" and (
                    states.get(("HyperPodTenancyAdmissionStalled", None)) == "pending"
                ):
                    break
                if time.monotonic() > deadline:
                    pytest.fail(f"Prometheus did not evaluate the rules: {states}")
                time.sleep(0.5)
            yield workspace.removesuffix(f"/workspaces/{WORKSPACE}")


def _draw(team: str, base: str, monkeypatch: pytest.MonkeyPatch, event: dict[str, Any]) -> tuple[str, Any]:
    with _RecordingProxy(base) as proxy:
        for key, value in {
            "TEAM": team,
            "WORKSPACE_ID": WORKSPACE,
            "REGION": "us-east-1",
            "APS_ENDPOINT": proxy.url,
            "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        }.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        page = alert_widget.handler(event)
        return page, proxy.requests


def _rows(page: str) -> set[tuple[str, str, str]]:
    """(alert, scope, state) of each row the widget drew."""
    return set(re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td style=[^>]*><b>(\w+)</b>", page))


def _raw_rules(workspace: str) -> list[dict[str, Any]]:
    """Every alerting rule the workspace (``…/workspaces/<id>``) holds, as its API answers."""
    with urllib.request.urlopen(f"{workspace}/api/v1/rules?type=alert") as answer:
        groups = json.loads(answer.read())["data"]["groups"]
    return [r for g in groups for r in g["rules"]]


def _expected(team: str, prometheus: str) -> set[tuple[str, str, str]]:
    """What the workspace holds for ``team``: rules labelled with it, and the unlabelled (cluster-wide) ones."""
    return {
        (r["name"], "team" if (r.get("labels") or {}).get("team") else "cluster", r["state"])
        for r in _raw_rules(f"{prometheus}/workspaces/{WORKSPACE}")
        if (r.get("labels") or {}).get("team") in (None, team)
    }


def test_a_team_sees_its_own_alerts_and_the_clusters(
    reference: Synth, prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    page, requests = _draw(WAITING, prometheus, monkeypatch, {})
    ((path, headers),) = requests
    assert path == f"/workspaces/{WORKSPACE}/api/v1/rules?type=alert"
    # signed for Amazon Managed Prometheus in the workspace's Region
    assert "/us-east-1/aps/aws4_request" in headers["Authorization"]
    assert "HyperPodTenancyWorkloadsWaiting" in page and "HyperPodTenancyAdmissionStalled" in page
    assert f"Team {WAITING} has had workloads waiting" in page  # the summary of the pending alert
    assert _rows(page) == _expected(WAITING, prometheus)
    assert ("HyperPodTenancyWorkloadsWaiting", "team", "pending") in _rows(page)
    assert ("HyperPodTenancyAdmissionStalled", "cluster", "pending") in _rows(page)
    others = [t.name for t in reference.platform.hosted_teams if t.name != WAITING]
    assert others and not any(other in page for other in others)


def test_another_team_sees_nothing_of_that_team(
    reference: Synth, prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = next(t.name for t in reference.platform.hosted_teams if t.name != WAITING)
    # the dashboard's parameters choose nothing: asking for the waiting team still draws the function's own
    page, _ = _draw(
        other, prometheus, monkeypatch, {"team": WAITING, "widgetContext": {"params": {"team": WAITING}}}
    )
    assert WAITING not in page
    assert _rows(page) == _expected(other, prometheus)
    assert ("HyperPodTenancyWorkloadsWaiting", "team", "inactive") in _rows(
        page
    )  # its own, with nothing waiting
    assert ("HyperPodTenancyAdmissionStalled", "cluster", "pending") in _rows(page)
    # the waiting team's rules are in the same workspace, and none of them is drawn
    held = _raw_rules(f"{prometheus}/workspaces/{WORKSPACE}")
    assert any((r.get("labels") or {}).get("team") == WAITING for r in held)


def _permission_set_policy(synth: Synth, team: str) -> dict[str, Any]:
    ((_, permission_set),) = resources_of(synth.team(team), "AWS::SSO::PermissionSet").items()
    rendered = render_intrinsics(permission_set["Properties"]["InlinePolicy"])
    policy: dict[str, Any] = json.loads(rendered) if isinstance(rendered, str) else rendered
    return policy


def _widget_arn(team: str) -> str:
    return f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{names.team_alert_widget(CLUSTER, team)}"


def test_a_team_may_draw_its_own_alert_widget_only(reference: Synth) -> None:
    teams = [t.name for t in reference.platform.hosted_teams]
    workspace = f"arn:aws:aps:us-east-1:{ACCOUNT}:workspace/{WORKSPACE}"
    for team in teams:
        policy = _permission_set_policy(reference, team)
        assert is_allowed(policy, "lambda:InvokeFunction", _widget_arn(team)), team
        for other in teams:
            if other != team:
                assert not is_allowed(policy, "lambda:InvokeFunction", _widget_arn(other)), (team, other)
        for action in ("aps:ListRules", "aps:ListAlerts", "aps:QueryMetrics", "aps:GetAlertManagerStatus"):
            assert not is_allowed(policy, action, workspace), (team, action)
            assert not is_allowed(policy, action, "*"), (team, action)


def test_the_alert_widget_is_the_teams_own_function(reference: Synth) -> None:
    source = Path(alert_widget.__file__).read_text(encoding="utf-8")
    assert len(source) <= 4096  # CloudFormation's inline ZipFile limit
    for team in reference.platform.hosted_teams:
        template = reference.team(team.name)
        functions = {
            logical: f["Properties"]
            for logical, f in resources_of(template, "AWS::Lambda::Function").items()
            if f["Properties"].get("FunctionName") == names.team_alert_widget(CLUSTER, team.name)
        }
        ((logical, function),) = functions.items()
        assert function["Code"]["ZipFile"] == source
        variables = function["Environment"]["Variables"]
        assert variables["TEAM"] == team.name and variables["REGION"] == "us-east-1"
        assert set(variables) == {"TEAM", "WORKSPACE_ID", "REGION"}
        role = function["Role"]["Fn::GetAtt"][0]
        statements = [
            s
            for p in resources_of(template, "AWS::IAM::Policy").values()
            if {"Ref": role} in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        ]
        # the widgets' shared role: ListRules on the platform's workspace (imported from the cluster stack) and
        # the GPU widget's GetMetricData, nothing else
        by_action = {st["Action"]: st for st in statements}
        assert set(by_action) == {"aps:ListRules", "cloudwatch:GetMetricData"}
        assert "Fn::ImportValue" in json.dumps(by_action["aps:ListRules"]["Resource"])
        gpu_widget = next(
            f["Properties"]
            for f in resources_of(template, "AWS::Lambda::Function").values()
            if f["Properties"].get("FunctionName") == names.team_gpu_widget(CLUSTER, team.name)
        )
        assert gpu_widget["Role"] == function["Role"]
        (dashboard,) = resources_of(template, "AWS::CloudWatch::Dashboard").values()
        body = json.loads(render_intrinsics(dashboard["Properties"]["DashboardBody"]))
        assert [
            w["properties"]["title"].split(": ")[1] for w in body["widgets"] if w["type"] == "custom"
        ] == [
            "GPUs now, against the guarantee and the ceiling (every 5 minutes)",
            "alerts of the team and of the cluster, now",
        ]
        assert logical
