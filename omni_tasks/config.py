"""Settings read from the environment (``OMNI_*``), with defaults for a laptop, and secrets
read from files.

Secrets are read from files at the point of use, never from or into `os.environ`: the
`*_FILE` convention of Docker/compose secrets and Kubernetes Secret volumes (`NAME_FILE` names
a file holding the value of `NAME`). A worker whose secrets are all files has nothing secret in
its environment block, the block every child inherits and /proc shows. `NAME` itself still
works (a laptop, a test) and is scrubbed by `trust.child_env.seal`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

import platformdirs
import yaml
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = Path(__file__).resolve().parent / "sql"  # a link to the repository's sql/ (shipped)


class SecretFileError(RuntimeError):
    """A `NAME_FILE` that names no readable file: a deployment error, said loudly."""


def read_secret(name: str) -> str | None:
    """The value of secret `name`: the file `NAME_FILE` names (one trailing newline dropped),
    else the variable `NAME`, else None (an empty value is none)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            value = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise SecretFileError(f"{name}_FILE={path}: {exc.strerror or exc}") from None
        return (value[:-1] if value.endswith("\n") else value) or None
    return os.environ.get(name) or None


def configured_benchmark(config: str | None) -> str:
    """The default benchmark of the deployment config at path `config`: a version 2 config's
    `defaults.benchmark`, a version 1 config's `benchmark`; else seed_tts_en. A config that
    cannot be read names none here (`deployment.reading` says what is wrong with it)."""
    try:
        doc = yaml.safe_load(Path(config).read_text(encoding="utf-8")) if config else None
    except (OSError, yaml.YAMLError):
        doc = None
    if isinstance(doc, dict) and doc.get("version") != 1:
        doc = doc.get("defaults")
    named = doc.get("benchmark") if isinstance(doc, dict) else None
    return named if isinstance(named, str) and named else "seed_tts_en"


