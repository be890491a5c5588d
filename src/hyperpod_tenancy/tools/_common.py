"""What the commands share: loading a policy with the errors people see, and a plain text table."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.errors import PROG, PolicyError

if TYPE_CHECKING:
    from hyperpod_tenancy.policy.model import Platform

__all__ = ["MONTH", "PROG", "add_prices_argument", "bad_month", "load_policy", "plain_table"]

#: A month on the command line: ``YYYY-MM``.
MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def bad_month(month: str | None, err: TextIO) -> bool:
    """Whether ``month`` is given and not ``YYYY-MM``; if so, say how to write it (one line on ``err``)."""
    if month is None or MONTH.fullmatch(month):
        return False
    print(f"{PROG}: error: --month {month!r} is not a month; write it as YYYY-MM, e.g. 2026-07.", file=err)
    return True


def add_prices_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--prices FILE``: a price table over the configured ``chargeback.prices``."""
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price table CSV instance_type,usd_per_gpu_hour, over the configured chargeback.prices",
    )


def load_policy(path: Path, err: TextIO, *, role: str = "") -> Platform | None:
    """Load and validate the policy at ``path``; on failure print why to ``err`` and return None.

    Args:
        path: the ``platform.yaml`` to read.
        err: where the problems go (every validation error, or the one-line reason it cannot be read).
        role: what the file is for, in the messages (``"baseline "``); empty for the policy itself.

    """
    try:
        from hyperpod_tenancy.policy.loader import load_platform  # noqa: PLC0415 - pydantic loads on demand

        return load_platform(path)
    except PolicyError as exc:
        if role:
            print(f"{PROG}: the {role.strip()} policy is invalid, so changes cannot be compared.", file=err)
        print(str(exc), file=err)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"{PROG}: error: cannot read {role}policy {str(path)!r}: {reason}.", file=err)
    return None


def plain_table(rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()) -> list[str]:
    """Rows as aligned text lines, indented two spaces; the columns in ``right`` are right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  "
        + "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
