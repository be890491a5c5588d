"""``hyperpod-tenancy plan``: who is guaranteed what, who may borrow how much, and what it costs."""

from hyperpod_tenancy.tools.plan.command import add_parser, markdown, run, text_lines

__all__ = ["add_parser", "markdown", "run", "text_lines"]
