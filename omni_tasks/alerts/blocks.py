"""Block Kit messages for alerts: pure functions of decisions and comparisons.

Everything user-controlled (transcripts, references, branch names) is escaped for Slack
(& < >) and cut to fit: at most 50 blocks, 3000 characters per text block, 150 per header.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import JsonValue
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
    TextObject,
)

from omni_tasks.alerts.titles import MAX_HEADER, Title, clip_words
from omni_tasks.benchmarks.base import Words
from omni_tasks.contracts import Comparison, JsonObject, RunStats, json_objects
from omni_tasks.formatting import pct_ci, pts, pts_ci
from omni_tasks.series import Series
from omni_tasks.trust.redact import code, entities, escape, escape_with_paths

MAX_BLOCKS = 50
MAX_TEXT = 3000
MAX_FALLBACK = 3000
TOP_CLIPS = 5
CLIP_TEXT = 280
MAX_SHIFTS = 8  # labels shown per breakdown dimension
NO_GOOD_NIGHT = "no earlier good night"  # a range whose step may precede every night fitted


@dataclass(frozen=True)
class Message:
    text: str  # the notification / fallback text
    blocks: list[Block] = field(default_factory=list)

    def to_payload(self) -> JsonObject:
        """The message as Slack's API takes it (slack_sdk checks each block's limits here)."""
        blocks: list[JsonValue] = [b.to_dict() for b in self.blocks]
        return {"text": self.text, "blocks": blocks}

    @classmethod
    def from_payload(cls, payload: JsonObject) -> Message:
        """A stored payload (the outbox's) as a message again."""
        return cls(str(payload.get("text") or ""), parse_blocks(payload))


@dataclass(frozen=True)
class CommitRange:
    """Where a regression entered: the candidate's commits on the nights after and before every
    step the series plausibly fits (None before when the step may precede the nights fitted;
    analysis/bisect.py `bisect_range`)."""

    first_bad: str
    first_bad_night: str
    last_good: str | None = None
    last_good_night: str | None = None
    compare_url: str | None = None  # the repo's compare view, when OMNI_REPO_URL is set
    fitted_nights: int | None = None  # the nights the change point was fitted to


@dataclass(frozen=True)
class AlertContext:
    """What a regression alert says; built from a stored gate decision and its comparison."""

    series: Series
    nightly: str
    candidate: str
    baseline: str
    variant: str
    verdict: str
    confirmed: bool
    tau: float
    comparison: Comparison | None
    p_holm: float | None = None
    links: dict[str, str] = field(default_factory=dict)
    broken_label: str | None = None  # the benchmark's name for a broken item (WER > tau)
    multiple_choice: bool = False  # items are right or wrong (an answer, a voice), no figure
    words: Words = field(default_factory=Words)  # how the family speaks of its items
    commits: CommitRange | None = None
    alert_id: int | None = None  # the alert every triage command names
    next_steps: tuple[str, ...] = ()  # commands to run next, shown copyable
    group_id: int | None = None  # the alert group it belongs to (alerts/groups.py)
    buttons: bool = False  # the Slack app has interactivity (alerts/interactions.py)
    same_morning: str | None = None  # how a same-morning re-run confirmed it (analysis/rerun.py)

    @property
    def broken(self) -> str:
        return self.broken_label or f"WER > {self.tau:g}"


def plain(text: object) -> str:
    """For plain_text fields, where entities are shown literally: no angle brackets at all."""
    return str(text).replace("<", "‹").replace(">", "›")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Blocks are slack_sdk's models (their to_dict checks Slack's limits); text is clipped to
# those limits first, so a long transcript shortens a message instead of failing it.
def section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=clip(text, MAX_TEXT)))


def _header(text: str) -> HeaderBlock:
    return HeaderBlock(text=PlainTextObject(text=clip_words(plain(text), MAX_HEADER)))


def _titled(title: str | Title, *blocks: Block) -> Message:
    """A message under a header of `title`, fitted to a header's length; the notification
    text says it whole."""
    shown = title.fitted() if isinstance(title, Title) else title
    return Message(clip(escape(str(title)), MAX_FALLBACK), fit([_header(shown), *blocks]))


def context(text: str, block_id: str | None = None) -> ContextBlock:
    return ContextBlock(block_id=block_id, elements=[MarkdownTextObject(text=clip(text, MAX_TEXT))])


def _p(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2g}"


