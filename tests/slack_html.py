"""A Slack message as HTML, close to how Slack draws it: the Block Kit subset the alerts emit
(header, section and context in mrkdwn, actions' buttons), with mrkdwn's *bold*, `code` and
<url|text> links. For screenshots of an alert in the docs; not a Slack client."""

from __future__ import annotations

import html
import re
from typing import Any

# The shortcodes the alerts use, as glyphs the test machine's fonts (DejaVu) draw.
EMOJI = {
    "rotating_light": '<span style="color:#e01e5a">&#x25C9;</span>',
    "red_circle": '<span style="color:#e01e5a">&#x25CF;</span>',
    "large_green_circle": '<span style="color:#2eb67d">&#x25CF;</span>',
    "white_check_mark": '<span style="color:#2eb67d">&#x2714;</span>',
    "warning": '<span style="color:#ecb22e">&#x26A0;</span>',
    "grey_question": '<span style="color:#888">?</span>',
}
LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]+))?>")
BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
STYLE = """
body { font-family: 'Liberation Sans', 'DejaVu Sans', sans-serif; font-size: 15px;
       color: #1d1c1d; margin: 0; background: #fff; }
.msg { display: flex; gap: 8px; padding: 12px 20px; max-width: 860px; }
.avatar { width: 36px; height: 36px; border-radius: 4px; background: #4a154b; color: #fff;
          font-weight: bold; text-align: center; line-height: 36px; flex: none; }
.who b { margin-right: 6px; } .who span { color: #616061; font-size: 12px; }
.header { font-size: 18px; font-weight: 900; margin: 6px 0 4px; }
.section { margin: 4px 0; line-height: 1.45; }
.quote { border-left: 4px solid #ddd; padding-left: 10px; color: #454245; }
.context { margin: 4px 0; color: #616061; font-size: 12.5px; line-height: 1.4; }
code { font-family: 'DejaVu Sans Mono', monospace; font-size: 12px; color: #c01343;
       background: #f8f8f8; border: 1px solid #ddd; border-radius: 3px; padding: 1px 3px;
       overflow-wrap: anywhere; }
a { color: #1264a3; text-decoration: none; }
button { font: inherit; font-size: 13px; font-weight: bold; padding: 4px 12px; margin: 6px 6px 0 0;
         border: 1px solid #bbb; border-radius: 4px; background: #fff; }
button.primary { background: #007a5a; color: #fff; border-color: #007a5a; }
"""


def _emoji(text: str) -> str:
    return re.sub(r":([a-z_]+):", lambda m: EMOJI.get(m[1], m[0]), text)


def mrkdwn(text: str) -> str:
    """Slack mrkdwn as HTML, a line each (a `> ` line quoted). The text is already escaped as
    Slack wants (&amp; &lt; &gt;; a quote's `>` may be either), so what is left of it is HTML."""
    lines = []
    for line in text.split("\n"):
        quoted = re.match(r"(?:&gt;|>) ", line)
        if quoted:
            lines.append(f'<div class="quote">{_inline(line[quoted.end() :])}</div>')
        else:
            lines.append(f"<div>{_inline(line) or '&nbsp;'}</div>")
    return "".join(lines)


def _inline(text: str) -> str:
    """One line's *bold*, `code` (left as written) and <url|text> links."""
    pieces = text.split("`")
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:  # inside a code span
            out.append(f"<code>{piece}</code>")
            continue
        linked = LINK.sub(lambda m: f'<a href="{m[1]}">{m[2] or m[1]}</a>', piece)
        out.append(_emoji(BOLD.sub(r"<b>\1</b>", linked)))
    return "".join(out)


def _block(block: dict[str, Any]) -> str:
    kind = block["type"]
    if kind == "header":
        return f'<div class="header">{_emoji(html.escape(block["text"]["text"]))}</div>'
    if kind == "section":
        return f'<div class="section">{mrkdwn(block["text"]["text"])}</div>'
    if kind == "context":
        said = " ".join(_inline(e["text"]) for e in block["elements"] if "text" in e)
        return f'<div class="context">{said}</div>'
    if kind == "actions":
        return (
            "<div>"
            + "".join(
                f'<button class="{e.get("style", "")}">{html.escape(e["text"]["text"])}</button>'
                for e in block["elements"]
            )
            + "</div>"
        )
    raise AssertionError(f"a block the alerts do not emit: {kind}")


def page(payload: dict[str, Any], app_name: str = "omni-tasks") -> str:
    """One message (`payload`: its text and blocks) as a page, posted by `app_name`."""
    body = "\n".join(_block(b) for b in payload["blocks"])
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
        f"<div class='msg'><div class='avatar'>o</div><div>"
        f"<div class='who'><b>{app_name}</b><span>APP</span></div>{body}</div></div>"
        "</body></html>"
    )
