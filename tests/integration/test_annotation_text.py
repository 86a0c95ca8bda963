"""Grafana annotations (issue 64): an event's text is data. Grafana renders annotation text
(HTML, markdown in newer panels), so it arrives with no tag, link, image or emphasis of its
own, and reads back as the text it was."""

from __future__ import annotations

import datetime as dt
import html

from markdown_it import MarkdownIt

from omni_tasks.grafana.push import annotate_events, client
from omni_tasks.store.alerts import insert_event
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.grafana_api import GrafanaState, grafana_app

TEXT = (
    "rebase onto <img src=x onerror=alert(1)> [docs](http://evil.example/p) "
    "![i](https://e/i.png) **bold** `code` a|b www.evil.example & done"
)


def test_an_event_text_is_escaped_for_grafana(db) -> None:
    insert_event(
        db,
        time=dt.datetime(2026, 11, 28, 2, tzinfo=dt.UTC),
        kind="stack_change",
        benchmark=None,
        branch="main",
        variant=None,
        text=TEXT,
        tags=["main"],
        details={},
        dedup_key="hostile-text",
    )
    db.commit()
    state = GrafanaState()
    with serve_in_thread(grafana_app(state)) as url:
        assert annotate_events(db, client(url, "glsa_t")) == 1
    (sent,) = [a["text"] for a in state.annotations]
    for markup in ("<", ">", "[", "](", "**", "`", "|", "http://", "https://", "www."):
        assert markup not in sent, (markup, sent)
    rendered = MarkdownIt("gfm-like").render(sent)  # raw HTML allowed, as Grafana's tooltip
    for element in ("<img", "<a ", "<strong>", "<code>", "<table>"):
        assert element not in rendered, (element, rendered)
    # What a reader sees is the text (a URL's colon and www.'s dot are look-alikes).
    assert html.unescape(sent) == TEXT.replace("://", "\u2236//").replace("www.", "www\u2024")
