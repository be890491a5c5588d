"""The proposal written into platform.yaml, keeping the file's comments and layout."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.tools.recommend.engine.history import Proposal, RecommendError

__all__ = ["apply_to_yaml", "load_text"]

_TEAM = re.compile(r"^(?P<indent>\s*)-\s+name:\s*(?P<q>['\"]?)(?P<name>[^'\"#\s]+)(?P=q)\s*(#.*)?$")


_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][A-Za-z0-9]*):(?P<rest>.*)$")


def apply_to_yaml(text: str, proposal: Proposal) -> str:
    """Return ``text`` with the proposal's numbers under ``teams[i].compute``; every other byte is kept.

    Only the values of ``quotas`` (flow ``{type: n}`` or block mappings) and ``borrowLimit`` change; a
    ``borrowLimit`` that differs from the (default) value in force and is not written is added after
    ``quotas``. The result is parsed again and checked to hold exactly the proposal.

    Raises:
        RecommendError: the file's layout is not one these edits understand.

    """
    import yaml  # noqa: PLC0415

    lines = text.splitlines(keepends=True)
    data: Any = yaml.safe_load(text)
    teams = [t for t in data.get("teams", []) if isinstance(t, dict)]
    blocks = _team_blocks(lines)
    for team in teams:
        name = str(team.get("name"))
        if name not in proposal.quotas or name not in blocks:
            continue
        first, last = blocks[name]
        lines[first:last] = _edit_team(lines[first:last], name, team, proposal)
        blocks = _team_blocks(lines)
    result = "".join(lines)
    parsed: Any = yaml.safe_load(result)
    for team in parsed.get("teams", []):
        name = str(team.get("name"))
        if name not in proposal.quotas:
            continue
        compute = team.get("compute", {})
        quotas = {str(k): v for k, v in (compute.get("quotas") or {}).items()}
        want_limit = proposal.borrow_limits[name]
        if quotas != dict(proposal.quotas[name]) or compute.get("borrowLimit", want_limit) != want_limit:
            raise RecommendError(
                f"teams[{name}].compute: cannot edit its quotas/borrowLimit in place; write them as "
                "`quotas: {type: n}` and `borrowLimit: n` on lines of their own"
            )
    return result


def _team_blocks(lines: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Team name → the lines [first, last) of its item under the top-level ``teams:``."""
    blocks: dict[str, tuple[int, int]] = {}
    inside = False
    current: tuple[str, int, int] | None = None  # name, first line, item indent
    for i, line in enumerate(lines):
        stripped = line.rstrip("\n")
        if not inside:
            inside = stripped.startswith("teams:")
            continue
        if stripped and not stripped[0].isspace() and not stripped.startswith(("-", "#")):
            break  # the next top-level key
        match = _TEAM.match(stripped)
        if match and (current is None or len(match.group("indent")) == current[2]):
            if current is not None:
                blocks[current[0]] = (current[1], i)
            current = (match.group("name"), i, len(match.group("indent")))
    else:
        i = len(lines)
    if current is not None:
        blocks[current[0]] = (current[1], i if inside else len(lines))
    return blocks


def _edit_team(block: list[str], name: str, team: Mapping[str, Any], proposal: Proposal) -> list[str]:
    out = list(block)
    compute_at = next((i for i, line in enumerate(out) if re.match(r"^\s*compute:\s*(#.*)?$", line)), None)
    if compute_at is None:
        return out
    compute_indent = len(out[compute_at]) - len(out[compute_at].lstrip())
    end = next(
        (
            i
            for i in range(compute_at + 1, len(out))
            if out[i].strip()
            and not out[i].lstrip().startswith("#")
            and len(out[i]) - len(out[i].lstrip()) <= compute_indent
        ),
        len(out),
    )
    quotas = proposal.quotas[name]
    quotas_at: int | None = None
    limit_at: int | None = None
    for i in range(compute_at + 1, end):
        match = _KEY.match(out[i].rstrip("\n"))
        if match is None:
            continue
        if match.group("key") == "quotas":
            quotas_at = i
            out[i] = _flow_quotas(out[i], quotas)
            j = i + 1
            indent = len(match.group("indent"))
            while j < end and (not out[j].strip() or len(out[j]) - len(out[j].lstrip()) > indent):
                inner = _KEY_OR_TYPE.match(out[j].rstrip("\n"))
                if inner is not None and inner.group("key").strip("'\"") in quotas:
                    number = quotas[inner.group("key").strip("'\"")]
                    out[j] = f"{inner.group('head')}{number}{inner.group('tail')}\n"
                j += 1
        elif match.group("key") == "borrowLimit":
            limit_at = i
            value = re.sub(r"^\s*\d+", f" {proposal.borrow_limits[name]}", match.group("rest"), count=1)
            out[i] = f"{match.group('indent')}borrowLimit:{value}\n"
    compute = team.get("compute") or {}
    current_limit = compute.get("borrowLimit")
    if limit_at is None and quotas_at is not None and current_limit is None:
        from hyperpod_tenancy.policy.model import DEFAULT_BORROW_LIMIT  # noqa: PLC0415

        if proposal.borrow_limits[name] != DEFAULT_BORROW_LIMIT:
            indent = len(out[quotas_at]) - len(out[quotas_at].lstrip())
            j = quotas_at + 1
            while j < end and (not out[j].strip() or len(out[j]) - len(out[j].lstrip()) > indent):
                j += 1
            out.insert(j, f"{' ' * indent}borrowLimit: {proposal.borrow_limits[name]}\n")
    return out


_KEY_OR_TYPE = re.compile(r"^(?P<head>\s*(?P<key>['\"]?[A-Za-z0-9.\-]+['\"]?):\s*)\d+(?P<tail>.*)$")


def _flow_quotas(line: str, quotas: Mapping[str, int]) -> str:
    """Replace the numbers of a flow mapping ``quotas: {type: n, ...}`` on one line (others unchanged)."""
    head, brace, rest = line.partition("{")
    if not brace:
        return line
    body, close, tail = rest.partition("}")

    def number(match: re.Match[str]) -> str:
        key = match.group("key").strip("'\"")
        return f"{match.group('k')}{quotas[key]}" if key in quotas else match.group(0)

    body = re.sub(r"(?P<k>\s*(?P<key>['\"]?[A-Za-z0-9.\-]+['\"]?)\s*:\s*)\d+", number, body)
    return f"{head}{brace}{body}{close}{tail}"


def load_text(text: str, *, source: str) -> Platform:
    """Validate a policy's YAML text (the proposal) as ``validate`` does.

    Raises:
        RecommendError: it does not validate (every problem, on one line each).

    """
    import yaml  # noqa: PLC0415

    from hyperpod_tenancy.policy.loader import platform_from_dict  # noqa: PLC0415

    try:
        return platform_from_dict(yaml.safe_load(text), source=source)
    except PolicyError as exc:
        raise RecommendError(f"the proposed policy does not validate: {exc}") from exc
