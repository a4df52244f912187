"""The ``LIFEBOAT_*`` variables a deployed stack gives its function, worked out locally.

The Lambda reads its settings from ``LIFEBOAT_*`` environment variables
(``lifeboat.model.settings.load_settings``). ``template.yaml`` sets them from its parameters
(``LIFEBOAT_KIND_ACTIONS: !Ref KindActions``), and ``sam deploy --config-env NAME`` takes the
parameter values from ``samconfig.toml`` (``parameter_overrides``), the template's defaults
filling the rest. This module follows the same chain, so ``lifeboat replay --config-env
production`` judges with production's settings. Which parameter feeds which variable is read
from the template itself, never from a copy kept here.

Values only CloudFormation knows (``AWS::AccountId``, ``!GetAtt`` of a resource) are left
out: the tools run without the stack.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PREFIX = "LIFEBOAT_"
FUNCTION_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")


class StackConfigError(ValueError):
    """samconfig.toml or template.yaml cannot give the settings; the text says which and why."""


class _Unknown(Exception):
    """A value only CloudFormation knows at deploy time."""


class _NoValue(Exception):
    """``AWS::NoValue``: the variable is not set at all."""


@dataclass(frozen=True)
class StackEnvironment:
    """What the deployed function's environment would hold."""

    variables: Mapping[str, str]  # LIFEBOAT_* -> value
    unknown: tuple[str, ...]  # LIFEBOAT_* variables only CloudFormation can fill
    source: str  # e.g. "samconfig.toml [production] through template.yaml"


# ---------------------------------------------------------------------------------------------
# samconfig.toml


