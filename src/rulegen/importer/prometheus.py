"""``rulegen import prometheus``: Prometheus rule files and ``PrometheusRule`` objects → specs.

Why exact: the imported spec must build into the rules it came from (up to formatting and the
``service`` label rulegen adds), so every alert and recording is kept as written (name, PromQL
text, ``for``, ``keep_firing_for``, labels, annotations as Go templates) in the group it came
from, with that group's interval. What rulegen cannot express (``limit``, ``query_offset``, a
severity outside critical/warning/info, a second alert of one name and severity, an unknown
field) is refused with its file, line and field; nothing is dropped silently. promtool test
files among the inputs (a mapping with ``rule_files``) are moved along: their ``rule_files``
point at the generated rule files and their expected labels gain the labels rulegen adds.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import promql_parser

from rulegen import units
from rulegen.core import promql
from rulegen.core.diagnostics import FieldPath as Shown
from rulegen.errors import SpecError
from rulegen.importer import templates
from rulegen.importer.model import (
    ImportedService,
    ImportOptions,
    ImportResult,
    Note,
    UserTest,
)
from rulegen.importer.writer import render
from rulegen.source.base import ALERT_NAME, SERVICE_NAME
from rulegen.source.loader import (
    LoadedDocument,
    LoadError,
    PathKey,
    display,
    load_text,
    read_source,
)
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.source.severities import NAME as SEVERITY_NAME
from rulegen.source.severities import NAME_TEXT as SEVERITY_TEXT

SEVERITIES = DEFAULT_SEVERITIES.names
MAX_FOR = 365 * 86_400  # seconds: rulegen's limit on a custom alert's ``for`` (docs/spec.md)
RULE_KEYS = ("alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations")
GROUP_KEYS = ("name", "interval", "rules", "labels", "limit", "query_offset")
# The ObjectMeta fields a PrometheusRule's metadata may carry; only namespace and labels map.
METADATA_KEYS = (
    "name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
    "creationTimestamp", "managedFields", "ownerReferences", "finalizers", "generateName",
)  # fmt: skip
RESERVED_LABELS = ("alertname", "alertstate")
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_DOC_MARK = re.compile(r"^(---|\.\.\.)(?=[ \t]|$)")
_GLOB = re.compile(r"[*?\[]")
_TEST_KEYS = ("rule_files", "evaluation_interval", "group_eval_order", "tests")


@dataclass
class _Doc:
    """One YAML document of an input file."""

    file: str
    path: Path
    loaded: LoadedDocument

    def line(self, where: PathKey, *, key: bool = False) -> int:
        return self.loaded.positions.at(where, key=key)[0]


@dataclass
class _Service:
    """What one service collects while its files are read."""

    name: str
    how: str
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    group_at: dict[str, str] = field(default_factory=dict)
    group_comments: dict[str, str] = field(default_factory=dict)
    recordings: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    alert_at: dict[tuple[str, str], str] = field(default_factory=dict)  # (name, severity)
    comments: dict[tuple[str | int, ...], str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    operator: dict[str, Any] | None = None
    # the labels rulegen adds to each alert (by name) that its source did not have
    added: dict[str, dict[str, str]] = field(default_factory=dict)
    # severities outside the default ones, in the order met, with where each was first met
    severities: dict[str, str] = field(default_factory=dict)


class _Run:
    """One import: the options, the services so far, and the notes."""

    def __init__(self, options: ImportOptions) -> None:
        self.options = options
        self.result = ImportResult()
        self.services: dict[str, _Service] = {}
        self.file_service: dict[str, str] = {}  # an input file's real path → its service
        # the templates promtool rejects, by the alert's document (its id) and place
        self.templates: dict[tuple[int, PathKey], list[Problem]] = {}

    def adapt(self, doc: _Doc, where: PathKey, text: str, *, key: bool = False) -> None:
        self.result.adapted.append(Note(doc.file, doc.line(where, key=key), _field(where), text))

    def refuse(self, doc: _Doc, where: PathKey, text: str, *, key: bool = False) -> None:
        self.result.refused.append(Note(doc.file, doc.line(where, key=key), _field(where), text))


def _field(where: PathKey) -> str:
    return str(Shown.of(where))


def import_files(files: Sequence[Path], options: ImportOptions) -> ImportResult:
    """Every rule file, ``PrometheusRule`` and promtool test file of ``files``, imported."""
    run = _Run(options)
    tests: list[_Doc] = []
    documents = _load_inputs(files)
    _check_templates(run, documents)
    for docs in documents:
        rule_docs: list[tuple[_Doc, PathKey, list[Any]]] = []
        for doc in docs:
            found = _classify(run, doc)
            if found == "test":
                tests.append(doc)
            elif found is not None:
                rule_docs.append((doc, *found))
        if rule_docs:
            _import_file(run, rule_docs)
    for doc in tests:
        _import_test(run, doc)
    run.result.services.extend(
        _finish(s) for s in run.services.values() if s.recordings or s.alerts
    )
    return run.result


def _load_inputs(files: Sequence[Path]) -> list[list[_Doc]]:
    """The documents of every file; ``SpecError`` with every file that cannot be read."""
    documents: list[list[_Doc]] = []
    problems = []
    for path in files:
        shown = display(path)
        try:
            documents.append([_Doc(shown, path, d) for d in _load_all(path, shown)])
        except LoadError as exc:
            problems.append(exc.diagnostic)
    if problems:
        raise SpecError(problems)
    return documents


def _load_all(path: Path, shown: str) -> list[LoadedDocument]:
    """Each YAML document of the file, its positions those of the whole file.

    Why: the guarded loader reads one document; a file of several (``---``) is read one
    document at a time, the other lines blanked, so every line number stays the file's.
    """
    text = read_source(path, shown)
    lines = text.splitlines(keepends=True)
    starts = [0] + [i for i, line in enumerate(lines) if _DOC_MARK.match(line) and i > 0]
    out = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        body = ["\n" if line.startswith("...") and _DOC_MARK.match(line) else line
                for line in lines[start:end]]  # fmt: skip
        if not any(_content(line) for line in body):
            continue
        out.append(load_text("\n" * start + "".join(body), shown))
    if not out:
        out.append(load_text(text, shown))  # empty: the loader's own message
    return out


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#") and not _DOC_MARK.match(stripped)


def _classify(run: _Run, doc: _Doc) -> str | tuple[PathKey, list[Any]] | None:
    """``"test"``, the path and list of a document's rule groups, or ``None`` (refused)."""
    data = doc.loaded.data
    if not isinstance(data, dict):
        run.refuse(doc, (), "not a rule file, PrometheusRule or promtool test file (no mapping)")
        return None
    if "rule_files" in data:
        return "test"
    if "kind" in data or "apiVersion" in data:
        return _prometheus_rule(run, doc, data)
    unknown = [k for k in data if k != "groups"]
    for key in unknown:
        run.refuse(doc, (key,), "unknown field of a rule file (it holds only `groups`)", key=True)
    if "groups" not in data:
        run.refuse(doc, (), "not a rule file (no `groups`), PrometheusRule or promtool test file")
        return None
    if not isinstance(data["groups"], list):
        run.refuse(doc, ("groups",), "must be a list of rule groups")
        return None
    return ("groups",), data["groups"]


