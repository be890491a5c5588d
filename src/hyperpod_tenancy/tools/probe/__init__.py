"""``hyperpod-tenancy probe``: the platform"s promises tried on a cluster, each with the request that proves it."""

from hyperpod_tenancy.tools.probe.command import (
    EXIT_CANNOT_RUN,
    EXIT_USAGE,
    add_parser,
    render_json,
    render_text,
    run,
)

__all__ = ["EXIT_CANNOT_RUN", "EXIT_USAGE", "add_parser", "render_json", "render_text", "run"]
