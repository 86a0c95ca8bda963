"""Deliver the alert outbox: to Slack (slack-sdk WebClient) or, with no token, to files.

Each message carries its idempotency key in Slack message metadata. A message is marked
`sending` (committed) before the API call and `sent` with its `ts` after; a message found in
`sending` on a later run had an unknown outcome, so the dispatcher first looks for its key in
the channel (`conversations.history`, or `conversations.replies` for thread replies) and only
re-sends when it is not there. Updates are idempotent by nature; file uploads are at least
once. 429s (Retry-After) and 5xx are retried by slack-sdk's retry handlers; a message that still
fails stays pending for the next run until it has failed `max_attempts` times.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import psycopg
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.models.metadata import Metadata

from omni_tasks.alerts.blocks import Message, in_group, render_text
from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.audio import AudioUnavailable, load_audio_bytes
from omni_tasks.series import Series
from omni_tasks.store import alerts as store
from omni_tasks.store.alerts import OutboxMessage
from omni_tasks.trust.redact import redact, register

log = logging.getLogger(__name__)
METADATA_TYPE = "omni_tasks_alert"


class SlackConfigError(RuntimeError):
    """Slack refused the configuration itself (token, scope, channel): no message can go out
    until someone fixes it, so the dispatch stops and every message stays in the outbox."""


# Slack API errors that no retry fixes, with what to fix.
CONFIG_ERRORS = {
    "invalid_auth": "the token is not valid",
    "not_authed": "no token was sent",
    "token_revoked": "the token was revoked",
    "account_inactive": "the token's account is inactive",
    "missing_scope": "the token lacks a scope it needs",
    "channel_not_found": "the channel ID does not exist (use the channel's ID, not its name)",
    "not_in_channel": "the bot is not a member of the channel (invite it)",
}


class DeliveryError(RuntimeError):
    pass


class Sink(Protocol):
    """Where messages go. `find` answers whether a message with this key was already posted."""

    name: str

    def post(self, message: Message, key: str) -> str: ...
    def reply(self, parent_ts: str, message: Message, key: str) -> str: ...
    def update(self, ts: str, message: Message) -> None: ...
    def upload(self, parent_ts: str, file_uri: str, title: str) -> None: ...
    def find(self, key: str, parent_ts: str | None) -> str | None: ...


class SlackSink:
    name = "slack"

    def __init__(
        self,
        token: str,
        channel: str,
        base_url: str,
        retries: int = 3,
        timeout_s: int = 30,
        client: WebClient | None = None,
    ) -> None:
        self._token = token
        self.channel = channel
        self.client = client or WebClient(
            token=token,
            base_url=base_url,
            timeout=timeout_s,
            retry_handlers=retry_handlers(retries),
        )

    def post(self, message: Message, key: str) -> str:
        return self._chat(message, key)

    def reply(self, parent_ts: str, message: Message, key: str) -> str:
        return self._chat(message, key, thread_ts=parent_ts)

    def _chat(self, message: Message, key: str, thread_ts: str | None = None) -> str:
        """chat.postMessage with the key in its metadata (slack_sdk drops a None thread_ts)."""
        r = self.client.chat_postMessage(
            channel=self.channel,
            text=message.text,
            blocks=message.blocks,
            thread_ts=thread_ts,
            metadata=Metadata(event_type=METADATA_TYPE, event_payload={"idempotency_key": key}),
            unfurl_links=False,
        )
        return str(r["ts"])

    def update(self, ts: str, message: Message) -> None:
        self.client.chat_update(
            channel=self.channel, ts=ts, text=message.text, blocks=message.blocks
        )

    def upload(self, parent_ts: str, file_uri: str, title: str) -> None:
        content = load_audio_bytes(file_uri)  # the audio-root rule and the size cap
        self.client.files_upload_v2(
            channel=self.channel,
            file=content,
            filename=Path(file_uri).name,
            title=title,
            thread_ts=parent_ts,
        )

    def find(self, key: str, parent_ts: str | None) -> str | None:
        if parent_ts is None:
            r = self.client.conversations_history(
                channel=self.channel, include_all_metadata=True, limit=200
            )
        else:
            r = self.client.conversations_replies(
                channel=self.channel, ts=parent_ts, include_all_metadata=True, limit=200
            )
        for m in r.get("messages") or []:
            meta = m.get("metadata") or {}
            if (meta.get("event_payload") or {}).get("idempotency_key") == key:
                return str(m["ts"])
        return None


class LocalSink:
    """No Slack configured: one Block Kit JSON file per message under $OMNI_HOME/outbox
    (never twice for one idempotency key), and a readable rendering on stdout."""

    name = "local"

    def __init__(self, root: Path, echo: bool = True) -> None:
        self.root = root
        self.echo = echo
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"

    def _write(self, doc: JsonObject, key: str, shown: str) -> str:
        path = self._path(key)
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
            tmp.replace(path)
            if self.echo:
                thread = doc.get("thread_ts")
                where = f" (in thread {thread})" if thread else ""
                print(f"── Slack message [{doc['op']}]{where} → {path}")
                print(shown)
        return f"local:{path.name}"

    def _message(self, op: str, message: Message, key: str, **at: str) -> str:
        payload = message.to_payload()
        doc: JsonObject = {"op": op, **at, "idempotency_key": key, "payload": payload}
        return self._write(doc, key, render_text(payload))

    def post(self, message: Message, key: str) -> str:
        return self._message("post", message, key)

    def reply(self, parent_ts: str, message: Message, key: str) -> str:
        return self._message("reply", message, key, thread_ts=parent_ts)

    def update(self, ts: str, message: Message) -> None:
        digest = hashlib.sha256(json.dumps(message.to_payload()).encode()).hexdigest()[:12]
        self._message("update", message, f"update|{ts}|{digest}", ts=ts)

    def upload(self, parent_ts: str, file_uri: str, title: str) -> None:
        key = f"upload|{parent_ts}|{file_uri}"
        doc: JsonObject = {"op": "upload", "thread_ts": parent_ts, "file": file_uri, "title": title}
        self._write(doc, key, file_uri)

    def find(self, key: str, parent_ts: str | None) -> str | None:
        path = self._path(key)
        return f"local:{path.name}" if path.exists() else None


def retry_handlers(retries: int = 3) -> list[Any]:
    return [
        ConnectionErrorRetryHandler(max_retry_count=retries),
        RateLimitErrorRetryHandler(max_retry_count=retries),
        ServerErrorRetryHandler(max_retry_count=retries),
    ]


def config_error(exc: BaseException) -> str | None:
    """What to fix, when Slack refused the configuration rather than one message."""
    if not isinstance(exc, SlackApiError):
        return None
    code = str(exc.response.get("error", ""))
    if code not in CONFIG_ERRORS:
        return None
    needed = exc.response.get("needed")
    return f"{code}: {CONFIG_ERRORS[code]}" + (f" (needed: {needed})" if needed else "")


def default_sink() -> Sink:
    """Slack when a token and channel are configured, else the local outbox."""
    s = get_settings()
    token = s.slack_token.get_secret_value() if s.slack_token else None
    if token and s.slack_channel:
        return SlackSink(token, s.slack_channel, s.slack_base_url)
    return LocalSink(s.outbox_dir)


@dataclass(frozen=True)
class DispatchReport:
    sent: int
    recovered: int  # found already delivered after an unknown outcome
    waiting: int  # held by a group's triage delay, or whose parent is not delivered yet
    failed: int
    busy: bool = False  # another dispatcher held the outbox: this one delivered nothing

    @property
    def summary(self) -> str:
        if self.busy:
            return "another dispatcher is delivering the outbox"
        return (
            f"{self.sent} sent, {self.recovered} already delivered, {self.waiting} waiting, "
            f"{self.failed} failed"
        )


def dispatch(conn: psycopg.Connection[Any], sink: Sink, *, max_attempts: int = 5) -> DispatchReport:
    """Deliver pending outbox messages in order (one dispatcher at a time)."""
    register(getattr(sink, "_token", None))  # a token given directly, not from the env
    channel = str(getattr(sink, "channel", sink.name))
    if not store.try_dispatch_lock(conn):
        conn.commit()
        return DispatchReport(0, 0, 0, 0, busy=True)
    sent = recovered = waiting = failed = 0
    try:
        pending = store.pending_messages(conn)
        conn.commit()
        for m in pending:
            op, key = m.kind, m.idempotency_key
            route = _route(conn, m)
            if route.group is not None:  # held or not: the outbox shows what will go out
                m = _named_group(conn, m, route.group)
            if m.held or not route.ready:
                waiting += 1  # a group's triage delay, or a parent not delivered yet
                continue
            if m.state == "sending" and op in ("post", "reply"):
                try:
                    ts = sink.find(key, route.thread if op == "reply" else route.into_group)
                except Exception as exc:
                    ts = None
                    log.warning("could not look up %s: %s", key, redact(str(exc)))
                if ts is not None:
                    store.mark_sent(conn, m, ts, channel, route.into_group)
                    conn.commit()
                    recovered += 1
                    continue
            store.mark_sending(conn, m.message_id)
            conn.commit()  # from here the outcome is unknown until marked
            try:
                ts = _send(sink, m, route)
            except Exception as exc:
                if (fix := config_error(exc)) is not None:
                    store.mark_unsent(  # nothing was posted; the attempt does not count
                        conn, m.message_id, f"Slack refused the configuration: {fix}"
                    )
                    conn.commit()
                    left = store.undelivered_count(conn)
                    conn.commit()
                    raise SlackConfigError(
                        f"Slack refused the configuration ({fix}) for channel {channel}: fix "
                        f"the Slack connection or token; {left} message(s) stay in the outbox"
                    ) from None
                if isinstance(exc, AudioUnavailable):
                    exc = DeliveryError(f"audio unavailable: {exc}")
                error = redact(f"{type(exc).__name__}: {exc}")[:500]
                state = "failed" if m.attempts + 1 >= max_attempts else "pending"
                if op in ("post", "reply") and _unknown_outcome(exc) and state != "failed":
                    state = "sending"  # it may have been posted: look it up before re-sending
                store.mark_failed_attempt(conn, m.message_id, state, error)
                conn.commit()
                log.warning("delivery of %s failed (%s): %s", key, state, error)
                failed += 1
                continue
            store.mark_sent(conn, m, ts, channel, route.into_group)
            conn.commit()
            log.info("%s %s: delivered to %s (%s)", op, key, sink.name, ts or channel)
            sent += 1
    finally:
        store.release_dispatch_lock(conn)
        conn.commit()
    return DispatchReport(sent, recovered, waiting, failed)


def dispatch_all(conn: psycopg.Connection[Any], sink: Sink) -> DispatchReport:
    """Dispatch, then wait out every alert group's triage delay and dispatch what it held:
    the night's last delivery, after every series has decided."""
    total = dispatch(conn, sink)
    while (until := store.held_until(conn)) is not None:
        conn.commit()
        wait = max((until - dt.datetime.now(dt.UTC)).total_seconds(), 0.0) + 1.0
        log.info("alert groups: %.0f s of triage delay left before their posts go out", wait)
        time.sleep(wait)
        r = dispatch(conn, sink)
        total = DispatchReport(
            total.sent + r.sent, total.recovered + r.recovered, r.waiting, total.failed + r.failed
        )
    conn.commit()
    return total