def _prometheus_rule(
    run: _Run, doc: _Doc, data: dict[str, Any]
) -> tuple[PathKey, list[Any]] | None:
    """A ``monitoring.coreos.com/v1`` ``PrometheusRule``: its ``spec.groups``."""
    if data.get("apiVersion") != "monitoring.coreos.com/v1" or data.get("kind") != "PrometheusRule":
        got = f"{data.get('apiVersion')!s}/{data.get('kind')!s}"
        run.refuse(doc, (), f"not a PrometheusRule of monitoring.coreos.com/v1 (got {got})")
        return None
    ok = True
    for key in data:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            run.refuse(doc, (key,), "unknown field of a PrometheusRule", key=True)
            ok = False
    spec = data.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("groups"), list):
        run.refuse(doc, ("spec",), "a PrometheusRule needs spec.groups, a list of rule groups")
        return None
    for key in spec:
        if key != "groups":
            run.refuse(doc, ("spec", key), "unknown field of a PrometheusRule's spec", key=True)
            ok = False
    metadata = data.get("metadata", {})
    if not isinstance(metadata, dict):
        run.refuse(doc, ("metadata",), "must be a mapping")
        return None
    for key in metadata:
        if key not in METADATA_KEYS:
            run.refuse(doc, ("metadata", key), "unknown field of an object's metadata", key=True)
            ok = False
    return (("spec", "groups"), spec["groups"]) if ok else None


