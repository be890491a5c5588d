"""The guardrail table of ``docs/guardrails.md``, rendered from the registry."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_tenancy.policy.rules._base import Domain, Guardrail, Stage

__all__ = ["END_MARKER", "START_MARKER", "markdown_table", "replace_between_markers"]

#: Line before the generated table in docs/guardrails.md.
START_MARKER = "<!-- guardrails:start (generated: hyperpod-tenancy guardrails --write docs/guardrails.md) -->"
#: Line after the generated table in docs/guardrails.md.
END_MARKER = "<!-- guardrails:end -->"

_DOMAINS = list(Domain)
_STAGES = list(Stage)


def markdown_table(guardrails: Sequence[Guardrail]) -> str:
    """Render ``guardrails`` as a Markdown table, grouped by domain, then stage, then registry order.

    Args:
        guardrails: the entries to list.

    Returns:
        The table, one line per guardrail after the header, ending with a newline.

    Raises:
        ValueError: a text contains ``|`` or a line break, which would break the table.

    """
    ordered = sorted(
        enumerate(guardrails),
        key=lambda ig: (_DOMAINS.index(ig[1].domain), _STAGES.index(ig[1].stage), ig[0]),
    )
    lines = [
        "| code | stage | severity | domain | failure it prevents | guardrail |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for _, g in ordered:
        cells = (f"`{g.code}`", g.stage.value, g.severity.value, g.domain.value, g.failure, g.guardrail)
        for cell in cells:
            if "|" in cell or "\n" in cell:
                raise ValueError(f"guardrail {g.code}: {cell!r} cannot be a Markdown table cell.")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def replace_between_markers(
    text: str, table: str, *, start_marker: str = START_MARKER, end_marker: str = END_MARKER
) -> str:
    """Return ``text`` with everything between ``start_marker`` and ``end_marker`` set to ``table``.

    The markers default to the guardrail table's (:data:`START_MARKER`, :data:`END_MARKER`).

    Raises:
        ValueError: the markers are missing or out of order.

    """
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"the file has no {start_marker!r} ... {end_marker!r} section.")
    head = text[: start + len(start_marker)]
    return f"{head}\n{table}{text[end:]}"
