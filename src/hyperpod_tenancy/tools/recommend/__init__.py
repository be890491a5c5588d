"""``hyperpod-tenancy recommend-quotas``: quotas sized from a month of recorded usage."""

from hyperpod_tenancy.tools.recommend.command import add_parser, run

__all__ = ["add_parser", "run"]