def _service_of(run: _Run, docs: list[tuple[_Doc, PathKey, list[Any]]]) -> tuple[str, str]:
    """The service of one file's rules and how it was chosen (the comment above ``service``)."""
    if run.options.service:
        return run.options.service, "service: from --service"
    found = set()
    for _doc, _where, groups in docs:
        for group in groups:
            rules = group.get("rules") if isinstance(group, dict) else None
            for rule in rules if isinstance(rules, list) else ():
                labels = rule.get("labels") if isinstance(rule, dict) else None
                if isinstance(labels, dict) and isinstance(labels.get("service"), str):
                    found.add(labels["service"])
    name = next(iter(found)) if len(found) == 1 else ""
    if name and re.match(SERVICE_NAME, name) and len(name) <= 63:
        return name, "service: from the rules' service label"
    stem = docs[0][0].path.name.split(".")[0]
    return sanitise(stem), f"service: from the file name {stem!r} (no --service, no service label)"


def sanitise(stem: str) -> str:
    """A file stem as a service name: lower case, runs of other characters as one ``-``."""
    name = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:63].strip("-")
    return name or "imported"


def _import_file(run: _Run, docs: list[tuple[_Doc, PathKey, list[Any]]]) -> None:
    name, how = _service_of(run, docs)
    service = run.services.setdefault(name, _Service(name, how))
    first = docs[0][0]
    run.file_service[os.path.realpath(first.path)] = name
    if first.file not in service.sources:
        service.sources.append(first.file)
    for doc, where, groups in docs:
        if where == ("spec", "groups"):
            _operator(run, service, doc)
        for index, group in enumerate(groups):
            _import_group(run, service, doc, (*where, index), group)


def _operator(run: _Run, service: _Service, doc: _Doc) -> None:
    """A PrometheusRule's namespace and labels → ``targets.operator``; the rest is noted."""
    metadata = doc.loaded.data.get("metadata") or {}
    mapped: dict[str, Any] = {}
    if isinstance(metadata.get("namespace"), str):
        mapped["namespace"] = metadata["namespace"]
    labels = metadata.get("labels")
    if isinstance(labels, dict) and labels:
        mapped["labels"] = {str(k): str(v) for k, v in labels.items()}
    if service.operator is None:
        service.operator = mapped
    elif mapped != service.operator:
        run.adapt(doc, ("metadata",), "namespace and labels differ from the first "
                  "PrometheusRule of this service; the first's are kept in "
                  "targets.operator")  # fmt: skip
    for key in metadata:
        if key not in ("namespace", "labels"):
            run.adapt(doc, ("metadata", key), "not kept (rulegen names the PrometheusRule after "
                      "the service; `--target operator` writes it)", key=True)  # fmt: skip


def _import_group(run: _Run, service: _Service, doc: _Doc, where: PathKey, group: Any) -> None:
    if not isinstance(group, dict):
        run.refuse(doc, where, "a rule group must be a mapping")
        return
    name = group.get("name")
    if not isinstance(name, str) or not name.strip():
        run.refuse(doc, (*where, "name"), "a rule group needs a name")
        return
    interval = group.get("interval")
    rules = group.get("rules")
    group_labels = group.get("labels") or {}
    if _group_refused(run, doc, where, group, name):
        return
    if interval is not None and _duration(interval) is None:
        run.refuse(doc, (*where, "interval"), f"group {name}: not a duration ({interval!r})")
        return
    if not isinstance(rules, list):
        run.refuse(doc, (*where, "rules"), f"group {name}: needs `rules`, a list")
        return
    if not isinstance(group_labels, dict):
        run.refuse(doc, (*where, "labels"), f"group {name}: labels must be a mapping")
        return
    kept = sum(
        _import_rule(run, service, doc, (*where, "rules", i), rule, name, group_labels)
        for i, rule in enumerate(rules)
    )
    if not kept:
        return
    if group_labels:
        run.adapt(doc, (*where, "labels"), f"group {name}: the group's labels are written into "
                  "each of its rules (the rule's own win, as in Prometheus)", key=True)  # fmt: skip
    service.groups[name] = {} if interval is None else {"interval": _duration_text(interval)}
    service.group_at[name] = f"{doc.file}:{doc.line(where)}"
    if interval is None:
        service.group_comments[name] = (
            f"{name}: no interval in the source; rulegen uses the spec's evaluation_interval"
        )


