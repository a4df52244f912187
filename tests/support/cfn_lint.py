"""cfn-lint on a template's text, its rules loaded once per test process.

``cfnlint.api.lint_file`` builds its runner (every rule module imported and instantiated, the
plugins found again) for each file: about two thirds of a resolved template's lint. The
templates here are linted through the same runner functions with the rules built once, with
and without awslabs serverless-rules (the cfn-lint-serverless plugin, appended to the default
rules as ``--append-rules`` does).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from cfnlint.config import ConfigMixIn  # type: ignore[import-untyped]  # cfn-lint is untyped
from cfnlint.decode.decode import decode_str  # type: ignore[import-untyped]
from cfnlint.runner import Runner, run_template_by_data  # type: ignore[import-untyped]

SERVERLESS_RULES = "cfn_lint_serverless.rules"


@cache
def _runner(serverless: bool) -> Any:
    return Runner(ConfigMixIn(append_rules=[SERVERLESS_RULES] if serverless else []))


def lint(text: str, *, serverless: bool = False) -> list[Any]:
    """cfn-lint's matches for a template's text (YAML or JSON); a template that does not
    decode answers with its decoding errors."""
    template, errors = decode_str(text)
    if errors:
        return list(errors)
    runner = _runner(serverless)
    return list(run_template_by_data(template, runner.config, runner.rules))
