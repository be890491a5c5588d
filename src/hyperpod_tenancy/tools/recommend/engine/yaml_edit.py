"""The proposal written into platform.yaml, keeping the file's comments and layout.

The file is composed (not loaded) with PyYAML, so every number the proposal changes is found with its exact
place in the text, in block or flow style, quoted keys or not; only those characters are replaced.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy.model import DEFAULT_BORROW_LIMIT, Platform, ResourceAmount
from hyperpod_tenancy.tools.recommend.engine.history import Proposal, RecommendError

__all__ = ["apply_to_yaml", "load_text"]

#: An edit of the text: replace [start, end) with the string (start == end: insert).
_Edit = tuple[int, int, str]


def apply_to_yaml(text: str, proposal: Proposal) -> str:
    """Return ``text`` with the proposal's numbers under ``teams[i].compute``; every other byte is kept.

    Only the numbers of ``quotas`` (a count, or the grain's number in ``{accelerators: n}``) and of
    ``borrowLimit`` change; a ``borrowLimit`` that differs from the default in force and is not written is
    added after ``quotas``. The result is parsed again and checked to hold exactly the proposal.

    Raises:
        RecommendError: the file's layout is not one these edits understand.

    """
    import yaml  # noqa: PLC0415

    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise RecommendError(f"the policy is not YAML the edit can read: {exc}") from exc
    edits: list[_Edit] = []
    for item in _items(_get(root, "teams")):
        name = _get(item, "name")
        if not isinstance(name, yaml.ScalarNode) or name.value not in proposal.quotas:
            continue
        compute = _get(item, "compute")
        if isinstance(compute, yaml.MappingNode):
            edits += _edit_compute(
                text, compute, proposal.quotas[name.value], proposal.borrow_limits[name.value]
            )
    spans = sorted((start, end) for start, end, _ in edits)
    if any(end > start for (_, end), (start, _) in itertools.pairwise(spans)):
        raise RecommendError(
            "the proposal changes one number of the file for two teams (an anchor and its aliases); write each "
            "team's quotas and borrowLimit out in full"
        )
    result = text
    for start, end, new in sorted(edits, reverse=True):
        result = result[:start] + new + result[end:]
    _check(text, result, proposal)
    return result


def _get(node: Any, key: str) -> Any:
    """Return the value node of ``key`` in a mapping node (None: not a mapping, or no such key)."""
    import yaml  # noqa: PLC0415

    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _items(node: Any) -> list[Any]:
    import yaml  # noqa: PLC0415

    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _edit_compute(
    text: str, compute: Any, quotas: Mapping[str, int | ResourceAmount], borrow_limit: int
) -> list[_Edit]:
    """Return the edits of one team's ``compute`` mapping."""
    import yaml  # noqa: PLC0415

    edits: list[_Edit] = []
    quotas_node = _get(compute, "quotas")
    if isinstance(quotas_node, yaml.MappingNode):
        for key, value in quotas_node.value:
            want = quotas.get(str(key.value))
            if want is None:
                continue
            number = value if isinstance(want, int) else _get(value, want.grains[0])
            figure = want if isinstance(want, int) else next(iter(want.given.values()))
            if isinstance(number, yaml.ScalarNode) and number.value != str(figure):
                edits.append((number.start_mark.index, number.end_mark.index, str(figure)))
    limit = _get(compute, "borrowLimit")
    if isinstance(limit, yaml.ScalarNode):
        if limit.value != str(borrow_limit):
            edits.append((limit.start_mark.index, limit.end_mark.index, str(borrow_limit)))
    elif limit is None and borrow_limit != DEFAULT_BORROW_LIMIT:
        edits.append(_insert_borrow_limit(text, compute, borrow_limit))
    return edits


def _insert_borrow_limit(text: str, compute: Any, borrow_limit: int) -> _Edit:
    """Return the insertion of ``borrowLimit`` into ``compute``: after its ``quotas`` (block) or before ``}``."""
    if compute.flow_style:
        at = text.rindex("}", 0, compute.end_mark.index)
        return (at, at, f", borrowLimit: {borrow_limit}")
    key, value = next(((k, v) for k, v in compute.value if k.value == "quotas"), compute.value[-1])
    last = _last_line(value)
    start_of_next = _line_start(text, last + 1)
    line = f"{' ' * key.start_mark.column}borrowLimit: {borrow_limit}\n"
    if start_of_next == len(text) and not text.endswith("\n"):
        line = "\n" + line.rstrip("\n")
    return (start_of_next, start_of_next, line)


def _last_line(node: Any) -> int:
    """Return the (0-based) line of the last character of ``node``'s own text."""
    import yaml  # noqa: PLC0415

    if isinstance(node, yaml.ScalarNode) or node.flow_style:
        end = node.end_mark
        return int(end.line) if end.column > 0 else int(end.line) - 1
    children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
    return max((_last_line(c) for c in children), default=int(node.start_mark.line))


def _line_start(text: str, line: int) -> int:
    """Return the index where 0-based ``line`` starts (the text's end when it has fewer lines)."""
    at = 0
    for _ in range(line):
        found = text.find("\n", at)
        if found < 0:
            return len(text)
        at = found + 1
    return at


def _check(text: str, result: str, proposal: Proposal) -> None:
    """Refuse an edit whose result does not hold exactly the proposal, or changes anything else."""
    import yaml  # noqa: PLC0415

    before: Any = yaml.safe_load(text)
    parsed: Any = yaml.safe_load(result)

    def others(document: Any) -> list[Any]:
        """Everything the proposal does not name: the other teams and every other key."""
        teams = document.get("teams", []) if isinstance(document, dict) else []
        named = [t for t in teams if not (isinstance(t, dict) and str(t.get("name")) in proposal.quotas)]
        rest = {k: v for k, v in document.items() if k != "teams"} if isinstance(document, dict) else document
        return [named, rest]

    if others(before) != others(parsed):
        raise RecommendError(
            "the edit would change what the proposal does not name (an anchor and its aliases); write each "
            "team's quotas and borrowLimit out in full"
        )
    teams = parsed.get("teams", []) if isinstance(parsed, dict) else []
    for team in teams:
        name = str(team.get("name")) if isinstance(team, dict) else ""
        if name not in proposal.quotas:
            continue
        compute = team.get("compute") or {}
        quotas = {str(k): v for k, v in (compute.get("quotas") or {}).items()}
        want = {k: v if isinstance(v, int) else v.given for k, v in proposal.quotas[name].items()}
        want_limit = proposal.borrow_limits[name]
        if quotas != want or compute.get("borrowLimit", DEFAULT_BORROW_LIMIT) != want_limit:
            raise RecommendError(
                f"teams[{name}].compute: cannot edit its quotas/borrowLimit in place; write them as "
                "`quotas: {type: n}` and `borrowLimit: n` under `compute`"
            )


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
