"""CloudWatch custom widget: one team's live GPUs against its guarantee and ceiling (HTML with an SVG chart).

Each team's dashboard shows this widget; the function is the team's own (environment ``CLUSTER``, ``TEAM``,
``NAMESPACE``) and reads only that team's gauges, so a team member who may invoke it and read the dashboard
needs no CloudWatch metric permission (which IAM cannot limit to one team's dimensions).
"""

import datetime as dt
import html
import os
from typing import Any

import boto3

GAUGES = ("GpusInUse", "GpusBorrowed", "GpuGuarantee", "GpuCeiling")
COLORS = {
    "GpusInUse": "#1f77b4",
    "GpusBorrowed": "#ff7f0e",
    "GpuGuarantee": "#2ca02c",
    "GpuCeiling": "#d62728",
}


def series(
    cloudwatch: Any, *, cluster: str, team: str, namespace: str, start: Any, end: Any
) -> dict[str, Any]:
    """Metric -> [(time, value)] sorted by time, of the team's gauges between ``start`` and ``end``."""
    dims = [{"Name": "Cluster", "Value": cluster}, {"Name": "Team", "Value": team}]
    queries = [
        {
            "Id": f"m{i}",
            "MetricStat": {
                "Metric": {"Namespace": namespace, "MetricName": name, "Dimensions": dims},
                "Period": 300,
                "Stat": "Maximum",
            },
        }
        for i, name in enumerate(GAUGES)
    ]
    found: dict[str, list[Any]] = {name: [] for name in GAUGES}
    kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
    while True:
        page = cloudwatch.get_metric_data(**kwargs)
        for result in page["MetricDataResults"]:
            name = GAUGES[int(result["Id"][1:])]
            found[name] += zip(result["Timestamps"], result["Values"], strict=True)
        if not page.get("NextToken"):
            return {name: sorted(points) for name, points in found.items()}
        kwargs["NextToken"] = page["NextToken"]


def render(team: str, data: dict[str, Any]) -> str:
    """Return the HTML: the latest value of each gauge and a line chart of all four."""
    points = [p for values in data.values() for p in values]
    if not points:
        return f"<p>No GPU gauges for team {html.escape(team)} in this time range yet.</p>"
    t0 = min(t for t, _ in points).timestamp()
    span = max(max(t for t, _ in points).timestamp() - t0, 1)
    top = max([v for _, v in points] + [1])
    lines = []
    for name, values in data.items():
        path = " ".join(
            f"{600 * (t.timestamp() - t0) / span:.1f},{160 - 150 * v / top:.1f}" for t, v in values
        )
        lines.append(f'<polyline fill="none" stroke="{COLORS[name]}" stroke-width="2" points="{path}"/>')
    cells = "".join(
        f'<td style="color:{COLORS[n]}">{html.escape(n)}: {int(v[-1][1]) if v else "-"}</td>'
        for n, v in data.items()
    )
    return (
        f"<table><tr>{cells}</tr></table>"
        f'<svg viewBox="0 0 600 165" width="100%" height="165">{"".join(lines)}</svg>'
        f"<p>GPUs of team {html.escape(team)}; the scale tops at {int(top)}.</p>"
    )


def handler(event: dict[str, Any], context: Any = None) -> str:
    """Render the widget for the dashboard's time range (``widgetContext.timeRange``, ms since the epoch)."""
    if event.get("describe"):
        return "The team's GPUs in use and borrowed, against its guarantee and ceiling (every 5 minutes)."
    window = ((event.get("widgetContext") or {}).get("timeRange")) or {}
    end = dt.datetime.fromtimestamp(
        window.get("end", dt.datetime.now(dt.UTC).timestamp() * 1000) / 1000, dt.UTC
    )
    start = dt.datetime.fromtimestamp(window.get("start", (end.timestamp() - 86400) * 1000) / 1000, dt.UTC)
    team = os.environ["TEAM"]
    data = series(
        boto3.client("cloudwatch"),
        cluster=os.environ["CLUSTER"],
        team=team,
        namespace=os.environ["NAMESPACE"],
        start=start,
        end=end,
    )
    return render(team, data)
