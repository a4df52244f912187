# SAM targets; the main Makefile includes this file (`include sam.mk`). Also usable alone:
#   make -f sam.mk sam-validate sam-build layer-size
#
# The SAM CLI lives in its own venv (.sam-venv): it pins boto3/pydantic versions that would
# fight the project's test venv. Nothing here needs Docker, AWS credentials or a network
# beyond the package index (sam build cross-installs arm64 wheels with pip; see
# layers/lifeboat/Makefile).

SAM_VENV ?= .sam-venv
SAM ?= $(SAM_VENV)/bin/sam
SAM_PYTHON ?= python3
SAM_REGION ?= us-east-1
# The SAM CLI version, pinned: 1.160 is the one that expands the template's Fn::ForEach
# (AWS::LanguageExtensions) in every command by itself, `sam deploy --guided` without
# samconfig.toml included; 1.161 and later do it only with --language-extensions (which
# samconfig.toml sets) and otherwise fail with "'list' object has no attribute 'get'".
# tests/unit/local/test_sam_guided_deploy.py drives a guided deploy with it; change both together.
SAM_CLI_VERSION ?= 1.160.1
# Installed once per version: changing the pin reinstalls the venv's SAM CLI.
SAM_STAMP = $(SAM_VENV)/.aws-sam-cli-$(SAM_CLI_VERSION)

# sam validate resolves a region and a credential chain even with --lint; dummy values keep
# it offline. Real credentials in the environment win (nothing is sent to AWS either way).
SAM_ENV = AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-$(SAM_REGION)} \
	AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-testing} \
	AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-testing} \
	SAM_CLI_TELEMETRY=0 \
	PYTHON=$(abspath $(SAM_VENV))/bin/python

.PHONY: sam-venv sam-validate sam-build layer-size

$(SAM_STAMP):
	test -x $(SAM_VENV)/bin/python || $(SAM_PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli==$(SAM_CLI_VERSION)
	rm -f $(SAM_VENV)/.aws-sam-cli-*
	touch $@

sam-venv: $(SAM_STAMP)

sam-validate: $(SAM_STAMP)
	$(SAM_ENV) $(SAM) validate --lint --template-file template.yaml

# Build parameters (cache, --language-extensions, a ClusterNames value for the local Fn::ForEach
# expansion) come from samconfig.toml; SAM_CONFIG_ENV=production picks that environment.
SAM_CONFIG_ENV ?= default

sam-build: $(SAM_STAMP)
	$(SAM_ENV) $(SAM) build --template-file template.yaml --config-env $(SAM_CONFIG_ENV)

layer-size:
	@test -d .aws-sam/build/LifeboatLayer || { echo "run make sam-build first" >&2; exit 1; }
	@du -sk .aws-sam/build/LifeboatLayer | awk '{printf "LifeboatLayer unpacked: %.1f MB\n", $$1 / 1024}'
