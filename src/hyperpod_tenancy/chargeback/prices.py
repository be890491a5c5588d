"""The price table: a CSV of ``instance_type,usd_per_gpu_hour``, for months without a bill and for plans."""

from __future__ import annotations

import csv
from decimal import Decimal, InvalidOperation
from pathlib import Path

__all__ = ["PriceTableError", "read_prices"]


class PriceTableError(ValueError):
    """The price table cannot be read or is malformed; the message names the file and the line."""


def read_prices(path: Path, *, option: str = "--prices") -> dict[str, Decimal]:
    """Read a price table: CSV with a header ``instance_type,usd_per_gpu_hour``, one row per instance type.

    Args:
        path: the CSV file.
        option: the command-line option that named it, for the messages.

    Returns:
        USD per GPU-hour by instance type.

    Raises:
        PriceTableError: the file cannot be read, lacks a column, repeats a type or has a bad price.

    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceTableError(f"{option} {str(path)!r}: cannot read: {exc.strerror or exc}") from exc
    reader = csv.DictReader(text.splitlines())
    fields = set(reader.fieldnames or ())
    if not {"instance_type", "usd_per_gpu_hour"} <= fields:
        raise PriceTableError(
            f"{option} {str(path)!r}: the header must name instance_type and usd_per_gpu_hour (found "
            f"{', '.join(sorted(fields)) or 'none'})"
        )
    prices: dict[str, Decimal] = {}
    for line, row in enumerate(reader, start=2):
        itype = (row["instance_type"] or "").strip()
        raw = (row["usd_per_gpu_hour"] or "").strip()
        try:
            price = Decimal(raw)
        except InvalidOperation:
            price = Decimal(-1)
        if not itype or not price.is_finite() or price < 0:
            raise PriceTableError(
                f"{option} {str(path)!r} line {line}: need an instance type and a price ≥ 0 in USD per GPU-hour, "
                f"got {itype!r}, {raw!r}"
            )
        if itype in prices:
            raise PriceTableError(f"{option} {str(path)!r} line {line}: {itype} is listed twice")
        prices[itype] = price
    return prices
