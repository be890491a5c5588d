"""Rendering a report in a format."""

from __future__ import annotations

from hyperpod_tenancy.chargeback.model import (
    Report,
)
from hyperpod_tenancy.chargeback.report._format import Format
from hyperpod_tenancy.chargeback.report.html import _html
from hyperpod_tenancy.chargeback.report.json_csv import _csv, _json
from hyperpod_tenancy.chargeback.report.markdown import _markdown

__all__ = ["render"]


def render(report: Report, fmt: Format | str) -> bytes:
    """Render ``report`` in ``fmt`` (``json``, ``csv``, ``markdown`` or ``html``) as UTF-8 bytes.

    Raises:
        ValueError: an unknown format (the message lists the formats).

    """
    try:
        chosen = Format(fmt)
    except ValueError:
        raise ValueError(f"format {fmt!r}: choose one of {', '.join(f.value for f in Format)}") from None
    renderer = {Format.JSON: _json, Format.CSV: _csv, Format.MARKDOWN: _markdown, Format.HTML: _html}[chosen]
    return renderer(report).encode("utf-8")
