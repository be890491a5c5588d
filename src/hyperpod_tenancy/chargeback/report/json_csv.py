"""The report as JSON and CSV: every figure, machine-readable."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

from hyperpod_tenancy.chargeback.model import (
    Report,
)
from hyperpod_tenancy.chargeback.report._format import _COLUMNS, _camel, _num, _price, _rows
from hyperpod_tenancy.chargeback.report.facts import COLLECTORS, _losses


class _Raw(str):
    """A JSON number already formatted (Decimal digits kept exactly)."""


def _dump(value: object, indent: int = 0) -> str:
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {_dump(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{inner}{_dump(v, indent + 1)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


def _json(report: Report) -> str:
    rec = report.reconciliation
    document = {
        "schemaVersion": report.schema_version,
        "month": report.month,
        "cluster": report.cluster,
        "billingRule": report.rule.value,
        "idleOwner": report.idle_owner,
        "sharedCosts": report.shared_costs.value,
        **(
            {
                "billingTerm": {
                    "effectiveFrom": report.term.effective_from.isoformat(),
                    "signedOffBy": report.term.signed_off_by,
                    "midQuarterReason": report.term.mid_quarter_reason,
                }
            }
            if report.term is not None
            else {}
        ),
        "prices": [
            {
                "instanceType": itype,
                "usdPerGpuHour": _Raw(format(_price(report.gpu_hour_prices[itype]), "f")),
                "source": report.price_sources[itype].value if itype in report.price_sources else None,
            }
            for itype in sorted(report.gpu_hour_prices)
        ],
        "preemptionLossIsUpperBound": report.preemption_loss_is_upper_bound,
        "reconciliation": {
            "charged": _Raw(_num(rec.charged, True)),
            "bill": None if rec.bill is None else _Raw(_num(rec.bill, True)),
            "difference": None if rec.difference is None else _Raw(_num(rec.difference, True)),
            "flagged": rec.flagged,
            "unknownTeams": list(rec.unknown_teams),
            "failed": rec.failed,
            **(
                {
                    "credits": [
                        {"kind": c.kind, "against": c.name, "usd": _Raw(_num(c.cost, True))}
                        for c in rec.credits
                    ]
                }
                if rec.credits
                else {}
            ),
        },
        "rows": [
            {
                "cluster": r.cluster,
                "team": r.team,
                "costCenter": r.cost_center,
                "instanceType": r.instance_type,
                **{_camel(name): _Raw(_num(getattr(r, name), money)) for name, money in _COLUMNS},
            }
            for r in _rows(report)
        ],
        "preemptionLosses": [
            {
                "cluster": loss.cluster,
                "team": loss.team,
                "instanceType": loss.instance_type,
                "priorityClass": loss.priority_class,
                "evictions": loss.evictions,
                "lostGpuHours": _Raw(_num(loss.lost_gpu_hours, False)),
                "costCenter": loss.cost_center,
                "lostUsd": _Raw(_num(loss.lost_usd, True)),
                "upperBound": loss.upper_bound,
                "basis": [str(basis) for basis in loss.bases],
            }
            for loss in _losses(report)
        ],
        "collectionGaps": [
            {
                "table": gap.table,
                "collector": COLLECTORS[gap.table],
                "start": _rfc3339(gap.start),
                "end": _rfc3339(gap.end),
                "minutes": gap.minutes,
                "hours": [_rfc3339(hour) for hour in gap.hours],
            }
            for gap in report.collection_gaps
        ],
        **(
            {
                "billedPeriods": [
                    {"team": p.team, "start": _rfc3339(p.start), "end": _rfc3339(p.end), "hours": p.hours}
                    for p in report.billed_periods
                ]
            }
            if report.billed_periods
            else {}
        ),
        **(
            {
                "disallowedBorrowing": [
                    {"team": team, "borrowedGpuHours": _Raw(_num(hours, False))}
                    for team, hours in report.disallowed_borrowing
                ]
            }
            if report.disallowed_borrowing
            else {}
        ),
        "notes": list(report.notes),
    }
    return _dump(document) + "\n"


def _rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "month",
            "cluster",
            "team",
            "cost_center",
            "instance_type",
            *(name for name, _ in _COLUMNS),
            "billing_rule",
        ]
    )
    for r in _rows(report):
        writer.writerow(
            [
                report.month,
                r.cluster,
                r.team,
                r.cost_center,
                r.instance_type,
                *(_num(getattr(r, name), money) for name, money in _COLUMNS),
                report.rule.value,
            ]
        )
    return out.getvalue()
