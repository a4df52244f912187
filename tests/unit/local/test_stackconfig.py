"""What a deployed stack's function would read, worked out from samconfig.toml and the template.

The mapping from template parameters to ``LIFEBOAT_*`` variables is read from the template,
so a test template that maps differently gives different variables: nothing is kept by hand.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lifeboat.events.notice import Kind
from lifeboat.model.settings import load_settings
from lifeboat_local.stackconfig import StackConfigError, parameter_overrides, stack_environment

ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_production_environment_of_the_repository() -> None:
    stack = stack_environment(ROOT / "samconfig.toml", "production", None)
    settings = load_settings(stack.variables)
    assert stack.variables["LIFEBOAT_KIND_ACTIONS"] == (
        "rebalance-recommendation=cordon,scheduled-change=replace"
    )
    assert settings.action_for(Kind.REBALANCE_RECOMMENDATION) == "cordon"
    assert settings.clusters == ("prod-a", "prod-b")  # !Join [",", !Ref ClusterNames]
    assert settings.scheduled_change_lead.total_seconds() == 3600
    assert settings.dry_run is False
    # Only CloudFormation knows these; the tools leave them unset.
    assert {"LIFEBOAT_ACCOUNT_ID", "LIFEBOAT_REGION"} <= set(stack.unknown)
    assert "LIFEBOAT_ACCOUNT_ID" not in stack.variables
    assert stack.variables["LIFEBOAT_LEASE_NAMESPACE"] == "lifeboat"  # a literal value


def test_the_default_environment_is_a_dry_run() -> None:
    stack = stack_environment(ROOT / "samconfig.toml", "default", None)
    assert load_settings(stack.variables).dry_run is True


TEMPLATE = """\
    Transform: AWS::Serverless-2016-10-31
    Parameters:
      Mode: {Type: String, Default: replace}
      Names: {Type: CommaDelimitedList}
      Effect: {Type: String, Default: NoSchedule}
      UseTag: {Type: String, Default: "false"}
    Conditions:
      Tagged: !Equals [!Ref UseTag, "true"]
    Globals:
      Function:
        Environment:
          Variables:
            LIFEBOAT_TAINT_EFFECT: NoExecute
    Resources:
      Queue: {Type: AWS::SQS::Queue}
      Handler:
        Type: AWS::Serverless::Function
        Properties:
          Environment:
            Variables:
              LIFEBOAT_KIND_ACTIONS: !Sub "rebalance-recommendation=${Mode}"
              LIFEBOAT_CLUSTERS: !Join ["+", !Ref Names]
              LIFEBOAT_MANAGED_TAG: !If [Tagged, lifeboat/managed, !Ref AWS::NoValue]
              LIFEBOAT_QUEUE_ARN: !GetAtt Queue.Arn
              OTHER: !Ref Effect
"""


def test_the_mapping_is_the_templates_own(tmp_path: Path) -> None:
    template = write(tmp_path, "template.yaml", TEMPLATE)
    config = write(
        tmp_path,
        "samconfig.toml",
        """\
        version = 0.1
        [ci.deploy.parameters]
        parameter_overrides = "Mode=cordon Names='a,b' UseTag=true"
        [plain.global.parameters]
        parameter_overrides = ["Names=x"]
        """,
    )
    stack = stack_environment(config, "ci", template)
    assert dict(stack.variables) == {
        "LIFEBOAT_TAINT_EFFECT": "NoExecute",  # from Globals
        "LIFEBOAT_KIND_ACTIONS": "rebalance-recommendation=cordon",  # !Sub
        "LIFEBOAT_CLUSTERS": "a+b",  # !Join over a CommaDelimitedList
        "LIFEBOAT_MANAGED_TAG": "lifeboat/managed",  # !If on a condition
    }
    assert stack.unknown == ("LIFEBOAT_QUEUE_ARN",)
    plain = stack_environment(config, "plain", template)  # global section, defaults filled
    assert plain.variables["LIFEBOAT_KIND_ACTIONS"] == "rebalance-recommendation=replace"
    assert "LIFEBOAT_MANAGED_TAG" not in plain.variables  # AWS::NoValue: not set at all


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('version = 0.1\n[prod.deploy.parameters]\nstack_name = "x"\n', "no environment 'ci'"),
        ('[ci.deploy.parameters]\nparameter_overrides = ["Nope=1"]\n', "Nope not among"),
        ('[ci.deploy.parameters]\nparameter_overrides = ["Mode"]\n', "is not Key=Value"),
        ('[ci.deploy.parameters]\nparameter_overrides = ["Mode=x"]\n', "Names has no default"),
        ("not toml [", "not valid TOML"),
    ],
)
def test_what_cannot_be_deployed_is_refused(tmp_path: Path, config: str, message: str) -> None:
    template = write(tmp_path, "template.yaml", TEMPLATE)
    path = write(tmp_path, "samconfig.toml", config)
    with pytest.raises(StackConfigError, match=message):
        stack_environment(path, "ci", template)


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(StackConfigError, match=r"samconfig\.toml: No such file"):
        parameter_overrides(tmp_path / "samconfig.toml", "default")
