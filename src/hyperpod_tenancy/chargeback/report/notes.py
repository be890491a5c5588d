"""The notes under the tables and the rows each one explains."""

from __future__ import annotations

from hyperpod_tenancy.chargeback.model import (
    Report,
    TeamCharge,
)
from hyperpod_tenancy.chargeback.report._format import _rows

#: Short header of each :data:`_COLUMNS` field in the HTML tables (the unit is in the group header above).
_HEADERS: dict[str, str] = {
    "guaranteed_gpu_hours": "guaranteed",
    "used_gpu_hours": "used",
    "borrowed_gpu_hours": "borrowed",
    "lent_gpu_hours": "lent",
    "idle_gpu_hours": "idle",
    "lost_to_preemption_gpu_hours": "lost",
    "gpu_charge": "GPU charge",
    "lender_credit": "lender credit",
    "shared_charge": "shared",
    "direct_charge": "direct",
    "total": "total",
}


def _column_label(name: str, money: bool) -> str:
    return f"{_HEADERS[name]} ({'USD' if money else 'GPU-hours'})"


def _note_rows(report: Report) -> list[tuple[list[TeamCharge], list[str]]]:
    """For each note, the rows it explains and the instance types it is about.

    A note names a team quoted (``'team-002'``, as the engine writes it) and an instance type as its subject
    (``ml.p5.48xlarge: ...``); an unquoted word is never taken for a team name.
    """
    rows = _rows(report)
    itypes = sorted({r.instance_type for r in rows})
    found: list[tuple[list[TeamCharge], list[str]]] = []
    for note in report.notes:
        teams = {r.team for r in rows if f"'{r.team}'" in note or f'"{r.team}"' in note}
        subjects = [t for t in itypes if note.startswith(f"{t}:")]
        found.append(([r for r in rows if r.team in teams], subjects))
    return found


def _row_notes(report: Report) -> dict[int, list[int]]:
    """``id(row)`` → the 1-based numbers of the notes that explain it."""
    marks: dict[int, list[int]] = {}
    for number, (rows, _) in enumerate(_note_rows(report), start=1):
        for r in rows:
            marks.setdefault(id(r), []).append(number)
    return marks


def _type_notes(report: Report) -> dict[str, list[int]]:
    """Instance type → the 1-based numbers of the notes about it."""
    marks: dict[str, list[int]] = {}
    for number, (_, subjects) in enumerate(_note_rows(report), start=1):
        for itype in subjects:
            marks.setdefault(itype, []).append(number)
    return marks
