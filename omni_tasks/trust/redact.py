"""One gate for every outbound text: secrets out, then escaped for where it goes.

Text from an untrusted source (a server's log, a build's output, an artifact's field, a PR's
title) may quote a secret, or carry markup that the sink would render. `outbound(text, sink)`
removes every secret value the worker holds (the environment's secret-named variables, the
settings' tokens, the results DB password, values registered at run time) and the known token
shapes (Slack, GitHub, Buildkite, a DSN's password), then escapes for the sink: Slack mrkdwn,
GitHub markdown, HTML, or plain text for logs and stored rows. `redact_dsn` hides one DSN's
password (as ***) where a database URL is shown or quoted in an error.
"""

from __future__ import annotations

import contextlib
import html
import logging
import os
import re
from collections.abc import Iterable
from typing import Any, Literal
from urllib.parse import quote, unquote

Sink = Literal["plain", "slack", "github", "html"]

# Names of worker settings that hold a secret (tokens, passwords, keys, connections, DSNs).
SECRET_NAME = re.compile(
    r"TOKEN|PASSWORD|PASSWD|SECRET|FERNET|API_KEY|PRIVATE_KEY|DATABASE_URL|_CONN_|SQL_ALCHEMY"
    r"|WEBHOOK|CREDENTIAL",
    re.I,
)
# Token shapes worth removing even when their value is not one we hold (a build's own token).
_SHAPES = (
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{6,}"),  # Slack bot/user/app tokens
    re.compile(r"\bxapp-[A-Za-z0-9-]{6,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{16,}"),  # GitHub classic tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{16,}"),  # GitHub fine-grained tokens
    re.compile(r"\bbkua_[A-Za-z0-9]{16,}"),  # Buildkite API tokens
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)"),
)
# A DSN's password: scheme://user:PASSWORD@host, and password=VALUE (quoted or not).
_DSN_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]+(@)")
_DSN_KV = re.compile(r"(?i)\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'&]+)")
MASK = "[redacted]"
MIN_SECRET = 6  # shorter values would blank ordinary words

_registered: set[str] = set()


def register(*values: str | None) -> None:
    """Secrets held outside the environment (a connection's password read by a hook)."""
    _registered.update(v for v in values if v and len(v) >= MIN_SECRET)


def url_passwords(value: str) -> list[str]:
    """The passwords of the URLs in `value` (scheme://user:PASSWORD@host), which no variable's
    name marks as secret (AIRFLOW__CELERY__BROKER_URL, RESULT_BACKEND)."""
    return [m.group(2) for m in _URL_PASSWORD.finditer(value) if len(m.group(2)) >= MIN_SECRET]


_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/@\s]*:)([^@\s]+)@")


def secret_values(environ: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """Every secret value the worker holds, longest first (so a secret containing another is
    removed whole)."""
    found = set(_registered)
    for name, value in os.environ.items() if environ is None else environ:
        if SECRET_NAME.search(name) and value:
            found.add(value)
            found.update(_dsn_passwords(value))
        found.update(url_passwords(value))
    found.update(_settings_secrets())
    values = {v for v in found if len(v) >= MIN_SECRET}
    values |= {quote(v, safe="") for v in values}
    return sorted(values, key=len, reverse=True)


def _settings_secrets() -> list[str]:
    try:
        from omni_tasks.config import get_settings

        s = get_settings()
    except Exception:  # settings that do not load hold nothing we could remove
        return []
    tokens = (getattr(s, name, None) for name in ("slack_token", "grafana_token", "github_token"))
    out = [token.get_secret_value() for token in tokens if token is not None]
    if s.database_url:
        out += _dsn_passwords(s.database_url)
    return out


def _dsn_passwords(dsn: str) -> list[str]:
    return [p for p in _password_fields(dsn) if p]


def redact_dsn(text: str, dsn: str | None = None) -> str:
    """`text` (a DSN, or a message that may quote one) with the password of `dsn` (default:
    `text` itself) hidden, whatever the DSN's form: URL (also with '@' or ':' in the password,
    or a ?password= parameter), key=value (quoted or not). The password is taken from the
    parsed DSN and every occurrence replaced, percent-encoded forms included."""
    # psycopg here, not at import: seal() (child_env) imports this module under a bare
    # interpreter with no third-party packages (tests/reliability/test_sandbox.py).
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    dsn = text if dsn is None else dsn
    secrets = set(_password_fields(dsn))
    try:
        parsed = conninfo_to_dict(dsn).get("password")
        if parsed:
            secrets.add(str(parsed))
    except ProgrammingError:
        pass
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            for form in {secret, quote(secret, safe=""), quote(secret)}:
                text = text.replace(form, "***")
    return text


def _password_fields(dsn: str) -> list[str]:
    """Password candidates even from a DSN that does not parse (the text after the userinfo
    colon up to the last '@', password= values with or without quotes, whatever the key's case
    or percent-encoding: libpq reads `?%70assword=` and `PASSWORD=` alike)."""
    out = []
    m = re.search(r"://[^:/@]*:(.*)@[^@]*$", dsn.split("?", 1)[0])
    if m:
        out.append(m.group(1))
    if "?" in dsn:
        for part in dsn.split("?", 1)[1].split("&"):
            key, _, value = part.partition("=")
            if unquote(key).strip().lower() == "password" and value:
                out += [value, unquote(value)]
    out += re.findall(r"password\s*=\s*'((?:[^'\\]|\\.)*)'", dsn, re.I)
    out += re.findall(r"password\s*=\s*'?([^\s'&]+)", dsn, re.I)
    return out


def redact(text: object, secrets: list[str] | None = None) -> str:
    """`text` with every secret value (`secrets`, default: all the worker holds) and token
    shape replaced by [redacted]."""
    out = str(text)
    for secret in secret_values() if secrets is None else secrets:
        out = out.replace(secret, MASK)
    for shape in _SHAPES:
        out = shape.sub(MASK, out)
    out = _DSN_URL.sub(lambda m: m.group(1) + MASK + m.group(2), out)
    return _DSN_KV.sub(lambda m: m.group(1) + MASK, out)


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def github_markdown(text: str) -> str:
    """Data inside GitHub markdown: no links, images, HTML, tables or formatting from it."""
    text = html.escape(text, quote=False).replace("\r", " ").replace("\n", " ")
    text = _MARKDOWN.sub(r"\\\1", text)
    # GitHub autolinks bare URLs and www. hosts: break the scheme's colon and "www." the way
    # Slack's escape does.
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)", r"\1∶", text).replace("www.", "www․")


