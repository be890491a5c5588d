"""CloudWatch custom widget: the state of one team's alerts and of the cluster-wide ones (HTML table).

The team's own function (environment ``TEAM``, ``WORKSPACE_ID``, ``REGION``) calls Amazon Managed Prometheus'
ListRules (``GET /workspaces/<id>/api/v1/rules``, SigV4 service ``aps``; Prometheus' ``/api/v1/rules`` format)
and keeps the rules labelled ``team=<TEAM>`` and those without a ``team`` label (cluster-wide); every other
team's rule carries its own ``team`` label and is dropped here. The team's members may only invoke this
function: IAM cannot limit ``aps:ListRules`` to one team, so they get no ``aps`` permission at all, and nothing
in the invocation chooses the team.
"""

import html
import json
import os
import urllib.request
from typing import Any

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

ORDER = {"firing": 0, "pending": 1, "inactive": 2}


def list_rules(workspace: str, region: str) -> dict[str, Any]:
    """Return the workspace's rules as ListRules answers (``APS_ENDPOINT`` replaces the regional endpoint)."""
    base = os.environ.get("APS_ENDPOINT") or f"https://aps-workspaces.{region}.amazonaws.com"
    url = f"{base}/workspaces/{workspace}/api/v1/rules?type=alert"
    request = AWSRequest(method="GET", url=url)
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise RuntimeError("no AWS credentials to sign the ListRules request")
    SigV4Auth(credentials.get_frozen_credentials(), "aps", region).add_auth(request)
    with urllib.request.urlopen(urllib.request.Request(url, headers=dict(request.headers)), timeout=20) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def visible(team: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the alerting rules ``team`` may see: its own and the cluster-wide ones, firing first."""
    out = []
    for group in answer.get("data", {}).get("groups", []):
        for rule in group.get("rules", []):
            owner = (rule.get("labels") or {}).get("team")
            if rule.get("type") == "alerting" and owner in (None, team):
                out.append({**rule, "scope": "team" if owner else "cluster"})
    return sorted(out, key=lambda r: (ORDER.get(r.get("state", ""), 3), r["scope"] != "team", r["name"]))


def render(team: str, rules: list[dict[str, Any]]) -> str:
    """Return the HTML table: alert, scope, state, since when, and the first active alert's summary."""
    if not rules:
        return f"<p>No alert rules for team {html.escape(team)} in the workspace yet.</p>"
    rows = []
    for rule in rules:
        alerts = sorted(rule.get("alerts") or [], key=lambda a: a.get("activeAt", ""))
        first = alerts[0] if alerts else {}
        summary = (first.get("annotations") or {}).get("summary", "")
        state = rule.get("state", "unknown")
        color = {"firing": "#d62728", "pending": "#ff7f0e"}.get(state, "#2ca02c")
        rows.append(
            f"<tr><td>{html.escape(rule['name'])}</td><td>{rule['scope']}</td>"
            f'<td style="color:{color}"><b>{html.escape(state)}</b></td>'
            f"<td>{html.escape(first.get('activeAt', '')[:19].replace('T', ' '))}</td>"
            f"<td>{html.escape(summary)}</td></tr>"
        )
    return (
        "<table><tr><th>alert</th><th>scope</th><th>state</th><th>since (UTC)</th><th>now</th></tr>"
        f"{''.join(rows)}</table><p>Alerts of team {html.escape(team)} and of the whole cluster; "
        "<code>hyperpod-tenancy explain</code> says why work waits.</p>"
    )


def handler(event: dict[str, Any], context: Any = None) -> str:
    """Render the widget; ``event`` (the dashboard's parameters) chooses nothing."""
    if event.get("describe"):
        return "The state of the team's alerts and of the cluster-wide alerts."
    team = os.environ["TEAM"]
    return render(team, visible(team, list_rules(os.environ["WORKSPACE_ID"], os.environ["REGION"])))
