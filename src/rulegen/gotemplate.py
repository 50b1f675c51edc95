"""A tiny evaluator for the Go-template subset rulegen emits, to predict alert text in tests.

Why: generated promtool tests assert exact labels and annotations, so the generator must know
what Prometheus will print. It understands only what rulegen writes (``$labels.X``,
``index $labels "k8s.pod"``, ``$labels``, ``$value | humanize*``, string literals, the label
loop of ``label_pairs``) and refuses anything else rather than guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

_ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_WITH_LABEL = re.compile(
    r"\{\{\s*with \$labels\.([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}(.*?)\{\{\s*end\s*\}\}", re.DOTALL
)
# ``{{ if eq $labels.x "v" }}…{{ else }}…{{ end }}`` (no action nested in a branch opens a block)
_IF_LABEL = re.compile(
    r'\{\{\s*if eq \$labels\.([a-zA-Z_][a-zA-Z0-9_]*) "([^"]*)"\s*\}\}(.*?)'
    r"\{\{\s*else\s*\}\}(.*?)\{\{\s*end\s*\}\}",
    re.DOTALL,
)
_DOT = re.compile(r"\{\{\s*\.\s*\}\}")
# The one loop rulegen writes: `` name=value`` for each label kept by ``eq``/``ne`` on its name
# (Go ranges over a map in key order).
_PAIRS = re.compile(
    r'\{\{ range \$k, \$v := \$labels \}\}\{\{ if (eq|ne) \$k((?: "[^"]*")+) \}\}'
    r" \{\{ \$k \}\}=\{\{ \$v \}\}\{\{ end \}\}\{\{ end \}\}"
)


def label_pairs(names: tuple[str, ...], *, keep: bool) -> str:
    """The Go template that prints `` name=value`` for each of the alert's labels named in
    ``names`` (``keep``) or not named there; ``expand`` predicts it."""
    if not names or (not keep and len(names) != 1):
        raise ValueError("label_pairs needs names to keep, or exactly one to leave out")
    test = "eq" if keep else "ne"
    listed = " ".join(f'"{name}"' for name in names)
    return (
        f"{{{{ range $k, $v := $labels }}}}{{{{ if {test} $k {listed} }}}}"
        " {{ $k }}={{ $v }}{{ end }}{{ end }}"
    )


_FIELD = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")  # a Go identifier: ``$labels.x`` works
# ``index $labels "k8s.pod"``: a label whose name is no Go identifier (Prometheus 3's UTF-8
# names); the name holds no quote or backslash (``promql.writable_label``)
_INDEX = re.compile(r'^index \$labels "([^"\\]*)"$')


def label_ref(name: str) -> str:
    """The template expression of the alert's label ``name``: ``$labels.x``, or for a name
    that is no Go identifier (``k8s.pod``, a UTF-8 name) ``index $labels "k8s.pod"``;
    ``expand`` predicts both. Legacy names keep the short form (the output stays as it was)."""
    return f"$labels.{name}" if _FIELD.match(name) else f'index $labels "{name}"'


def label_arg(name: str) -> str:
    """``label_ref`` as a function's argument (``printf `…` $labels.x (index $labels "y")``)."""
    ref = label_ref(name)
    return ref if _FIELD.match(name) else f"({ref})"


class UnsupportedTemplate(ValueError):
    """The text uses a Go-template construct the predictor does not model."""