# mrkdwn has no escape for its formatting characters: data that could start bold, strike or
# code is shown with look-alikes (an underscore inside a word cannot start italics: kept).
_FORMATTING = str.maketrans({"*": "∗", "~": "∼", "`": "ˋ"})
_LOOSE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# Bidi controls reorder what a reader sees (RLO turns `gpj.exe` around): dropped.
_BIDI = dict.fromkeys(
    map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
)
# Slack links bare URLs and domain names by itself: the scheme's colon and a host's dots get
# look-alikes, so a transcript or branch name cannot carry a link.
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)|\b(mailto|tel|slack):")
_HOST_DOT = re.compile(r"(?<=[A-Za-z0-9-])\.(?=[A-Za-z][A-Za-z0-9-]*\b)")


def entities(text: object) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape(text: object) -> str:
    """Data (names, transcripts) for mrkdwn: no mentions, links, formatting or reordering can
    come from it."""
    text = entities(text).translate(_FORMATTING).translate(_BIDI)
    text = _HOST_DOT.sub("․", _SCHEME.sub(lambda m: (m.group(1) or m.group(2)) + "∶", text))
    return _LOOSE_UNDERSCORE.sub("＿", text)


# A path as written in an error or a note: absolute, home- or dot-relative, up to a space,
# quote or bracket, its trailing punctuation left to the sentence.
_PATH = re.compile(r"(?<![\w:/.~-])(?:~|\.{1,2})?/[^\s`'\"<>|;()\[\]{}]*[^\s`'\"<>|;()\[\]{}.,:]")


def escape_with_paths(text: object) -> str:
    """`escape`, except that every path in `text` is a code span exactly as written: a pasted
    path must exist, and Slack makes no link inside a code span (no look-alike needed)."""
    out, at = [], 0
    text = str(text)
    for m in _PATH.finditer(text):
        out += [escape(text[at : m.start()]), code(m.group())]
        at = m.end()
    return "".join([*out, escape(text[at:])])


def code(text: object) -> str:
    """Data as an mrkdwn code span that the data cannot close (its backticks are look-alikes)."""
    return "`" + entities(text).translate(_BIDI).replace("`", "ˋ") + "`"


def outbound(text: object, sink: Sink = "plain") -> str:
    """The one gate: redacted, then escaped for `sink`."""
    clean = redact(text)
    if sink == "slack":
        return escape(clean)
    if sink == "github":
        return github_markdown(clean)
    if sink == "html":
        return html.escape(clean, quote=True)
    return clean


def redact_tree(value: Any, secrets: list[str] | None = None) -> Any:
    """Every string in a JSON-like value redacted (a Slack payload, a check run's body); the
    secret values are collected once for the whole value."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: redact_tree(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v, secrets) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """Our log lines pass the gate too (a server's log tail quoted in an error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            with contextlib.suppress(TypeError, ValueError):
                record.msg, record.args = redact(record.getMessage()), None
        else:
            record.msg = redact(record.msg)
        return True


def install_log_filter() -> None:
    """Redact every record handled by the root logger's handlers (idempotent)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
