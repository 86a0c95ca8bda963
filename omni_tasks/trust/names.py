"""Names that come from data (run keys, branches, benchmarks, variants, utt ids) as path
components and git arguments: one rule for each, so nothing a name says can leave its root.

A name that is already a safe component (``[A-Za-z0-9._+@=-]``, at most 80 characters, not
starting with a dot or a dash) is used as it is. Anything else is encoded: the safe characters
kept, the rest replaced by ``_``, trimmed, and a hash of the whole name appended, so two
different names never share a component and the component stays readable.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import unicodedata

_SAFE = re.compile(r"^[A-Za-z0-9_+@=][A-Za-z0-9._+@=-]{0,79}$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._+@=-]+")
MAX_NAME = 200  # branch, benchmark and variant names; utt ids and run keys may be longer
MAX_KEY = 400


class InvalidName(ValueError):
    """A name that cannot be used (empty, too long, control characters, not a git ref)."""


def path_component(name: str) -> str:
    """`name` as one path component that cannot traverse, hide or escape its directory."""
    if _SAFE.match(name) and name not in (".", ".."):
        return name
    slug = _UNSAFE_CHARS.sub("_", name).strip("._-")[:60] or "x"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}~{digest}"


def check_text(
    value: str, what: str, *, max_len: int | None = None, multiline: bool = False
) -> str:
    """Refuse NUL, control characters (tab and, if `multiline`, newlines aside), lone surrogates
    and over-long values; the message names `what`."""
    if max_len is not None and len(value) > max_len:
        raise InvalidName(f"{what}: {len(value)} characters, at most {max_len} allowed")
    for i, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            raise InvalidName(f"{what}: lone surrogate U+{ord(ch):04X} at character {i}")
        if ch in "\t" or (multiline and ch in "\n\r"):
            continue
        if unicodedata.category(ch) == "Cc":
            raise InvalidName(f"{what}: control character U+{ord(ch):04X} at character {i}")
    return value


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """A server's text (an error body, thinker text) as it may be stored and shown: NUL and
    other control characters (tab and newline aside) and lone surrogates become U+FFFD."""
    return _UNPRINTABLE.sub("\ufffd", text)


def check_name(value: str, what: str, max_len: int = MAX_NAME) -> str:
    """A branch, benchmark or variant name: non-empty, one line, bounded."""
    if not value:
        raise InvalidName(f"{what}: must not be empty")
    return check_text(value, what, max_len=max_len)


def check_run_key(value: str) -> str:
    """A run key: as a name, but longer (it joins several names)."""
    return check_name(value, "run key", MAX_KEY)


def check_branch(value: str) -> str:
    """A branch name as git accepts it (`git check-ref-format --branch`), never an option."""
    check_name(value, "branch")
    if value.startswith("-"):
        raise InvalidName(f"branch {value[:60]!r}: must not start with '-'")
    out = subprocess.run(
        ["git", "check-ref-format", "--branch", value],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if out.returncode != 0:
        raise InvalidName(f"branch {value[:60]!r}: not a valid git branch name")
    return value


_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def check_model(value: str) -> str:
    """A served model: a hub id (`org/name`) or a local path under a trusted root; never a
    `vllm serve` option (`--trust-remote-code`)."""
    if value.startswith("/"):
        return require_trusted(value, "server.model")
    if not _MODEL_ID.match(value) or ".." in value:
        raise InvalidName(f"server.model {value[:80]!r}: not a model id (org/name) or a path")
    return value


def check_env_name(value: str, what: str) -> str:
    if not _ENV_NAME.match(value):
        raise InvalidName(f"{what}: {value[:60]!r} is not an environment variable name")
    return value


def _is_url(value: str) -> bool:
    return "://" in value or value.startswith("git@")


def under(path: str, root: str, *, resolve: bool = True) -> bool:
    """`path` lies inside `root` (symlinks resolved unless `resolve` is False, '..' always);
    URLs compare as prefixes at a '/'."""
    if _is_url(path) or _is_url(root):
        if not (_is_url(path) and _is_url(root)) or "/../" in f"{path}/":
            return False
        base = root.rstrip("/")
        return path == base or path.startswith(base + "/")
    norm = os.path.realpath if resolve else os.path.abspath
    real, base = norm(path), norm(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def require_trusted(value: str, what: str) -> str:
    """A path or URL from a trigger form, accepted only under a trusted root. Compared as
    written ('..' resolved): the roots are the operator's, and so are any links inside them
    (a venv's python links to the system interpreter)."""
    from omni_tasks.config import get_settings

    check_text(value, what, max_len=4096)
    roots = get_settings().trusted
    if not any(under(value, r, resolve=False) for r in roots):
        raise InvalidName(
            f"{what} {value[:120]!r} is not under a trusted root; allowed: {', '.join(roots)} "
            "(add directories or URL prefixes to OMNI_TRUSTED_ROOTS)"
        )
    return value
