"""The check run's text (issue 64): a clip's utt_id stays inside its code span, and nothing it
carries becomes a link, HTML or a table cell of its own."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from omni_tasks.ab.summary import code_span, worst_clips_markdown
from omni_tasks.store.views import RegressedClip

HOSTILE = [
    "u1` [x](http://evil.example/p) ![i](http://e/i.png) <img src=x> | **b** `",
    "``u2``",
    "u3\\|tail",
    "u4\\",
    " u5 ",
]


def _cells(markdown: str) -> list[str]:
    html = MarkdownIt("gfm-like").render(markdown)
    assert "<a " not in html and "<img" not in html, html
    (row,) = re.findall(r"<tbody>\s*<tr>(.*?)</tr>", html, re.S)
    return re.findall(r"<td>(.*?)</td>", row, re.S)


@pytest.mark.parametrize("utt_id", HOSTILE)
def test_an_utt_id_stays_in_its_code_span(utt_id: str) -> None:
    clip = RegressedClip(utt_id, "said", "heard", 0.5, "base", 0.0, "ok", None, None)
    cells = _cells(worst_clips_markdown([clip]))
    assert len(cells) == 5, cells  # clip, said, base, head, audio: no cell of its own
    (code,) = re.findall(r"^<code>(.*)</code>$", cells[0], re.S)
    shown = code.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert shown == utt_id.replace("\\", "\\\\"), shown  # a backslash shows doubled


def test_a_code_span_is_redacted_and_on_one_line() -> None:
    span = code_span("a\nb xoxb-1111-2222-abcdef")
    assert "\n" not in span and "xoxb-1111" not in span and "[redacted]" in span
