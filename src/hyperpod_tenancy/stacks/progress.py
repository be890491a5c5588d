"""Progress of a long synthesis: a line per 10 % of the team stacks built, with the elapsed time.

A platform of many teams takes a while to synthesize; without a sign of life a slow synthesis cannot be told
from a hung one. :class:`SynthProgress` writes ``hyperpod-tenancy: team stacks 100/1000 (10%) built, 4.2 s``
to standard error once per tenth of the teams, only above :data:`PROGRESS_MIN_TEAMS` teams. On a terminal each
line replaces the previous one (carriage return); elsewhere (CI logs, pipes) each is a plain line of its own.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["PROGRESS_MIN_TEAMS", "SynthProgress"]

#: Below this many teams nothing is printed (a synthesis of a few teams takes seconds).
PROGRESS_MIN_TEAMS = 50


class SynthProgress:
    """Report team stacks built so far, a line per 10 %.

    Args:
        total: number of team stacks to build.
        stream: where to write. Default: standard error.
        enabled: write at all. Default: when ``total`` is above :data:`PROGRESS_MIN_TEAMS`.
        clock: seconds, monotonic (tests pass their own).

    """

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = total > PROGRESS_MIN_TEAMS if enabled is None else enabled
        self._clock = clock or time.monotonic
        self._start = self._clock()
        self._next_tenth = 1
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    @property
    def elapsed(self) -> float:
        """Seconds since the progress started."""
        return self._clock() - self._start

    def _write(self, text: str, *, final: bool = False) -> None:
        if self._tty:
            self.stream.write(f"\r{text}" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def step(self, done: int) -> None:
        """Note that ``done`` team stacks are built; write a line at each new tenth."""
        if not self.enabled or self.total <= 0:
            return
        while self._next_tenth <= 10 and done * 10 >= self._next_tenth * self.total:
            self._write(
                f"hyperpod-tenancy: team stacks {done}/{self.total} ({self._next_tenth * 10}%) built, "
                f"{self.elapsed:.1f} s",
                final=self._next_tenth == 10,
            )
            self._next_tenth += 1

    def finish(self, what: str) -> None:
        """Write a last line (``what`` happened after ``elapsed`` seconds), when enabled."""
        if self.enabled:
            self._write(f"hyperpod-tenancy: {what}, {self.elapsed:.1f} s", final=True)