def _group_refused(run: _Run, doc: _Doc, where: PathKey, group: dict[str, Any], name: str) -> bool:
    """Whether the group's own fields keep its rules out (each reason noted)."""
    refused = False
    for key in group:
        if key not in GROUP_KEYS:
            run.refuse(doc, (*where, key), f"group {name}: unknown field of a rule group; "
                       "its rules are not imported", key=True)  # fmt: skip
            refused = True
    for key, what in (("limit", "rulegen's rule groups have no limit"),
                      ("query_offset", "rulegen's rule groups have no query offset")):  # fmt: skip
        if key in group and group[key] not in (0, "0", "0s", None):
            run.refuse(doc, (*where, key), f"group {name}: {what}; its rules are not imported "
                       "(remove the field to import them)", key=True)  # fmt: skip
            refused = True
        elif key in group:
            run.adapt(doc, (*where, key), f"group {name}: {group[key]!r} is the default; dropped",
                      key=True)  # fmt: skip
    owner = next((s for s in run.services.values() if name in s.groups), None)
    if owner is not None and not refused:
        run.refuse(doc, (*where, "name"), f"group {name}: a group of this name is already "
                   f"imported into service {owner.name} ({owner.group_at[name]}); rule group "
                   "names are unique across a build")  # fmt: skip
        refused = True
    return refused


def _duration(value: Any) -> int | None:
    """Whole milliseconds of a Prometheus duration, or ``None``."""
    if value in (0, "0"):
        return 0
    if not isinstance(value, str):
        return None
    try:
        return int(units.parse_duration(value) * 1000)
    except ValueError:
        return None


def _duration_text(value: Any) -> str:
    return "0s" if value in (0, "0") else str(value)


Problem = tuple[PathKey, str, bool]  # where, why, whether the key (not the value) is meant


def _import_rule(
    run: _Run, service: _Service, doc: _Doc, where: PathKey, rule: Any, group: str,
    group_labels: dict[str, Any],
) -> int:  # fmt: skip
    """1 when the rule is imported, else 0 (and why, in ``refused``)."""
    if not isinstance(rule, dict):
        run.refuse(doc, where, f"group {group}: a rule must be a mapping")
        return 0
    alert, record = rule.get("alert"), rule.get("record")
    what = f"alert {alert}" if alert is not None else f"record {record}"
    problems = _shape_problems(rule, where, what)
    expr = rule.get("expr")
    expr = str(expr) if isinstance(expr, int | float) and not isinstance(expr, bool) else expr
    problems.extend(_expr_problems(expr, alert is not None, where, what))
    labels, label_problems = _labels(rule.get("labels"), group_labels, where, what, service.name)
    problems.extend(label_problems)
    annotations, more = _texts(rule.get("annotations"), (*where, "annotations"), what)
    problems.extend(more)
    problems.extend(run.templates.get((id(doc), where), ()))
    level = str(labels.get("severity", run.options.severity))
    if alert is not None and not problems and (earlier := service.alert_at.get((alert, level))):
        problems.append(((*where, "alert"), f"{what}: an alert of this name and severity "
                         f"{level} is already imported into service {service.name} "
                         f"({earlier}); rulegen's custom alerts share a name only with "
                         "another severity", False))  # fmt: skip
    severity = None
    if alert is not None and not problems:
        severity, severity_problem = _severity(run, doc, where, labels, what)
        problems.extend([severity_problem] if severity_problem else [])
    for place, text, key in problems:
        run.refuse(doc, place, text, key=key)
    if problems:
        return 0
    if "service" in labels:
        run.adapt(doc, (*where, "labels", "service"), f"{what}: the service label is dropped: "
                  "rulegen adds the same one", key=True)  # fmt: skip
        del labels["service"]
    at = f"{doc.file}:{doc.line(where)}"
    entry: dict[str, Any] = {"record": record} if record is not None else {
        "signal": "custom", "name": alert
    }  # fmt: skip
    entry["expr"] = str(expr).strip()
    if record is not None:
        entry.update({"labels": labels} if labels else {})
        entry["group"] = group
        service.recordings.append(entry)
        run.result.imported.append(f"record {record} ({at})")
        return 1
    entry.update({k: _duration_text(rule[k]) for k in ("for", "keep_firing_for") if k in rule})
    entry["severity"] = severity
    labels.pop("severity", None)
    entry.update({"labels": labels} if labels else {})
    entry["annotations"] = annotations
    entry["group"] = group
    had_severity = "severity" in {**group_labels, **rule.get("labels", {})}
    _add_alert(service, entry, had_severity=had_severity)
    _declare(run, service, doc, where, str(severity), what, labelled=had_severity)
    run.result.imported.append(f"{alert} ({at})")
    service.alert_at[(str(alert), str(severity))] = at
    return 1


