"""Renderings of a chargeback :class:`~.model.Report`: JSON, CSV, Markdown and HTML (standard library only).

Every rendering is a pure function of the report: rows sorted by cluster, instance type and team, no time of
rendering, LF line ends, UTF-8. The Lambda and the offline CLI therefore write the same bytes for the
same month. Numbers are rounded only here, half to even. The machine-readable renderings (JSON, CSV) carry
money to cents, GPU-hours to thousandths and prices to ten-thousandths of a dollar per GPU-hour, as plain
numbers with exactly those digits. The renderings for people (Markdown, HTML) print GPU-hours to one decimal
and money to cents, both with thousands separators (``1,234,567.89``), right-aligned in their tables.

The HTML report is one self-contained page: a summary box (the billing rule and the reconciliation), a chart
of what each team is billed (a bar per team on an axis in USD, grouped by cost center, with a subtotal bar per
cost center of more than one row) above the per-team and per-cost-center tables, a legend that says what each
GPU-hour series means, and per instance type an inline SVG chart (guaranteed, borrowed, lent, idle and lost
GPU-hours per team, one column per series, one row per team) above its table. The charts are drawn in pure
Python because the Lambda has no plotting library. A bar is drawn and labelled only where its value is not zero at one
decimal; every label has room of its own, so no two texts overlap. Notes link to the rows they explain and
back.
"""

from __future__ import annotations

from hyperpod_tenancy.chargeback.report._format import EXTENSIONS, Format
from hyperpod_tenancy.chargeback.report.facts import (
    COLLECTOR_NAMES,
    COLLECTORS,
    collection,
    disallowed,
    failure,
)
from hyperpod_tenancy.chargeback.report.render import render

__all__ = [
    "COLLECTORS",
    "COLLECTOR_NAMES",
    "EXTENSIONS",
    "Format",
    "collection",
    "disallowed",
    "failure",
    "render",
]
