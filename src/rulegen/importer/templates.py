"""The Go templates of imported alerts (annotations, label values), checked as the build does.

Why promtool: the build checks a custom alert's templates with ``promtool check rules``
(``rulegen.build``); an import that took a template promtool rejects (``x }}{{``, an
unknown function) wrote a spec whose first build failed. So the import runs the same check,
through the same wrapper, on a temporary rule file of just the texts that hold ``{{`` (text
without ``{{`` is literal to Go's parser), one group per alert, and refuses each alert whose
template promtool rejects. No promtool: nothing is checked, which the import says (the build
checks them, and needs promtool to).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from rulegen.core import promql
from rulegen.errors import ToolNotFoundError
from rulegen.source.base import ALERT_NAME
from rulegen.validate import promtool

FILE = "imported.rules.yml"
FIELDS = {"annotation": "annotations", "label": "labels"}
_FIELD_ERROR = re.compile(r'^(?P<kind>annotation|label) "(?P<key>[^"]*)": (?P<message>.*)$')


@dataclass(frozen=True)
class Alert:
    """One imported alert's template texts: ``labels`` and ``annotations`` by name."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]

    def rule(self) -> dict[str, object] | None:
        """The alert as a rule for promtool, with only the texts Go's parser reads (and whose
        names promtool accepts on every release); ``None`` when there are none."""
        labels = {k: v for k, v in self.labels.items() if _template(k, v)}
        annotations = {k: v for k, v in self.annotations.items() if _template(k, v)}
        if not labels and not annotations:
            return None
        name = self.name if re.match(ALERT_NAME, self.name) else "Imported"
        return {"alert": name, "expr": "vector(1)", "labels": labels, "annotations": annotations}


@dataclass(frozen=True)
class Rejected:
    """A template promtool rejects: the alert (its index), ``annotations``/``labels``, the
    name, and promtool's reason (``template: __alert_X:1: unclosed action``)."""

    alert: int
    field: str
    key: str
    message: str


def _template(name: str, text: str) -> bool:
    if not (isinstance(name, str) and "{{" in text):
        return False
    return bool(promql.LABEL_NAME.match(name)) and not name.startswith("__")


def check(alerts: Sequence[Alert]) -> tuple[list[Rejected], str | None]:
    """Each template of ``alerts`` promtool rejects; and, when promtool is not there, why
    nothing was checked (``None`` when it ran, or there was nothing to check)."""
    rules = {index: rule for index, a in enumerate(alerts) if (rule := a.rule()) is not None}
    if not rules:
        return [], None
    groups = [{"name": str(index), "rules": [rule]} for index, rule in rules.items()]
    text = yaml.safe_dump({"groups": groups}, allow_unicode=True, sort_keys=False)
    with tempfile.TemporaryDirectory(prefix="rulegen-import-") as folder:
        Path(folder, FILE).write_text(text, encoding="utf-8")
        try:
            checked = promtool.check_rules([FILE], Path(folder))
        except ToolNotFoundError as exc:
            return [], str(exc)
    if checked.ok:
        return [], None
    if not checked.messages:
        raise RuntimeError("promtool check rules failed on the imported templates, saying nothing")
    return [_rejected(line) for line in checked.messages], None


def _rejected(line: str) -> Rejected:
    """One line of promtool's report as the template it rejects; a line that names no
    template of the file is a bug of this module (the file holds nothing else)."""
    parsed = promtool.parse_rule_error(line)
    found = _FIELD_ERROR.match(parsed[3]) if parsed is not None else None
    if parsed is None or found is None or not parsed[1].isdigit():
        raise RuntimeError(f"promtool check rules on the imported templates: {line}")
    return Rejected(int(parsed[1]), FIELDS[found["kind"]], found["key"], found["message"])
