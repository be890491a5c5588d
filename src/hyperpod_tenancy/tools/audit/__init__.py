"""``hyperpod-tenancy audit``: what is deployed against what the policy says (AWS and Kubernetes)."""

from hyperpod_tenancy.tools.audit.command import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, add_parser, run

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "add_parser", "run"]