def _declare(
    run: _Run, service: _Service, doc: _Doc, where: PathKey, severity: str, what: str,
    *, labelled: bool,
) -> None:  # fmt: skip
    """A severity outside rulegen's default ones goes into the spec's ``severities:``, noted
    once per service where it is first met."""
    if severity in SEVERITIES or severity in service.severities:
        return
    place = (*where, "labels", "severity") if labelled else (*where, "labels")
    service.severities[severity] = f"{doc.file}:{doc.line(place, key=not labelled)}"
    run.adapt(doc, place, f"{what}: severity {severity!r} is not one of rulegen's default "
              f"severities ({', '.join(SEVERITIES)}); the spec declares it in `severities:`, "
              "after them (docs/migrating.md#severities)", key=not labelled)  # fmt: skip


def _add_alert(service: _Service, entry: dict[str, Any], *, had_severity: bool) -> None:
    """The alert into the service, with the labels rulegen will add that it did not have."""
    name = str(entry["name"])
    added = {"service": service.name}
    if not had_severity:
        index = len(service.alerts)
        service.comments[("alerts", index, "severity")] = (
            "severity: from --severity (the rule had no severity label)"
        )
        added["severity"] = str(entry["severity"])
    if name in service.added:  # a warning/critical pair: only what both alerts gain
        added = {k: v for k, v in added.items() if service.added[name].get(k) == v}
    service.added[name] = added
    service.alerts.append(entry)


def _shape_problems(rule: dict[str, Any], where: PathKey, what: str) -> list[Problem]:
    """Unknown fields, a missing or double kind, a name rulegen or Prometheus refuses,
    durations that do not parse or are past rulegen's limit."""
    alert, record = rule.get("alert"), rule.get("record")
    problems: list[Problem] = []
    for key in rule:
        if key not in RULE_KEYS or (key in ("for", "keep_firing_for", "annotations") and record):
            problems.append(((*where, key), f"{what}: not a field of a"
                             f"{'' if record is None else ' recording'} rule", True))  # fmt: skip
    if (alert is None) == (record is None):
        problems.append((where, "a rule needs exactly one of `alert` and `record`", False))
    elif alert is not None and not (isinstance(alert, str) and re.match(ALERT_NAME, alert)):
        problems.append(((*where, "alert"), f"alert name {alert!r} is not one rulegen accepts "
                         "([A-Za-z_][A-Za-z0-9_]*)", False))  # fmt: skip
    elif record is not None and not (isinstance(record, str) and _METRIC_NAME.match(record)):
        problems.append(((*where, "record"), f"record {record!r} is not a metric name", False))
    for key in ("for", "keep_firing_for"):
        if key not in rule or record is not None:
            continue
        ms = _duration(rule[key])
        if ms is None:
            problems.append(((*where, key), f"{what}: not a duration ({rule[key]!r})", False))
        elif ms > MAX_FOR * 1000:
            problems.append(((*where, key), f"{what}: {rule[key]} is longer than rulegen's "
                             f"limit of 365d on `{key}`", False))  # fmt: skip
    return problems


