"""``python -m hyperpod_tenancy``: the ``hyperpod-tenancy`` command (the webhook image's entry point)."""

from __future__ import annotations

from hyperpod_tenancy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
