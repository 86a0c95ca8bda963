"""Commits that come from data (trigger forms, configs, artifacts): hex SHAs, resolved once to
their full 40 characters, and only the full SHA used afterwards (environment directories, run
keys, provenance). A value that is not a SHA never reaches git, where `--output=/path` would
be an option, nor a path, where `../../victim` would be a directory to wipe.
"""

from __future__ import annotations

import re
import subprocess

from omni_tasks.trust.names import InvalidName

_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
_FULL = re.compile(r"^[0-9a-f]{40}$")


def check_commit(value: object, what: str = "commit") -> str:
    """A hex SHA of 7 to 40 characters (lower-cased); anything else is refused naming `what`."""
    if not isinstance(value, str) or not _SHA.match(value):
        shown = repr(value)[:60] if isinstance(value, str) else type(value).__name__
        raise InvalidName(f"{what}: {shown} is not a commit SHA (7 to 40 hex digits)")
    return value.lower()


def is_full_sha(value: str) -> bool:
    return bool(_FULL.match(value))


def require_full(value: str, what: str = "commit") -> str:
    """A full 40-character SHA (where no repository can resolve a short one)."""
    sha = check_commit(value, what)
    if not is_full_sha(sha):
        raise InvalidName(
            f"{what}: {value!r} is a short SHA and no repo is configured to resolve it; "
            "give the full 40 characters"
        )
    return sha


def resolve_commit(repo: str, value: str, what: str = "commit") -> str:
    """The full SHA `value` names in `repo` (`git rev-parse --verify`, the value after
    `--end-of-options`, so git reads it as a revision only)."""
    sha = check_commit(value, what)
    out = subprocess.run(
        [
            "git",
            "-C",
            repo,
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{sha}^{{commit}}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    full = out.stdout.strip()
    if out.returncode != 0 or not is_full_sha(full):
        raise InvalidName(f"{what}: {value!r} is not a commit of {repo}")
    return full


def full_commit(repo: str | None, value: str, what: str = "commit") -> str:
    """A full SHA as it is (every task parses the form again, and not every worker needs the
    repo); a short one resolved in `repo`, which must then be given."""
    sha = check_commit(value, what)
    if is_full_sha(sha):
        return sha
    return resolve_commit(repo, sha, what) if repo else require_full(sha, what)