def _expr_problems(expr: Any, alert: bool, where: PathKey, what: str) -> list[Problem]:
    if not isinstance(expr, str) or not expr.strip():
        return [((*where, "expr"), f"{what}: needs `expr`, a PromQL expression", False)]
    if (error := promql.syntax_error(expr)) is not None:
        return [((*where, "expr"), f"{what}: invalid PromQL: {error}", False)]
    if alert and (kind := promql.result_type(expr)) != "vector":
        return [((*where, "expr"), f"{what}: returns a {kind}, not an instant vector "
                 "(rulegen's alerts must)", False)]  # fmt: skip
    return []


def _severity(
    run: _Run, doc: _Doc, where: PathKey, labels: dict[str, str], what: str
) -> tuple[str | None, tuple[PathKey, str, bool] | None]:
    value = labels.get("severity")
    if value is None:
        if run.options.severity is None:
            return None, ((*where, "labels"), f"{what}: no severity label; rulegen needs one of "
                          f"{', '.join(SEVERITIES)} (add the label, or import with --severity "
                          "LEVEL)", False)  # fmt: skip
        run.adapt(doc, (*where, "labels"), f"{what}: no severity label; severity "
                  f"{run.options.severity} from --severity", key=True)  # fmt: skip
        return run.options.severity, None
    if not SEVERITY_NAME.match(value):
        return None, ((*where, "labels", "severity"), f"{what}: severity {value!r} is not a "
                      f"name rulegen can declare ({SEVERITY_TEXT}); change the label in the "
                      "source and import again", False)  # fmt: skip
    return value, None


def _labels(
    raw: Any, group_labels: dict[str, Any], where: PathKey, what: str, service: str
) -> tuple[dict[str, str], list[tuple[PathKey, str, bool]]]:
    """The rule's labels over its group's, as strings; and what cannot be taken."""
    problems: list[tuple[PathKey, str, bool]] = []
    if raw is not None and not isinstance(raw, dict):
        return {}, [((*where, "labels"), f"{what}: labels must be a mapping", False)]
    merged = {**group_labels, **(raw or {})}
    labels: dict[str, str] = {}
    for name, value in merged.items():
        at = (*where, "labels", name)
        if not promql.LABEL_NAME.match(name) or name.startswith("__"):
            problems.append((at, f"{what}: label name {name!r} is not one rulegen accepts", True))
        elif name in RESERVED_LABELS and not what.startswith("record"):
            problems.append((at, f"{what}: the label {name} is Prometheus' own", True))
        elif not isinstance(value, str | int | bool) and value is not None:
            problems.append((at, f"{what}: label {name}: not a text value", False))
        else:
            labels[name] = _text(value)
    if labels.get("service", service) != service:
        problems.append(((*where, "labels", "service"), f"{what}: its service label "
                         f"{labels['service']!r} differs from the service {service!r}; rulegen "
                         "sets that label itself (import it with --service "
                         f"{labels['service']})", False))  # fmt: skip
    return labels, problems


def _texts(
    raw: Any, where: PathKey, what: str
) -> tuple[dict[str, str], list[tuple[PathKey, str, bool]]]:
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [(where, f"{what}: annotations must be a mapping", False)]
    problems = [
        ((*where, k), f"{what}: annotation {k}: not a text value", False)
        for k, v in raw.items()
        if not isinstance(v, str | int | bool) and v is not None
    ]
    return {k: _text(v) for k, v in raw.items()}, problems