# Read from OMNI_<NAME>_FILE when set (Docker/Kubernetes secrets), else OMNI_<NAME>.
SECRET_FIELDS = (
    "database_url",
    "slack_token",
    "slack_signing_secret",
    "grafana_token",
    "github_token",
    "github_webhook_secret",
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="OMNI_", extra="ignore")

    database_url: str | None = Field(
        default=None, description="Results DB DSN; unset = embedded Postgres under home"
    )
    home: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("omni-tasks")),
        description="Where the embedded DB, audio and the local Slack outbox live",
    )
    baseline_branch: str = "main"
    benchmark: str = Field(
        default_factory=lambda: configured_benchmark(os.environ.get("OMNI_NIGHTLY_CONFIG")),
        description="The benchmark meant where none is named (commands, the Airflow plugin's "
        "links, a fleet-wide task's INFRA alert); a deployment config's series name their own "
        "(`benchmark`, or `defaults.benchmark`). Default: the deployment config's "
        "(OMNI_NIGHTLY_CONFIG) `defaults.benchmark`, else seed_tts_en, the series every row "
        "stored before series existed belongs to",
    )
    gate_policy: Path | None = Field(default=None, description="Gate policy YAML override")
    gate_references: Path | None = Field(
        default=None, description="Accuracy references YAML (gates/references.py) override"
    )
    cache_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_cache_dir("omni-tasks")),
        description="Regenerable files (the demo corpus's prompt wavs)",
    )
    audio_root: str | None = Field(
        default=None, description="Where clip audio is stored: a path or any fsspec URL"
    )

    slack_token: SecretStr | None = Field(
        default=None, description="Slack bot token; unset = messages go to $OMNI_HOME/outbox"
    )
    slack_channel: str | None = Field(default=None, description="Slack channel ID for alerts")
    slack_signing_secret: SecretStr | None = Field(
        default=None,
        description="The Slack app's signing secret: set when the app has interactivity "
        "(Request URL …/omni-slack/actions); alerts then carry Acknowledge and Ignore buttons",
    )
    slack_base_url: str = Field(
        default="https://slack.com/api/", description="Slack Web API base (tests: a local server)"
    )
    grafana_url: str | None = Field(
        default=None,
        description="Grafana base URL as this host reaches it (push; also links, unless "
        "grafana_public_url is set)",
    )
    grafana_public_url: str | None = Field(
        default=None,
        description="Grafana as people reach it from a browser (links in alerts and Airflow); "
        "default: grafana_url (compose: http://grafana:3000 inside, http://localhost:3000 outside)",
    )
    grafana_token: SecretStr | None = Field(default=None, description="Grafana service token")
    grafana_dashboards: Literal["api", "provisioned"] = Field(
        default="api",
        description="api: push dashboards into the omni-tasks (API) folder; provisioned: "
        "Grafana loads them from files (compose), only annotations are pushed",
    )
    github_api_url: str = Field(
        default="https://api.github.com",
        description="GitHub REST API base for PR A/B check runs (tests: a local server)",
    )
    github_token: SecretStr | None = Field(
        default=None, description="A token with checks:write (else a GitHub App, below)"
    )
    github_app_id: str | None = Field(default=None, description="GitHub App id (JWT auth)")
    github_app_private_key: Path | None = Field(
        default=None, description="The GitHub App's private key (PEM file)"
    )
    github_installation_id: int | None = Field(
        default=None, description="The App's installation on the repository"
    )
    github_webhook_secret: SecretStr | None = Field(
        default=None,
        description="The webhook's secret (X-Hub-Signature-256); in Airflow, the connection "
        "`omni_github` password takes precedence",
    )
    pypi_url: str = Field(
        default="https://pypi.org",
        description="PyPI, where the upstream watch lists vllm-omni releases (tests: local)",
    )
    conformance_checkout: Path | None = Field(
        default=None,
        description="A checkout of this repository (its tests/conformance) the weekly upstream "
        "watch runs against a new vllm-omni release; unset: the watch only lists releases",
    )
    airflow_url: str | None = Field(default=None, description="Airflow UI base URL (links)")
    repo_url: str | None = Field(
        default=None,
        description="The benchmarked repository on the web (https://github.com/ORG/REPO): "
        "alerts link last good → first bad to its compare view",
    )
    public_url: str | None = Field(
        default=None,
        description="Where the Airflow API server (its omni plugin app serving reports and "
        "audio) is reachable by people reading alerts; unset: no report link is sent",
    )
    alert_triage_delay_s: int = Field(
        default=0,
        ge=0,
        le=6 * 3600,
        description="How long a new alert group's opening messages wait, restarted by each "
        "member that joins, so that one rebase's regressions across series post as one group "
        "(Chromeperf waits 20 min; the deploy environment sets 1200). 0: post at once",
    )
    trusted_roots: list[str] = Field(
        default_factory=list,
        description="JSON list of directories (or URL prefixes) that trigger-form paths (repo, "
        "dataset, environment, deploy config) must lie under; OMNI_HOME and the cache dir are "
        "always trusted",
    )

    sandbox: Literal["bwrap", "none"] = Field(
        default="bwrap",
        description="How code under test (builds, servers, an environment's own interpreter) "
        "runs: bwrap (bubblewrap: own PID namespace, read-only filesystem, no secret; "
        "refused when bwrap is missing) or none (developer laptops only, logged at every "
        "launch). `omni-tasks doctor sandbox` shows it",
    )
    sandbox_uid: int | None = Field(
        default=None,
        ge=1,
        description="When the worker runs as root: the uid (and gid) code under test runs as",
    )
    sandbox_devices: list[str] | None = Field(
        default=None,
        description="JSON list of device nodes (globs) passed into the sandbox; default: the "
        "NVIDIA, AMD and Ascend nodes present",
    )
    sandbox_readable: list[str] = Field(
        default_factory=list,
        description="JSON list of more read-only paths in the sandbox (a model cache)",
    )
    sandbox_writable: list[str] = Field(
        default_factory=list,
        description="JSON list of more writable paths in the sandbox (a shared compile cache)",
    )

    @model_validator(mode="before")
    @classmethod
    def _secret_files(cls, data: object) -> object:
        """Each secret from its file when OMNI_<NAME>_FILE names one (`read_secret`)."""
        if not isinstance(data, dict):
            return data
        for name in SECRET_FIELDS:
            if data.get(name) is None and (value := read_secret(f"OMNI_{name.upper()}")):
                data = {**data, name: value}
        return data

    @property
    def grafana_link_base(self) -> str | None:
        """Where links to Grafana point (the public URL, else the one this host uses)."""
        return self.grafana_public_url or self.grafana_url

    @property
    def trusted(self) -> list[str]:
        return [str(self.home), str(self.cache_dir), *self.trusted_roots]

    @property
    def outbox_dir(self) -> Path:
        return self.home / "outbox"

    @property
    def embedded_pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def audio_root_url(self) -> str:
        return (self.audio_root or str(self.home / "audio")).rstrip("/")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
