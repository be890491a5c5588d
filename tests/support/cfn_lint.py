"""cfn-lint (PyPI ``cfn-lint``) over synthesized templates, its rules loaded once per process.

``cfnlint.api.lint`` builds a new ``Runner`` for every template, and loading the rules (cfn-lint's plugin
directory and the IAM action catalogue one rule reads) costs about a second each time: the suite lints some
thirty templates. :func:`lint_template` keeps one ``Runner`` per region and validates each template exactly as
``lint`` does (the template decoded from its JSON text, then ``run_template_by_data`` with the runner's rules).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from cfnlint.config import ConfigMixIn
from cfnlint.decode.decode import decode_str
from cfnlint.rules import Match
from cfnlint.runner import Runner, run_template_by_data


@cache
def _runner(region: str) -> Runner:
    return Runner(ConfigMixIn(regions=[region]))


def lint_template(template: dict[str, Any], region: str) -> list[Match]:
    """Every cfn-lint match (errors, warnings, informational) of ``template`` in ``region``."""
    decoded, errors = decode_str(json.dumps(template))
    if errors:
        return list(errors)
    assert decoded is not None, "an empty template"
    runner = _runner(region)
    return list(run_template_by_data(decoded, runner.config, runner.rules))