def _tail(stats: RunStats) -> str:
    n = stats.n_scored + stats.n_failed
    return f"{pct_ci(stats.tail_fraction, stats.tail_fraction_ci)} n={n}"


def _pair(ctx: AlertContext) -> str:
    """The branches, and the variant when it is not the default one (named as a variant)."""
    variant = "" if ctx.variant == "default" else f" (variant {ctx.variant})"
    return f"{ctx.candidate} vs {ctx.baseline}{variant}"


def _headline(ctx: AlertContext, head: str = "", since: str = "") -> Title:
    state = "confirmed" if ctx.confirmed else "unconfirmed"
    c = ctx.comparison
    size = "" if c is None or c.delta_tail_fraction is None else f" ({pts(c.delta_tail_fraction)})"
    tail = f" {ctx.verdict}, {state}{size} — {ctx.nightly}{since}"
    return Title(head, ctx.series, f": {_pair(ctx)}", tail)


def headline(ctx: AlertContext) -> str:
    """Series, verdict and size in one line: what a reader takes in before opening it."""
    return str(_headline(ctx))


def _figures(ctx: AlertContext) -> list[Block]:
    c = ctx.comparison
    rerun = [section(f"*{escape(ctx.same_morning)}*")] if ctx.same_morning else []
    if c is None:
        return [section("No paired comparison stored for this decision."), *rerun]
    broken = ctx.words.broken
    head = (
        f"*{broken[:1].upper()}{broken[1:]}*"
        if ctx.multiple_choice
        else f"*Tail fraction* ({ctx.broken})"
    )
    tail = (
        f"{head}: {escape(ctx.baseline)} {_tail(c.baseline)} → "
        f"{escape(ctx.candidate)} {_tail(c.candidate)}\n"
        f"*Δ tail* {pts_ci(c.delta_tail_fraction, c.delta_tail_fraction_ci)}"
    )
    paired = (
        f"*Paired* (n={c.n_paired}): regressed {c.regressed} : improved "
        f"{c.improved}, stable-broken {c.stable_broken}; exact McNemar "
        f"p={_p(c.mcnemar_p)}, Holm p={_p(ctx.p_holm)}"
    )
    shifts = _shifts(c.mode_shift)
    return [
        section(tail),
        section(paired),
        *rerun,
        *([section("\n".join(shifts))] if shifts else []),
    ]


_SHIFT_TITLES = {"mode": "Failure modes", "origin": "Origin"}


def _shifts(shift: dict[str, dict[str, int]]) -> list[str]:
    """One line per dimension (failure mode, origin; a multiple-choice task, category...):
    broken items per label, baseline → candidate, largest increase first."""
    by_dim: dict[str, list[tuple[str, dict[str, int]]]] = {}
    for key, counts in shift.items():
        dim, _, label = key.partition(":")
        by_dim.setdefault(dim, []).append((label, counts))
    lines = []
    for dim, cells in by_dim.items():
        cells.sort(key=lambda x: x[0])
        if len(cells) > MAX_SHIFTS:  # the largest increases, when not all fit
            cells.sort(key=lambda x: x[1].get("baseline", 0) - x[1].get("candidate", 0))
        title = _SHIFT_TITLES.get(dim, f"Wrong by {dim.replace('_', ' ')}")
        shown = ", ".join(
            f"{escape(label)} {v.get('baseline')}→{v.get('candidate')}"
            for label, v in cells[:MAX_SHIFTS]
        )
        lines.append(f"*{escape(title)}* {shown}")
    return lines


def _clips(ctx: AlertContext) -> list[Block]:
    c = ctx.comparison
    top = [] if c is None else c.top_regressed[:TOP_CLIPS]
    if not top:
        return []
    w = ctx.words
    blocks: list[Block] = [section(f"*Worst regressed {w.items}* (of {c.regressed if c else 0})")]
    for t in top:
        said = f"`{escape(clip(t.utt_id, 80))}`"
        if ctx.multiple_choice:
            said += (
                f" {w.said} {escape(clip(t.heard or '(none)', 16))}, gold "
                f"{escape(clip(t.reference, 16))} (baseline {w.said} "
                f"{escape(clip(t.baseline_heard or '(none)', 16))})"
            )
        else:
            said += (
                f" {w.metric or 'figure'} {t.wer:.2f}\n> reference: "
                f"{escape(clip(t.reference, CLIP_TEXT))}\n"
                f"> {escape(ctx.candidate)} {w.said}: "
                f"{escape(clip(t.heard or '(nothing)', CLIP_TEXT))}\n"
                f"> {escape(ctx.baseline)} {w.said}: "
                f"{escape(clip(t.baseline_heard or '(nothing)', CLIP_TEXT))}"
            )
        blocks.append(section(said))
    return blocks


