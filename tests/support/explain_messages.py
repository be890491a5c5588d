"""What Kueue writes on a Workload, with names and numbers normalised away: the shape of its messages.

The recorded cases of ``tests/support/explain_cases/`` are compared with what real Kueue wrote in
``tests/test_cluster_explain.py`` by these shapes: object names, UIDs, flavors, resources, paths and quantities
differ between a recording and a run, the words Kueue puts around them must not.
"""

from __future__ import annotations

import re

__all__ = ["KUBECTL_PREFIX", "clauses", "normalised", "parse_written"]

#: What kubectl prints before the API server's message of a refused create.
KUBECTL_PREFIX = re.compile(r'^Error from server \([A-Za-z]+\): error when creating "[^"]+": ')

_SUBSTITUTIONS = (
    (re.compile(r'"[^"]*"'), '"<name>"'),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    (re.compile(r"\b(?:[a-z0-9.-]+\.[a-z]+/[a-z0-9.-]+|cpu|memory|pods)\b"), "<resource>"),
    (re.compile(r"(?:/[a-z0-9][a-z0-9.-]*)+"), "<path>"),
    (re.compile(r"\bml\.[a-z0-9]+\.[a-z0-9]+\b"), "<flavor>"),
    (re.compile(r"\bhyperpod-ns-[a-z0-9-]+\b"), "<name>"),
    (re.compile(r"\bjob-[a-z0-9-]+\b"), "<name>"),
    (re.compile(r"\b[0-9]+(?:\.[0-9]+)?(?:Ki|Mi|Gi|Ti|m|k)?\b"), "<n>"),
)


def normalised(message: str) -> str:
    """``message`` with UIDs, paths, flavors, resource names, object names and quantities replaced."""
    for pattern, placeholder in _SUBSTITUTIONS:
        message = pattern.sub(placeholder, message)
    return message


def clauses(message: str) -> set[str]:
    """The distinct normalised clauses of a message (Kueue joins a pod set's reasons with ``, ``)."""
    head, sep, tail = normalised(message).partition(": ")
    if not sep or not head.startswith("couldn't assign flavors"):
        return {normalised(message)}
    parts = re.split(r", (?=insufficient|flavor|untolerated|resource)", tail)
    return {f"{head}: {p}" for p in parts}


def parse_written(line: str) -> tuple[str, str]:
    """``("<type>/<status>/<reason>", "<normalised message>")`` of a line of ``live_messages.json``."""
    head, _, message = line.partition(": ")
    return head, message
