"""``hyperpod-tenancy explain``: why a workload waits, was refused or was preempted, in the words of the team"s policy."""

from hyperpod_tenancy.tools.explain.command import (
    EXIT_EXPLAINED,
    EXIT_INPUT,
    EXIT_USAGE,
    add_parser,
    read_documents,
    run,
)

__all__ = ["EXIT_EXPLAINED", "EXIT_INPUT", "EXIT_USAGE", "add_parser", "read_documents", "run"]