def link(url: str, name: str) -> str:
    return f"<{entities(url).replace('|', '%7C')}|{name}>"


def _links(links: dict[str, str]) -> list[Block]:
    if not links:
        return []
    return [context(" · ".join(link(url, escape(name)) for name, url in links.items()))]


def fit(blocks: list[Block]) -> list[Block]:
    """Keep within Slack's block count (the last block says what was left out)."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    kept = blocks[: MAX_BLOCKS - 1]
    return [*kept, context(f"… {len(blocks) - len(kept)} more blocks left out")]


def note(text: str, *more: Block) -> Message:
    """A plain thread reply (bisect results, auto-bisect notes), then `more`; `text` is
    escaped here."""
    return Message(clip(escape(text), MAX_FALLBACK), [section(escape(text)), *more])


def _commits(ctx: AlertContext) -> list[Block]:
    """Last good → first bad, as copyable SHAs (and the compare view when the repo is known)."""
    r = ctx.commits
    if r is None:
        return []
    bad = f"first bad {code(r.first_bad[:12])} ({r.first_bad_night})"
    n = r.fitted_nights
    fitted = "" if n is None else f" among the {n} night{'' if n == 1 else 's'} fitted"
    if r.last_good is None:
        return [section(f"*Commits* {bad}; the step may precede every night{fitted}")]
    text = f"*Commits* last good {code(r.last_good[:12])} ({r.last_good_night}) → {bad}"
    if r.fitted_nights is not None:
        text += f" (the nights a single step could have entered on{fitted})"
    if r.last_good == r.first_bad:
        text += " (the same commit: the change is not in this repository's code)"
    if r.compare_url:
        text += f" · {link(r.compare_url, 'compare')}"
    return [section(text)]


def next_line(
    alert_id: int | None,
    steps: tuple[str, ...],
    group_id: int | None = None,
    with_buttons: bool = False,
) -> list[Block]:
    """`Next:` an alert's id (and its group's) and the commands to run, each copyable."""
    if alert_id is None and not steps:
        return []
    said = []
    if alert_id is not None:
        group = "" if group_id is None else f" (group {group_id})"
        said.append(f"*Alert {alert_id}*{group}")
    said += [code(step) for step in steps]
    shown: list[Block] = [section("Next: " + " · ".join(said))]
    if with_buttons and alert_id is not None:
        shown.append(buttons(alert_id))
    return shown


def in_group(payload: JsonObject, alert_id: int, group_id: int) -> JsonObject:
    """An alert's opening post as its group's thread shows it: the Next line names the group
    (`next_line`'s words), as a post written before the group formed does not."""
    alone = f"Next: *Alert {alert_id}*"
    stored = json_objects(payload.get("blocks"))
    for i, b in enumerate(stored):
        text = b.get("text")
        if b.get("type") != "section" or not isinstance(text, dict):
            continue
        said = text.get("text")
        if isinstance(said, str) and (said == alone or said.startswith(f"{alone} ·")):
            named = said.replace(alone, f"{alone} (group {group_id})", 1)
            block: JsonObject = {**b, "text": {**text, "text": named}}
            shown: list[JsonValue] = [*stored[:i], block, *stored[i + 1 :]]
            return {**payload, "blocks": shown}
    return payload


def buttons(alert_id: int) -> ActionsBlock:
    """Acknowledge and Ignore on an alert or group (alerts/interactions.py takes the click);
    the commands beside them stay the way in where the app has no interactivity."""
    ignore = ConfirmObject(
        title="Ignore this alert?",
        text="It closes for everyone; `omni-tasks alerts reopen` brings it back.",
        confirm="Ignore",
        deny="Keep it",
    )
    return ActionsBlock(
        block_id=f"triage-{alert_id}",
        elements=[
            ButtonElement(
                text="Acknowledge", action_id="omni_ack", value=str(alert_id), style="primary"
            ),
            ButtonElement(
                text="Ignore", action_id="omni_ignore", value=str(alert_id), confirm=ignore
            ),
        ],
    )


@dataclass(frozen=True)
class GroupMember:
    alert_id: int
    series: str  # Series.label: model and lane always
    model: str
    lane: str
    line: str  # Δ with its interval, and how it was confirmed (stored when it joined)
    open: bool


@dataclass(frozen=True)
class GroupView:
    """An alert group as its Slack parent shows it: one line per member."""

    group_id: int
    candidate: str
    baseline: str
    open: bool
    first_bad_night: str
    last_good_night: str | None  # None: a member's step may precede every night it fitted
    members: tuple[GroupMember, ...]
    last_good: str | None = None
    first_bad: str | None = None
    next_steps: tuple[str, ...] = ()
    buttons: bool = False

    @property
    def span(self) -> str:
        """The commit range, `abc1234..def5678`, or the nights when no commit is on record;
        only the first bad end when no good night is known before it."""
        bad = self.first_bad[:7] if self.first_bad else self.first_bad_night
        if self.last_good_night is None:
            return f"up to {bad} ({NO_GOOD_NIGHT})"
        good = self.last_good[:7] if self.first_bad and self.last_good else self.last_good_night
        return f"{good}..{bad}"

    @property
    def title(self) -> str:
        n, series = len(self.members), len({m.series for m in self.members})
        models, lanes = len({m.model for m in self.members}), len({m.lane for m in self.members})
        what = (
            f"{self.candidate} {self.span}: {n} regression{'s' * (n != 1)} in {series} series "
            f"({models} model{'s' * (models != 1)}, {lanes} lane{'s' * (lanes != 1)})"
        )
        if self.open:
            return f":rotating_light: {what}"
        return f":white_check_mark: resolved, every member recovered — {what}"


def group_parent(g: GroupView) -> Message:
    """A group's parent message: the range, one line per member, the commands to run."""
    lines = [
        f"{':red_circle:' if m.open else ':white_check_mark: recovered'} *Alert {m.alert_id}* "
        f"{escape(m.series)}: {escape(m.line)}"
        for m in g.members
    ]
    steps = [f"*Group {g.group_id}*", *(code(step) for step in g.next_steps)]
    return _titled(
        g.title,
        section("Next: " + " · ".join(steps)),
        *([buttons(g.group_id)] if g.buttons and g.open else []),
        section(
            f"*Range* {escape(g.candidate)} vs {escape(g.baseline)}: "
            + (
                NO_GOOD_NIGHT
                if g.last_good_night is None
                else f"last good night {g.last_good_night}"
            )
            + f" → first bad night {g.first_bad_night}; members' details are in the thread"
        ),
        section("\n".join(lines)),
    )


def regression_opened(ctx: AlertContext, since: str = "") -> Message:
    """An alert's parent message: what regressed, where, what to run next (`since`: how long
    it has been open, after later REGRESSED nights)."""
    return _titled(
        _headline(ctx, ":rotating_light: ", since),
        *next_line(ctx.alert_id, ctx.next_steps, ctx.group_id, ctx.buttons),  # commands copyable
        *_commits(ctx),
        *_figures(ctx),
        *_clips(ctx),
        *_links(ctx.links),
    )


def regression_parent(ctx: AlertContext, opened: str, nights: int) -> Message:
    """The parent message after later REGRESSED nights (chat.update)."""
    return regression_opened(ctx, f" (open since {opened}, {nights} nights)")


def regression_still(ctx: AlertContext) -> Message:
    c = ctx.comparison
    text = (
        f"{ctx.nightly}: still REGRESSED — Δ tail {pts(c.delta_tail_fraction if c else None)}, "
        f"regressed {c.regressed if c else 'n/a'} : improved {c.improved if c else 'n/a'}, "
        f"p={_p(c.mcnemar_p if c else None)}"
    )
    return note(text, *_links(ctx.links))


def regression_held(
    ctx: AlertContext,
    verdict: str,
    quiet: int,
    needed: int,
    high: float | None,
    floor: float,
    basis: str,
) -> Message:
    """A night without a regression that does not yet resolve the alert, and why (`basis`:
    why the floor is what it is, analysis/resolution.py)."""
    bound = "" if high is None else f" (the last ones pooled: Δ tail up to {pts(high)})"
    text = (
        f"{ctx.nightly}: {verdict}, still open — {quiet} night(s) without a regression in a "
        f"row; it resolves when {needed} in a row together rule out a regression of "
        f"{pts(floor)} or more ({basis}){bound}"
    )
    return note(text, *_links(ctx.links))


def regression_resolved_parent(ctx: AlertContext, opened: str) -> Message:
    head = f":white_check_mark: resolved {ctx.nightly}: "
    title = Title(head, ctx.series, f" {_pair(ctx)}", f" — regressed from {opened}")
    return _titled(title, *_links(ctx.links))


def regression_resolved_reply(
    ctx: AlertContext, quiet: int, high: float | None, floor: float, basis: str
) -> Message:
    bound = "" if high is None else f" (pooled: Δ tail up to {pts(high)})"
    text = (
        f"{ctx.nightly}: {ctx.verdict} — {quiet} nights in a row without a regression rule out "
        f"one of {pts(floor)} or more ({basis}){bound}; alert resolved."
    )
    return note(text)


def regression_withdrawn_parent(ctx: AlertContext, opened: str) -> Message:
    tail = f" — the {opened} regression is no longer confirmed"
    title = Title(":grey_question: withdrawn: ", ctx.series, f" {_pair(ctx)}", tail)
    return _titled(title, *_links(ctx.links))


def regression_withdrawn_reply(ctx: AlertContext, opened: str, why: str) -> Message:
    text = (
        f"{opened}: {why}. The series was decided again (a backfilled night changed its "
        "streak, or a later run of that night joined its comparisons and the Holm adjustment), "
        "so this alert is resolved; a new one opens if the regression is confirmed again."
    )
    return note(text)


def infra(
    title: str,
    reasons: list[str],
    links: dict[str, str] | None = None,
    ids: dict[str, str] | None = None,
    next_steps: list[Block] | None = None,
) -> Message:
    """`ids` (run id, task, …) are shown as code spans, exactly as written, so they can be
    pasted into `airflow` (escaping would turn their underscores into look-alikes);
    `next_steps` (next_line) follow the reasons."""
    body = _bullets(reasons, 20) or "(no reason given)"
    if len(reasons) > 20:
        body += f"\n… and {len(reasons) - 20} more"
    named = (
        [context(" · ".join(f"{k} {code(clip(v, 200))}" for k, v in ids.items()))] if ids else []
    )
    shown = [section(body), *(next_steps or []), *named, *_links(links or {})]
    return _titled(f":warning: {title}", *shown)


def _bullets(lines: list[str], most: int) -> str:
    """Data lines, escaped, each path in them a code span as on disk (a server's log)."""
    return "\n".join(f"• {escape_with_paths(clip(x, 500))}" for x in lines[:most])


def verdict_message(
    title: str,
    verdict: str,
    lines: list[str],
    links: dict[str, str],
    next_steps: tuple[str, ...] = (),
) -> Message:
    """A one-off verdict (an on-demand A/B, a night's concurrency check): one message, never
    an alert's thread; the first ten lines, then the commands to run next."""
    icon = {
        "REGRESSED": ":red_circle:",
        "BATCH-VARIANT": ":red_circle:",
        "INFRA": ":warning:",
        "UNKNOWN": ":grey_question:",
    }
    head = f"{icon.get(verdict, ':large_green_circle:')} {verdict} · {title}"
    body = section(_bullets(lines, 10) or "(no figures)")
    return _titled(head, body, *next_line(None, next_steps), *_links(links))


def digest_message(title: str, paragraphs: list[tuple[str, list[str]]]) -> Message:
    """A periodic digest (the weekly standing failures): a header, then each paragraph's
    heading and its data lines, escaped (the first fifteen; the count of the rest)."""
    shown = []
    for heading, lines in paragraphs:
        more = [f"… and {len(lines) - 15} more"] if len(lines) > 15 else []
        body = _bullets([*lines[:15], *more], 16)
        shown.append(section(f"*{escape(heading)}*" + (f"\n{body}" if body else "")))
    return _titled(title, *shown)


def infra_resolved(title: str) -> Message:
    return note(f":white_check_mark: {title}")


def render_text(payload: JsonObject) -> str:
    """A readable plain-text rendering of a payload (the local outbox prints this)."""
    lines = []
    for b in parse_blocks(payload):
        if isinstance(b, HeaderBlock | SectionBlock) and b.text is not None:
            lines.append(b.text.text)
        elif isinstance(b, ContextBlock):
            lines.extend(e.text for e in b.elements if isinstance(e, TextObject))
    if not lines:
        lines.append(str(payload.get("text", "")))
    out = "\n".join(lines)
    return out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def parse_blocks(payload: JsonObject) -> list[Block]:
    """A stored payload's blocks as slack_sdk's models (a block it does not know is dropped)."""
    return Block.parse_all(json_objects(payload.get("blocks")))