def _text(value: Any) -> str:
    """A label or annotation value as Prometheus reads it (``true``, ``1``, ``""`` for null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _check_templates(run: _Run, documents: list[list[_Doc]]) -> None:
    """Every alert's annotation and label templates, checked at once by promtool as the
    build checks them; what it rejects becomes a problem of the alert (``run.templates``),
    at the annotation or label (the group's, when the alert has the label from there)."""
    found = [(doc, *alert) for docs in documents for doc in docs for alert in _alert_rules(doc)]
    rejected, unchecked = templates.check([texts for *_, texts in found])
    if unchecked is not None:
        run.result.warnings.append(
            f"the Go templates of the alerts' annotations and labels were not checked: "
            f"{unchecked} (rulegen build checks them)"
        )
    for problem in rejected:
        doc, group_where, where, rule, texts = found[problem.alert]
        own = rule.get(problem.field)
        at: PathKey = (*where, problem.field, problem.key)
        if problem.field == "labels" and not (isinstance(own, dict) and problem.key in own):
            at = (*group_where, "labels", problem.key)
        kind = "annotation" if problem.field == "annotations" else "label"
        text = (f"alert {texts.name}: {kind} {problem.key}: promtool check rules rejects its "
                f"Go template ({problem.message})")  # fmt: skip
        run.templates.setdefault((id(doc), where), []).append((at, text, False))


def _alert_rules(
    doc: _Doc,
) -> Iterator[tuple[PathKey, PathKey, dict[str, Any], templates.Alert]]:
    """Each alert rule of a document (its group's place, its own, the rule, its texts as
    ``_import_rule`` takes them), found where ``_classify`` finds rule groups; what is
    malformed is left to ``_import_rule`` to refuse."""
    data = doc.loaded.data
    if not isinstance(data, dict) or "rule_files" in data:
        return
    operator = "kind" in data or "apiVersion" in data
    spec = data.get("spec") if operator else data
    base: PathKey = ("spec", "groups") if operator else ("groups",)
    groups = spec.get("groups") if isinstance(spec, dict) else None
    for g, group in enumerate(groups if isinstance(groups, list) else ()):
        rules = group.get("rules") if isinstance(group, dict) else None
        shared = group.get("labels") if isinstance(group, dict) else None
        for r, rule in enumerate(rules if isinstance(rules, list) else ()):
            if not isinstance(rule, dict) or rule.get("alert") is None:
                continue
            where: PathKey = (*base, g, "rules", r)
            labels, _ = _labels(rule.get("labels"), shared if isinstance(shared, dict) else {},
                                where, "alert", "")  # fmt: skip
            annotations, _ = _texts(rule.get("annotations"), where, "alert")
            texts = templates.Alert(str(rule["alert"]), labels, annotations)
            yield (*base, g), where, rule, texts


def _finish(service: _Service) -> ImportedService:
    document: dict[str, Any] = {"version": 1, "service": service.name}
    comments: dict[tuple[str | int, ...], str] = {("service",): service.how}
    if service.severities:
        document["severities"] = [*SEVERITIES, *service.severities]
        first = ", ".join(f"{name} ({at})" for name, at in service.severities.items())
        comments[("severities",)] = (
            f"severities: rulegen's default ones, then those of the rule files: {first}.\n"
            "Most severe first; the first pages ({name: X, pages: true} for another). Move the "
            "list\ninto the defaults file your specs extend to share it "
            "(docs/migrating.md#severities)"
        )
    if service.operator:
        document["targets"] = {"operator": service.operator}
        comments[("targets",)] = "targets.operator: from the PrometheusRule's metadata"
    document["groups"] = service.groups
    for name, text in service.group_comments.items():
        comments[("groups", name)] = text
    if service.recordings:
        document["recordings"] = service.recordings
    if service.alerts:
        document["alerts"] = service.alerts
    comments.update(service.comments)
    return ImportedService(service.name, document, comments, list(service.sources))


# ---- promtool test files -------------------------------------------------------------------


def _import_test(run: _Run, doc: _Doc) -> None:
    """A promtool test file of imported rules: ``rule_files`` → the generated files, each
    expected alert's labels + the labels rulegen adds, each expected sample of an imported
    recording + ``service``."""
    data = dict(doc.loaded.data)
    for key in data:
        if key not in _TEST_KEYS:
            run.refuse(doc, (key,), "unknown field of a promtool test file; the file is not "
                       "imported", key=True)  # fmt: skip
            return
    entries = data.get("rule_files")
    if not isinstance(entries, list) or not entries:
        run.refuse(doc, ("rule_files",), "must be a list of rule files; the file is not imported")
        return
    services: list[str] = []
    for index, entry in enumerate(entries):
        found = _loads(run, doc, entry)
        if isinstance(found, str):
            run.refuse(doc, ("rule_files", index), f"{found}; the test file is not imported")
            return
        services.extend(s for s in found if s not in services)
    data["rule_files"] = [f"../prometheus/{s}.rules.yml" for s in services]
    wanted = [run.services[s] for s in services]
    alerts = {name: added for s in wanted for name, added in s.added.items()}
    records = {r["record"]: s.name for s in wanted for r in s.recordings}
    changed = _rewrite_tests(run, doc, data, alerts, records)
    if changed is None:
        return
    name = doc.path.name
    if any(t.name == name for t in run.result.user_tests):
        run.refuse(doc, (), f"another imported test file is named {name}; rename one")
        return
    text = render(data)
    run.result.user_tests.append(UserTest(name, text, doc.file))
    loads = ", ".join(data["rule_files"])
    run.adapt(doc, ("rule_files",), f"rule_files → {loads}; {changed}; comments are not kept",
              key=True)  # fmt: skip


def _loads(run: _Run, doc: _Doc, entry: Any) -> list[str] | str:
    """The services an entry of ``rule_files`` loads, or why it cannot be moved."""
    if not isinstance(entry, str):
        return "not a file name"
    base = doc.path.parent
    pattern = str(base / entry)
    paths = sorted(glob.glob(pattern)) if _GLOB.search(entry) else [pattern]  # noqa: PTH207  # a pattern relative to the test, as promtool reads it
    if not paths:
        return f"{entry} matches no file"
    found: list[str] = []
    for path in paths:
        service = run.file_service.get(os.path.realpath(path))
        if service is None:
            return f"{entry} is not among the imported rule files (import it too)"
        if service not in run.services or not (
            run.services[service].alerts or run.services[service].recordings
        ):
            return f"{entry}: none of its rules was imported"
        found.append(service)
    return found


def _rewrite_tests(
    run: _Run, doc: _Doc, data: dict[str, Any], alerts: dict[str, dict[str, str]],
    records: dict[str, str],
) -> str | None:  # fmt: skip
    """Add the labels rulegen adds to the expectations; ``None`` when the file cannot move."""
    tests = data.get("tests") or []
    if not isinstance(tests, list):
        run.refuse(doc, ("tests",), "must be a list; the file is not imported")
        return None
    counts = [0, 0]
    for t, test in enumerate(tests):
        if not isinstance(test, dict):
            continue
        for c, case in enumerate(_mappings(test.get("alert_rule_test"))):
            name = case.get("alertname")
            if name not in alerts:
                where = ("tests", t, "alert_rule_test", c, "alertname")
                run.refuse(doc, where, f"alert {name} was not imported (see above); the test "
                           "file is not imported")  # fmt: skip
                return None
            for expected in _mappings(case.get("exp_alerts")):
                expected["exp_labels"] = {**(expected.get("exp_labels") or {}), **alerts[name]}
                counts[0] += 1
        for case in _mappings(test.get("promql_expr_test")):
            for sample in _mappings(case.get("exp_samples")):
                rewritten = _with_service(sample.get("labels"), records)
                if rewritten is not None:
                    sample["labels"] = rewritten
                    counts[1] += 1
    # --severity is named only when it was given (else the severities are the rules' own)
    added = "service, and severity from --severity" if run.options.severity else "service, severity"
    return (
        f"the labels rulegen adds ({added}) written into {counts[0]} expected alert(s) and "
        f"`service` into {counts[1]} expected sample(s) of imported recordings"
    )


def _mappings(items: Any) -> list[dict[str, Any]]:
    """The mappings of a list (a test file is checked by promtool, not here)."""
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _with_service(labels: Any, records: dict[str, str]) -> str | None:
    """``name{a="b"}`` of an imported recording, with its ``service``; else ``None``."""
    if not isinstance(labels, str):
        return None
    try:
        parsed = promql_parser.parse(labels)
    except (ValueError, RuntimeError):
        return None
    if not isinstance(parsed, promql_parser.VectorSelector) or parsed.name not in records:
        return None
    matchers = parsed.matchers.matchers
    if any(m.name == "service" for m in matchers):
        return None
    pairs = [f"{m.name}={promql.quote(m.value)}" for m in matchers]
    pairs.append(f"service={promql.quote(records[parsed.name])}")
    return f"{parsed.name}{{{', '.join(pairs)}}}"