def deliver_series(
    conn: psycopg.Connection[Any], sink: Sink, series: Series | None
) -> tuple[DispatchReport, bool]:
    """Dispatch, and whether `series` (None: every series) is done: none of its alerts'
    opening posts is still held by a triage delay and this dispatch ran. A series' delivery
    repeats this until done, so its held posts go out when its own hold (its group's, once in
    one) ends, whatever other series still run."""
    held = store.held_until(conn, series)  # read first: what is due now goes out below
    conn.commit()
    report = dispatch(conn, sink)
    if held is not None:
        left = (held - dt.datetime.now(dt.UTC)).total_seconds()
        log.info("%s: %.0f s of triage delay left", series.label if series else "alerts", left)
    return report, held is None and not report.busy


def _unknown_outcome(exc: BaseException) -> bool:
    """A timeout or a broken connection after the request went out: Slack may have posted it.
    An API error response, or any error raised before sending (a bad payload, unreadable
    audio), is a known outcome: nothing was posted."""
    return isinstance(exc, OSError)


@dataclass(frozen=True)
class Route:
    """Where one message goes: `parent` is its alert's own message (updated in place), `thread`
    the thread its replies and uploads join, `into_group` the group thread a member's opening
    post is a reply in; not `ready` until what it needs is delivered."""

    ready: bool
    parent: str | None = None
    thread: str | None = None
    into_group: str | None = None
    group: int | None = None  # the group whose thread `into_group` is


