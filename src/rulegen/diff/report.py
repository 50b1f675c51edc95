"""A ``Diff`` as text for a terminal, markdown for a pull request comment, or one JSON object.

Why three: people read the text, a pull request shows the markdown (a table per service,
changed alerts first, the unchanged folded away), CI reads the JSON. Every value a spec or a
signal supplies is escaped for where it goes: control characters in all three, and in
markdown pipes and backticks, so a label value cannot break the table or the comment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from rulegen import units
from rulegen.core.diagnostics import printable
from rulegen.diff.facts import AlertKey
from rulegen.diff.model import AlertDiff, Diff, FieldChange, History, Labels, Names, ServiceDiff

ARROW = "→"
NONE = "(none)"
LONG = 60  # a value longer than this (or of several lines) is only said to have changed
# What an added or removed alert's one line shows, when the alert has it.
HEADLINE = ("threshold", "objective", "for", "severity", "receivers")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _counts(diff: Diff | ServiceDiff) -> str:
    """``1 alert changed, 1 added, 22 unchanged`` (only the kinds there are)."""
    parts = [(diff.count(c), c) for c in ("changed", "added", "removed", "unchanged")]
    shown = [(n, c) for n, c in parts if n]
    if not shown:
        return "no alerts"
    first, *rest = shown
    return ", ".join([f"{_plural(first[0], 'alert')} {first[1]}", *(f"{n} {c}" for n, c in rest)])


def _short(value: str | None) -> bool:
    return value is None or (len(value) <= LONG and "\n" not in value)


def _value(value: str | None) -> str:
    return NONE if value is None else printable(value)


def _history(history: History | None) -> str:
    if history is None:
        return NONE
    firing = units.format_duration(Decimal(history.firing_ms) / 1000)
    return f"{_plural(history.episodes, 'episode')}, {firing}"


def _labels(labels: Labels) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in labels) + "}"


def _identity(service: str, key: AlertKey) -> str:
    """``DiskAwaitHigh{service=deepseek-v4}``, with the SLO and its page or ticket alert."""
    if key.kind == "slo":
        return f"{key.alert}{{service={service}, slo={key.slo}}} ({key.alerting})"
    if key.alerting:  # one of custom alerts sharing a name: its severity tells which
        return f"{key.alert}{{service={service}, severity={key.alerting}}}"
    return f"{key.alert}{{service={service}}}"


def _headline(alert: AlertDiff) -> list[tuple[str, str]]:
    """An added or removed alert's main fields: ``threshold 5ms, for 5m, severity warning``."""
    values = {c.name: c.new if alert.change == "added" else c.old for c in alert.fields}
    return [(n, v) for n in HEADLINE if (v := values.get(n)) is not None]


def _names_line(what: str, names: Names, show: Callable[[str], str] = printable) -> str | None:
    """``recording rules: 1 changed (a), 2 added (b, c)``, at most five names each."""
    parts = []
    for change, items in (("changed", names.changed), ("added", names.added),
                          ("removed", names.removed)):  # fmt: skip
        if items:
            listed = ", ".join(show(i) for i in items[:5]) + (", …" if len(items) > 5 else "")
            parts.append(f"{len(items)} {change} ({listed})")
    return f"{what}: {', '.join(parts)}" if parts else None