def parameter_overrides(config_file: Path, env: str) -> dict[str, str]:
    """The parameter values ``sam deploy --config-env env`` passes: ``parameter_overrides`` of
    ``[env.deploy.parameters]``, else of ``[env.global.parameters]`` (as the SAM CLI looks)."""
    try:
        document = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except OSError as error:
        raise StackConfigError(f"{config_file}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise StackConfigError(f"{config_file}: not valid TOML: {error}") from None
    section = document.get(env)
    if not isinstance(section, dict):
        known = sorted(k for k, v in document.items() if isinstance(v, dict))
        raise StackConfigError(
            f"{config_file}: no environment {env!r} (environments: {', '.join(known) or 'none'})"
        )
    for command in ("deploy", "global"):
        parameters = (section.get(command) or {}).get("parameters") or {}
        if "parameter_overrides" in parameters:
            return _overrides(parameters["parameter_overrides"], f"{config_file} [{env}]")
    return {}


def _overrides(value: Any, where: str) -> dict[str, str]:
    """``["Key=Value", ...]`` or ``"Key=Value Key2='a b'"`` (shell quoting), as SAM takes it."""
    items = shlex.split(value) if isinstance(value, str) else value
    if not isinstance(items, list):
        raise StackConfigError(f"{where}: parameter_overrides must be a list or a string")
    overrides = {}
    for item in items:
        key, equals, text = str(item).partition("=")
        if not equals or not key.strip():
            raise StackConfigError(f"{where}: parameter_overrides item {item!r} is not Key=Value")
        overrides[key.strip()] = text.strip().strip("'\"")
    return overrides


# ---------------------------------------------------------------------------------------------
# template.yaml


class _TemplateLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short forms: ``!Ref X`` -> ``{"Ref": "X"}``,
    ``!Join [...]`` -> ``{"Fn::Join": [...]}``, ``!Condition C`` -> ``{"Condition": "C"}``."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    key = suffix if suffix in ("Ref", "Condition") else f"Fn::{suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {key: value}


_TemplateLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path) -> dict[str, Any]:
    try:
        # A SafeLoader that also reads CloudFormation's tags: no arbitrary objects.
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_TemplateLoader)
    except OSError as error:
        raise StackConfigError(f"{path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise StackConfigError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise StackConfigError(f"{path}: not a CloudFormation template (no Resources)")
    return document


def function_variables(template: Mapping[str, Any]) -> dict[str, Any]:
    """The ``LIFEBOAT_*`` variables of the template's functions, as written (intrinsics and
    all): ``Globals.Function`` first, then each function's own, as Lambda merges them."""
    found: dict[str, Any] = {}
    sources = [((template.get("Globals") or {}).get("Function") or {})]
    sources += [
        resource.get("Properties") or {}
        for resource in template["Resources"].values()
        if isinstance(resource, dict) and resource.get("Type") in FUNCTION_TYPES
    ]
    for properties in sources:
        variables = (properties.get("Environment") or {}).get("Variables") or {}
        found.update({k: v for k, v in variables.items() if str(k).startswith(PREFIX)})
    return found


class _Resolver:
    """Evaluates the intrinsics the template may use for a variable, given parameter values."""

    def __init__(self, template: Mapping[str, Any], values: Mapping[str, str]) -> None:
        self.template = template
        self.parameters: Mapping[str, Any] = template.get("Parameters") or {}
        self.values = values

    def text(self, value: Any) -> str:
        if isinstance(value, bool):  # YAML's true is CloudFormation's "true"
            return "true" if value else "false"
        if isinstance(value, str | int | float):
            return str(value)
        if isinstance(value, dict) and len(value) == 1:
            [(function, argument)] = value.items()
            return self._call(function, argument)
        raise _Unknown

    def _call(self, function: str, argument: Any) -> str:
        if function == "Ref":
            return self._parameter(str(argument))
        if function == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
            separator, items = argument
            return str(separator).join(self._list(items))
        if function == "Fn::If" and isinstance(argument, list) and len(argument) == 3:
            condition, yes, no = argument
            return self.text(yes if self._condition(str(condition)) else no)
        if function == "Fn::Sub" and isinstance(argument, str):
            return self._sub(argument)
        raise _Unknown

    def _parameter(self, name: str) -> str:
        if name == "AWS::NoValue":
            raise _NoValue
        if name not in self.parameters:  # a pseudo parameter or a resource
            raise _Unknown
        if name in self.values:
            return self.values[name]
        default = self.parameters[name].get("Default") if self.parameters[name] else None
        if default is None:
            raise StackConfigError(f"parameter {name} has no default and no value was given")
        return self.text(default)

    def _list(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return [self.text(item) for item in value]
        if isinstance(value, dict) and set(value) == {"Ref"}:
            # A CommaDelimitedList parameter: its value is the comma-separated text.
            return [part.strip() for part in self._parameter(str(value["Ref"])).split(",")]
        raise _Unknown

    def _sub(self, text: str) -> str:
        out, rest = [], text
        while "${" in rest:
            before, _, after = rest.partition("${")
            name, _, rest = after.partition("}")
            out += [before, self._parameter(name)]
        return "".join([*out, rest])

    def _condition(self, name: str) -> bool:
        conditions = self.template.get("Conditions") or {}
        if name not in conditions:
            raise _Unknown
        return self._truth(conditions[name])

    def _truth(self, value: Any) -> bool:
        if not isinstance(value, dict) or len(value) != 1:
            raise _Unknown
        [(function, argument)] = value.items()
        if function == "Condition":
            return self._condition(str(argument))
        if function == "Fn::Equals":
            left, right = argument
            return self.text(left) == self.text(right)
        if function == "Fn::Not":
            return not self._truth(argument[0])
        if function == "Fn::And":
            return all(self._truth(item) for item in argument)
        if function == "Fn::Or":
            return any(self._truth(item) for item in argument)
        raise _Unknown


def stack_environment(config_file: Path, env: str, template_file: Path | None) -> StackEnvironment:
    """The ``LIFEBOAT_*`` variables the function of ``sam deploy --config-env env`` gets."""
    overrides = parameter_overrides(config_file, env)
    template_path = template_file or config_file.parent / "template.yaml"
    template = load_template(template_path)
    parameters = template.get("Parameters") or {}
    unknown_parameters = sorted(set(overrides) - set(parameters))
    if unknown_parameters:
        # CloudFormation refuses such a deployment; so do we, rather than guess.
        raise StackConfigError(
            f"{config_file} [{env}]: {', '.join(unknown_parameters)} not among the parameters "
            f"of {template_path}"
        )
    resolver = _Resolver(template, overrides)
    variables: dict[str, str] = {}
    unknown: list[str] = []
    for name, value in function_variables(template).items():
        try:
            variables[name] = resolver.text(value)
        except _NoValue:
            continue
        except _Unknown:
            unknown.append(name)
        except StackConfigError as error:
            raise StackConfigError(f"{template_path}: {name}: {error}") from None
    return StackEnvironment(
        variables, tuple(unknown), f"{config_file} [{env}] through {template_path}"
    )