def expand(text: str, labels: Mapping[str, str], value: float) -> str:
    """Expand ``text`` as Prometheus would for an alert with ``labels`` and ``value``."""
    loop = _PAIRS.search(text)
    if loop is not None:
        names = set(re.findall(r'"([^"]*)"', loop.group(2)))
        keep = loop.group(1) == "eq"
        pairs = "".join(f" {k}={v}" for k, v in sorted(labels.items()) if (k in names) == keep)
        before, after = text[: loop.start()], text[loop.end() :]
        return expand(before, labels, value) + pairs + expand(after, labels, value)
    branch = _IF_LABEL.search(text)
    if branch is not None:
        chosen = branch.group(3) if labels.get(branch.group(1), "") == branch.group(2) else None
        body = expand(chosen if chosen is not None else branch.group(4), labels, value)
        before, after = text[: branch.start()], text[branch.end() :]
        return expand(before, labels, value) + body + expand(after, labels, value)
    optional = _WITH_LABEL.search(text)
    if optional is not None:
        # ``{{ with $labels.x }}…{{ . }}…{{ end }}``: the body, ``.`` being the label's value,
        # only when the label is set (a label some releases of an exporter do not have)
        found = labels.get(optional.group(1), "")
        pieces = _DOT.split(optional.group(2))
        body = found.join(expand(p, labels, value) for p in pieces) if found else ""
        before, after = text[: optional.start()], text[optional.end() :]
        return expand(before, labels, value) + body + expand(after, labels, value)

    def action(match: re.Match[str]) -> str:
        body = match.group(1).strip()
        if body.startswith('"') and body.endswith('"') and len(body) >= 2:
            return body[1:-1]
        label = _label_action(body, labels)
        if label is not None:
            return label
        parts = [p.strip() for p in body.split("|")]
        if parts[0] != "$value" or len(parts) > 2:
            raise UnsupportedTemplate(f"cannot predict template action {{{{ {body} }}}}")
        if len(parts) == 1:
            return _go_float(value)
        return _FUNCS[parts[1]](value) if parts[1] in _FUNCS else _unsupported(parts[1])

    return _ACTION.sub(action, text)


def _label_action(body: str, labels: Mapping[str, str]) -> str | None:
    """What an action on ``$labels`` prints (a missing label: the empty string, as Go's field
    access and ``index`` give), or ``None`` when the action is something else."""
    if body.startswith("$labels."):
        return labels.get(body[len("$labels.") :], "")
    indexed = _INDEX.match(body)
    if indexed is not None:
        return labels.get(indexed.group(1), "")
    if body == "$labels":  # Go prints a map[string]string sorted by key
        return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())) + "]"
    return None


def _unsupported(name: str) -> str:
    raise UnsupportedTemplate(f"cannot predict template function {name}")


def _g4(value: float) -> str:
    return f"{value:.4g}"


def _go_float(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def humanize(v: float) -> str:
    """Prometheus ``humanize``: SI prefixes, 4 significant digits."""
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    if abs(v) >= 1:
        prefix = ""
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
        return _g4(v) + prefix
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return _g4(v) + prefix


def humanize1024(v: float) -> str:
    """Prometheus ``humanize1024``: binary prefixes."""
    if abs(v) <= 1 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    for p in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(v) < 1024:
            break
        prefix, v = p, v / 1024
    return _g4(v) + prefix


def humanize_duration(v: float) -> str:
    """Prometheus ``humanizeDuration``."""
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    if v == 0:
        return _g4(v) + "s"
    if abs(v) >= 1:
        sign = "-" if v < 0 else ""
        v = abs(v)
        whole = int(v)
        seconds, minutes = whole % 60, (whole // 60) % 60
        hours, days = (whole // 3600) % 24, whole // 86400
        if days:
            return f"{sign}{days}d {hours}h {minutes}m {seconds}s"
        if hours:
            return f"{sign}{hours}h {minutes}m {seconds}s"
        if minutes:
            return f"{sign}{minutes}m {seconds}s"
        return f"{sign}{_g4(v)}s"
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return f"{_g4(v)}{prefix}s"


def humanize_percentage(v: float) -> str:
    """Prometheus ``humanizePercentage``."""
    return _g4(v * 100) + "%"


_FUNCS = {
    "humanize": humanize,
    "humanize1024": humanize1024,
    "humanizeDuration": humanize_duration,
    "humanizePercentage": humanize_percentage,
}