def rfc3339(ms: int) -> str:
    """``2026-01-01T00:00:00Z``."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ms % 1000:03d}Z" if ms % 1000 else "Z")


def _span(diff: Diff) -> str:
    assert diff.span is not None
    return f"{rfc3339(diff.span[0])} .. {rfc3339(diff.span[1])}"


def _summary(diff: Diff) -> str:
    changed = [s for s in diff.services if s.change != "unchanged"]
    unchanged = len(diff.services) - len(changed)
    if not changed:
        services = _plural(len(diff.services), "service")
        return f"no changes against {diff.base}: {_counts(diff)} in {services}"
    tail = f", {unchanged} unchanged" if unchanged else ""
    return f"{_plural(len(changed), 'service')} changed{tail}; {_counts(diff)} (base: {diff.base})"


# --- text ------------------------------------------------------------------------------------


def text_report(diff: Diff) -> str:
    """A block per service that changed, then one summary line."""
    lines: list[str] = []
    for service in diff.services:
        if service.change != "unchanged":
            lines.extend(_text_service(diff, service))
            lines.append("")
    lines.append(printable(_summary(diff)))
    return "\n".join(lines) + "\n"


def _text_service(diff: Diff, service: ServiceDiff) -> list[str]:
    name = printable(service.service)
    head = f"{name}: {_counts(service)}"
    if service.change in ("added", "removed"):
        head = f"{name} ({service.change}): {_counts(service)}"
    lines = [head]
    for alert in service.alerts:
        if alert.change == "unchanged":
            continue
        title = printable(alert.key.title())
        if alert.change == "changed":
            lines.append(f"  changed  {title}")
            lines.extend(f"    {_text_field(c)}" for c in alert.fields)
        else:
            headline = ", ".join(f"{n} {v}" for n, v in _headline(alert))
            lines.append(f"  {alert.change:<8} {title}: {printable(headline)}")
    summaries = (("recording rules", service.recordings), ("dashboard panels", service.panels))
    for what, names in summaries:
        line = _names_line(what, names)
        if line:
            lines.append(f"  {line}")
    if service.dashboard_changed and not service.panels:
        lines.append("  dashboard: changed")
    return lines + _text_backtest(diff, service)


def _text_backtest(diff: Diff, service: ServiceDiff) -> list[str]:
    """``DiskAwaitHigh{service=x}: 14 episodes, 3h12m → 3 episodes, 41m`` per replayed alert,
    then the label sets that start or stop firing."""
    replayed = [a for a in service.alerts if a.replayed]
    if not replayed:
        return []
    lines = [f"  backtest {_span(diff)}, before {ARROW} after:"]
    for alert in replayed:
        who = printable(_identity(service.service, alert.key))
        lines.append(f"    {who}: {_history(alert.old)} {ARROW} {_history(alert.new)}")
        for label, sets in (("starts firing", alert.starts_firing),
                            ("stops firing", alert.stops_firing)):  # fmt: skip
            lines.extend(f"      {label}: {printable(_labels(s))}" for s in sets)
    return lines


def excerpt(old: str | None, new: str | None) -> tuple[str | None, str | None] | None:
    """The part of two long values that differs, with a few words around it and ``…`` where
    text was cut (``…above 5ms on…``, ``…above 10ms on…``); ``None`` when even that part is
    long (the whole change is then only named)."""
    if _short(old) and _short(new):
        return old, new
    if old is None or new is None:
        return None
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    start = _word_start(old, max(0, start - 12))
    cut = [_word_end(text, len(text) - max(0, end - 12)) for text in (old, new)]
    parts = [
        (text[start:stop], start > 0, stop < len(text))
        for text, stop in zip((old, new), cut, strict=True)
    ]
    before, after = (
        ("…" if head else "") + body + ("…" if tail else "") for body, head, tail in parts
    )
    return (before, after) if _short(before) and _short(after) else None


def _word_start(text: str, index: int) -> int:
    while index > 0 and not text[index - 1].isspace():
        index -= 1
    return index


def _word_end(text: str, index: int) -> int:
    while index < len(text) and not text[index].isspace():
        index += 1
    return index


def _text_field(change: FieldChange) -> str:
    shown = excerpt(change.old, change.new)
    if shown is None:
        return f"{printable(change.name)}: changed"
    return f"{printable(change.name)}: {_value(shown[0])} {ARROW} {_value(shown[1])}"


# --- markdown --------------------------------------------------------------------------------


def _code(text: str) -> str:
    """``text`` as an inline code span that stays inside one table cell."""
    body = printable(text).replace("|", "\\|")
    if not body:
        return "(empty)"
    longest, run = 0, 0
    for char in body:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def _md_value(value: str | None) -> str:
    return NONE if value is None else _code(value)


def markdown_report(diff: Diff) -> str:
    """A pull request comment: a heading, the summary, a table per service that changed."""
    lines = [f"### rulegen diff against {_code(diff.base)}", ""]
    changed = [s for s in diff.services if s.change != "unchanged"]
    if not changed:
        lines.append(printable(_summary(diff)).capitalize() + ".")
        return "\n".join(lines) + "\n"
    lines += [printable(_summary(diff)) + ".", ""]
    if diff.span is not None:
        lines += [f"Backtest over {_span(diff)}: episodes and firing time, before {ARROW} after.",
                  ""]  # fmt: skip
    for service in changed:
        lines.extend(_md_service(diff, service))
    unchanged = [s.service for s in diff.services if s.change == "unchanged"]
    if unchanged:
        lines += [f"Unchanged services: {', '.join(_code(s) for s in unchanged)}.", ""]
    return "\n".join(lines)


def _md_service(diff: Diff, service: ServiceDiff) -> list[str]:
    suffix = f" ({service.change})" if service.change in ("added", "removed") else ""
    lines = [f"#### {_code(service.service)}{suffix}", "", f"{_counts(service)}.", ""]
    backtest = diff.span is not None
    head = "| alert | change | what changed |" + (" backtest |" if backtest else "")
    lines += [head, "| --- | --- | --- |" + (" --- |" if backtest else "")]
    for alert in service.alerts:
        if alert.change == "unchanged":
            continue
        if alert.change == "changed":
            what = "<br>".join(_md_field(c) for c in alert.fields)
        else:
            what = ", ".join(f"{n} {_code(v)}" for n, v in _headline(alert))
        row = f"| {_code(alert.key.title())} | {alert.change} | {what} |"
        if backtest:
            row += f" {_md_history(alert)} |"
        lines.append(row)
    lines.append("")
    notes = [
        line
        for line in (
            _names_line("Recording rules", service.recordings, _code),
            _names_line("Dashboard panels", service.panels, _code),
        )
        if line
    ]
    if service.dashboard_changed and not service.panels:
        notes.append("Dashboard: changed")
    if notes:
        lines += [". ".join(notes) + ".", ""]
    unchanged = [a.key.title() for a in service.alerts if a.change == "unchanged"]
    if unchanged:
        lines += [
            f"<details><summary>{_plural(len(unchanged), 'unchanged alert')}</summary>", "",
            ", ".join(_code(t) for t in unchanged), "", "</details>", "",
        ]  # fmt: skip
    return lines


def _md_field(change: FieldChange) -> str:
    name = _code(change.name)
    shown = excerpt(change.old, change.new)
    if shown is None:
        return f"{name}: changed"
    return f"{name}: {_md_value(shown[0])} {ARROW} {_md_value(shown[1])}"


def _md_history(alert: AlertDiff) -> str:
    if not alert.replayed:
        return ""
    parts = [f"{_history(alert.old)} {ARROW} {_history(alert.new)}"]
    for label, sets in (("starts firing", alert.starts_firing),
                        ("stops firing", alert.stops_firing)):  # fmt: skip
        if sets:
            parts.append(f"{label}: " + ", ".join(_code(_labels(s)) for s in sets))
    return "<br>".join(parts)


# --- JSON ------------------------------------------------------------------------------------


def json_report(diff: Diff) -> str:
    """One JSON object: ``{"base", "changed", "services": [...]}`` (+ ``"backtest"``)."""
    document: dict[str, Any] = {"base": diff.base, "changed": diff.changed}
    if diff.span is not None:
        document["backtest"] = {"from": rfc3339(diff.span[0]), "to": rfc3339(diff.span[1])}
    document["services"] = [_json_service(s) for s in diff.services]
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _json_names(names: Names) -> dict[str, list[str]]:
    return {"added": list(names.added), "removed": list(names.removed),
            "changed": list(names.changed)}  # fmt: skip


def _json_service(service: ServiceDiff) -> dict[str, Any]:
    return {
        "service": service.service,
        "change": service.change,
        "alerts": [_json_alert(a) for a in service.alerts],
        "recording_rules": _json_names(service.recordings),
        "dashboard_panels": _json_names(service.panels),
        "dashboard_changed": service.dashboard_changed,
    }


def _json_alert(alert: AlertDiff) -> dict[str, Any]:
    out: dict[str, Any] = {"alert": alert.key.alert, "kind": alert.key.kind}
    if alert.key.kind == "slo":
        out["slo"], out["alerting"] = alert.key.slo, alert.key.alerting
    elif alert.key.alerting:
        out["severity"] = alert.key.alerting
    out["change"] = alert.change
    out["fields"] = {c.name: {"old": c.old, "new": c.new} for c in alert.fields}
    if alert.replayed:
        out["backtest"] = {
            "old": _json_history(alert.old),
            "new": _json_history(alert.new),
            "starts_firing": _json_label_sets(alert.starts_firing),
            "stops_firing": _json_label_sets(alert.stops_firing),
        }
    return out


def _json_history(history: History | None) -> dict[str, Any] | None:
    if history is None:
        return None
    ms = history.firing_ms
    seconds: int | float = ms // 1000 if ms % 1000 == 0 else ms / 1000
    return {"episodes": history.episodes, "firing_seconds": seconds}


def _json_label_sets(sets: Sequence[Labels]) -> list[dict[str, str]]:
    return [dict(s) for s in sets]
