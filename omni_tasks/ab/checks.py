"""GitHub check runs for a PR A/B, through githubkit: created `in_progress` when the A/B
starts, completed with its conclusion. Authentication is a token (OMNI_GITHUB_TOKEN) or a
GitHub App (id + private key + installation: githubkit signs the JWT and exchanges it for an
installation token). OMNI_GITHUB_API_URL points the client elsewhere (tests: a local API)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from githubkit import AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException

from omni_tasks.config import get_settings
from omni_tasks.synthesis.bounded import BoundedTransport
from omni_tasks.trust.redact import redact

CHECK_NAME = "omni-tasks A/B"
Conclusion = Literal["success", "failure", "neutral", "action_required"]
CONCLUSIONS: dict[str, Conclusion] = {
    "SAME": "success",
    "IMPROVED": "success",
    "REGRESSED": "failure",
    "UNKNOWN": "neutral",
    "INFRA": "action_required",
}
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
MAX_GITHUB_BODY = 4 * 1024 * 1024  # a check run's answer is a few kB
MAX_SUMMARY = 65_000  # GitHub refuses output.summary / output.text over 65,535 characters


class CheckRunError(RuntimeError):
    """GitHub refused a check-run call; the message says which and why (never a token)."""


def check_repo(repo: str) -> tuple[str, str]:
    """OWNER/NAME as GitHub spells a repository, split; anything else is refused."""
    if not _REPO.match(repo) or repo.endswith((".git", ".")) or ".." in repo:
        raise ValueError(f"{repo[:120]!r} is not an OWNER/NAME repository")
    owner, name = repo.split("/")
    return owner, name


@dataclass
class CheckRun:
    repo: str
    check_run_id: int


def client() -> GitHub[Any]:
    s = get_settings()
    if s.github_token is not None:
        auth: Any = TokenAuthStrategy(s.github_token.get_secret_value())
    elif s.github_app_id and s.github_app_private_key and s.github_installation_id:
        auth = AppInstallationAuthStrategy(
            s.github_app_id,
            s.github_app_private_key.read_text(encoding="utf-8"),
            s.github_installation_id,
        )
    else:
        raise CheckRunError(
            "no GitHub credentials: set OMNI_GITHUB_TOKEN, or OMNI_GITHUB_APP_ID, "
            "OMNI_GITHUB_APP_PRIVATE_KEY and OMNI_GITHUB_INSTALLATION_ID"
        )
    return GitHub(
        auth,
        base_url=s.github_api_url.rstrip("/") + "/",
        http_cache=False,
        transport=BoundedTransport(MAX_GITHUB_BODY),  # GitHub's answers are read bounded
    )


def start(repo: str, head_sha: str, title: str, details_url: str | None) -> CheckRun:
    owner, name = check_repo(repo)
    data: dict[str, Any] = {
        "name": CHECK_NAME,
        "head_sha": head_sha,
        "status": "in_progress",
        "output": {"title": redact(title), "summary": "Running base and head, interleaved."},
    }
    if details_url:
        data["details_url"] = details_url
    try:
        with client() as gh:
            got = gh.rest.checks.create(owner, name, data=data)
    except GitHubException as exc:
        raise CheckRunError(f"creating the check run on {repo}: {why(exc)}") from None
    return CheckRun(repo, int(got.json()["id"]))  # the id alone: no full-schema parse


def complete(run: CheckRun, verdict: str, title: str, summary: str, text: str) -> None:
    owner, name = check_repo(run.repo)
    data = {
        "status": "completed",
        "conclusion": CONCLUSIONS[verdict],
        "output": {
            # Through the redaction gate: the summary quotes servers' and builds' text.
            "title": redact(title)[:250],
            "summary": redact(summary)[:MAX_SUMMARY],
            "text": redact(text)[:MAX_SUMMARY],
        },
    }
    try:
        with client() as gh:
            gh.rest.checks.update(owner, name, run.check_run_id, data=data)
    except GitHubException as exc:
        raise CheckRunError(f"completing check run {run.check_run_id}: {why(exc)}") from None


def why(exc: GitHubException) -> str:
    """A GitHub failure in a message: its HTTP status, else its kind (never its body)."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return f"HTTP {status}" if status else type(exc).__name__
