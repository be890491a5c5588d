"""Number formats of the report: money to the cent, GPU-hours to the tenth, the columns and their order."""

from __future__ import annotations

import enum
from decimal import ROUND_HALF_EVEN, Decimal

from hyperpod_tenancy.chargeback.model import (
    Report,
    TeamCharge,
)

__all__ = ["EXTENSIONS", "Format"]


class Format(enum.StrEnum):
    """A rendering of the report."""

    JSON = "json"
    CSV = "csv"
    MARKDOWN = "markdown"
    HTML = "html"


#: File extension of each format (``report-2026-07.<ext>``).
EXTENSIONS: dict[Format, str] = {
    Format.JSON: "json",
    Format.CSV: "csv",
    Format.MARKDOWN: "md",
    Format.HTML: "html",
}


_CENT = Decimal("0.01")


_MILLI = Decimal("0.001")


_TENTH = Decimal("0.1")


_PRICE = Decimal("0.0001")


#: TeamCharge fields in column order, and whether each is money (else GPU-hours).
_COLUMNS: tuple[tuple[str, bool], ...] = (
    ("guaranteed_gpu_hours", False),
    ("used_gpu_hours", False),
    ("borrowed_gpu_hours", False),
    ("lent_gpu_hours", False),
    ("idle_gpu_hours", False),
    ("lost_to_preemption_gpu_hours", False),
    ("gpu_charge", True),
    ("lender_credit", True),
    ("shared_charge", True),
    ("direct_charge", True),
    ("total", True),
)


def _rows(report: Report) -> list[TeamCharge]:
    return sorted(report.rows, key=lambda r: (r.cluster, r.instance_type, r.team, r.cost_center))


def _money(value: Decimal) -> Decimal:
    return value.quantize(_CENT, rounding=ROUND_HALF_EVEN)


def _hours(value: Decimal) -> Decimal:
    return value.quantize(_MILLI, rounding=ROUND_HALF_EVEN)


def _price(value: Decimal) -> Decimal:
    return value.quantize(_PRICE, rounding=ROUND_HALF_EVEN)


def _unsigned_zero(text: str) -> str:
    """``-0.00`` → ``0.00`` (a negative amount rounded to zero is zero)."""
    return text[1:] if text.startswith("-") and set(text[1:]) <= {".", "0", ","} else text


def _num(value: Decimal, money: bool) -> str:
    """Format a number machine-readably: money to cents, GPU-hours to thousandths, no separators."""
    return _unsigned_zero(format(_money(value) if money else _hours(value), "f"))


def _usd(value: Decimal) -> str:
    """Money for people: cents, thousands separators (``1,234,567.89``)."""
    return _unsigned_zero(format(_money(value), ",f"))


def _gpu_hours(value: Decimal) -> str:
    """GPU-hours for people: one decimal, thousands separators (``17,856.0``)."""
    return _unsigned_zero(format(value.quantize(_TENTH, rounding=ROUND_HALF_EVEN), ",f"))


def _human(value: Decimal, money: bool) -> str:
    return _usd(value) if money else _gpu_hours(value)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