def _route(conn: psycopg.Connection[Any], m: OutboxMessage) -> Route:
    if m.alert_id is None:
        return Route(ready=True)
    r = store.alert_route(conn, m.alert_id)
    conn.commit()
    if r is None:
        return Route(ready=m.kind == "post")
    if m.kind == "post":
        if r.group_id is not None:  # a group member opens in the group's thread
            return Route(ready=r.group_ts is not None, into_group=r.group_ts, group=r.group_id)
        return Route(ready=True)
    parent = r.parent_ts
    return Route(ready=parent is not None, parent=parent, thread=r.thread_ts or parent)


def _named_group(conn: psycopg.Connection[Any], m: OutboxMessage, group: int) -> OutboxMessage:
    """A member's opening post going into its group's thread names the group: one queued
    before the group formed was written without it. The outbox keeps what is sent."""
    assert m.alert_id is not None
    payload = in_group(m.payload, m.alert_id, group)
    if payload == m.payload:
        return m
    store.replace_pending_post(conn, m.alert_id, payload)
    conn.commit()
    return replace(m, payload=payload)


def _send(sink: Sink, m: OutboxMessage, route: Route) -> str | None:
    op, key = m.kind, m.idempotency_key
    if op == "upload":
        if route.thread is None:
            raise DeliveryError(f"{key}: upload needs the alert's parent message")
        file, title = m.payload.get("file"), m.payload.get("title")
        if not isinstance(file, str):
            raise DeliveryError(f"{key}: an upload that names no file")
        sink.upload(route.thread, file, title if isinstance(title, str) else "")
        return None
    payload = Message.from_payload(m.payload)
    if op == "post":
        if route.into_group is not None:
            return sink.reply(route.into_group, payload, key)
        return sink.post(payload, key)
    if route.parent is None or route.thread is None:
        raise DeliveryError(f"{key}: {op} needs the alert's parent message")
    if op == "reply":
        return sink.reply(route.thread, payload, key)
    if op == "update":
        sink.update(route.parent, payload)
        return route.parent
    raise DeliveryError(f"{key}: unknown outbox operation {op!r}")
