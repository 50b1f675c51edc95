"""The documentation is checked like code: every YAML example builds, every link resolves.

Every fenced YAML block in README.md and docs/ names what it is in its info string, and is
checked accordingly:

- ```` ```yaml spec ````: a whole service spec, built as ``specs/docs-example.yaml``;
- ```` ```yaml alerts ````, ``slos``, ``diagnoses``, ``targets``: part of a service spec, either
  top-level keys (one of them the kind's key) or a bare list of that key's entries; merged over
  a minimal spec (``version: 1``, ``service: docs-example``) and built (``targets`` with
  ``--target operator --target thanos --target mimir``);
- ```` ```yaml routing ````: a whole routing file, built beside a minimal service spec; its
  ``base:`` may be ``alertmanager/base.yml`` (the example's base file is there);
- ```` ```yaml signal ````: a signal definition, written to ``signals/`` and built with one
  alert on it;
- ```` ```yaml defaults ````: a defaults file, written as ``specs/defaults.yaml`` and built
  under a minimal spec that extends it (one alert entry, ``signal`` only, per signal it has
  alert defaults for; one SLO when it has SLO defaults); a ``spec`` block after it on the same
  page that says ``extends: defaults.yaml`` is built with it;
- ```` ```yaml ci ````, ``pre-commit``, ``output`` (an excerpt of a generated file),
  ``alertmanager`` (an Alertmanager config), ``prometheus`` (a ``prometheus.yml``) and
  ``promtool-test``: not specs; each must parse as YAML.

Python blocks must parse too.

Every build is the real ``rulegen build --no-validate`` in a temporary folder that holds the
repository's ``signals/`` (except for ``signal`` blocks), and must exit 0. A YAML block with
no kind, or an unknown one, fails: no example goes unchecked.

Relative links and their anchors must resolve, and every path into the code a page names
(``rulegen/…``, ``tests/…``) must exist. The signal catalog table in docs/signals.md must
equal ``python -m rulegen.catalog`` (``--update-golden`` rewrites it), every lint check id has
its page under docs/checks/, and an offline check's page shows what ``rulegen lint`` really
prints for its example spec.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, CliResult, write_tree

from rulegen.catalog import load_catalog
from rulegen.catalog.table import BEGIN, END, render_table

Cli = Callable[..., CliResult]

PAGES = sorted(
    [
        *(REPO / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")),
        *(REPO / "docs").rglob("*.md"),
    ]
)
SPEC_PARTS = ("alerts", "slos", "diagnoses", "targets")
BUILT = ("spec", *SPEC_PARTS, "routing", "signal", "defaults")
PARSED = ("ci", "pre-commit", "output", "alertmanager", "prometheus", "promtool-test")
BASE_ALERT = {
    "signal": "custom",
    "name": "DocsExampleUp",
    "expr": 'up{job="docs"} == 0',
    "severity": "warning",
}
THRESHOLD_BY_UNIT = {"percent": "50%", "duration": "1s", "number": "10", "bandwidth": "1Gbps"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its info string and its text."""

    page: Path
    line: int
    end: int
    info: tuple[str, ...]
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def fenced_blocks(page: Path) -> Iterator[Block]:
    """Every fenced block of a markdown page (fences may be indented, inside list items)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            closing = FENCE.match(lines[end])
            if (
                closing is not None
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                break
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            end += 1
        yield Block(
            page, index + 1, end + 1, tuple(opening["info"].split()), "\n".join(body) + "\n"
        )
        index = end + 1


def yaml_blocks() -> list[Block]:
    return [
        block
        for page in PAGES
        if page.exists()
        for block in fenced_blocks(page)
        if block.info and block.info[0] in ("yaml", "yml")
    ]


YAML_BLOCKS = yaml_blocks()


def test_there_are_yaml_examples_to_check() -> None:
    assert len(YAML_BLOCKS) > 20


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.where for b in YAML_BLOCKS])
def test_every_yaml_block_names_its_kind(block: Block) -> None:
    known = (*BUILT, *PARSED)
    assert block.info[1:] in [(kind,) for kind in known], (
        f"{block.where}: write ```yaml KIND, KIND one of {', '.join(known)} "
        f"(got {' '.join(block.info)!r}); see tests/test_docs.py"
    )


def _minimal_spec(**keys: Any) -> str:
    spec: dict[str, Any] = {"version": 1, "service": "docs-example", **keys}
    if not any(key in spec for key in ("alerts", "slos", "diagnoses")):
        spec["alerts"] = [BASE_ALERT]
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)


def _extending(block: Block) -> str:
    """A minimal spec that extends the defaults file ``block`` and uses all of it."""
    defaults = yaml.safe_load(block.text)["defaults"]
    alerts: list[dict[str, Any]] = [BASE_ALERT]
    alerts += [{"signal": s} for s in defaults.get("alerts", {}) if s != "custom"]
    keys: dict[str, Any] = {"extends": "defaults.yaml", "alerts": alerts}
    if "slos" in defaults:
        sli = {"ratio": {"errors": "docs_errors_total", "total": "docs_requests_total"}}
        keys["slos"] = [{"name": "docs", "objective": "99.9%", "sli": sli}]
    return _minimal_spec(**keys)


def _tree(block: Block, kind: str) -> tuple[dict[str, str], list[str]]:
    """The files the block becomes and the extra ``build`` arguments."""
    if kind == "spec":
        files = {"specs/docs-example.yaml": block.text}
        if "extends" in yaml.safe_load(block.text):
            before = [b for b in fenced_blocks(block.page) if b.line < block.line]
            shared = [b for b in before if b.info == ("yaml", "defaults")]
            assert shared, f"{block.where}: extends: needs a ```yaml defaults block before it"
            files["specs/defaults.yaml"] = shared[-1].text
        return files, []
    if kind == "defaults":
        return {"specs/defaults.yaml": block.text, "specs/docs-example.yaml": _extending(block)}, []
    if kind == "routing":
        base = (REPO / "specs/alertmanager/base.yml").read_text(encoding="utf-8")
        return {
            "specs/routing.yaml": block.text,
            "specs/alertmanager/base.yml": base,
            "specs/docs-example.yaml": _minimal_spec(labels={"team": "docs"}),
        }, []
    if kind == "signal":
        signal = yaml.safe_load(block.text)
        alert = {
            "signal": signal["signal"],
            "threshold": THRESHOLD_BY_UNIT[signal["threshold"]["unit"]],
            "severity": "warning",
        }
        return {
            "signals/docs_signal.yaml": block.text,
            "specs/docs-example.yaml": _minimal_spec(alerts=[alert]),
        }, []
    data = yaml.safe_load(block.text)
    if isinstance(data, list):
        data = {kind: data}
    assert isinstance(data, dict), f"{block.where}: a mapping of spec keys, or a list"
    assert kind in data, (
        f"{block.where}: a ```yaml {kind} block holds `{kind}:` (with other top-level keys "
        f"if needed) or a list of {kind} entries"
    )
    targets = ["--target", "operator", "--target", "thanos", "--target", "mimir"]
    return {"specs/docs-example.yaml": _minimal_spec(**data)}, targets if kind == "targets" else []


BUILT_BLOCKS = [b for b in YAML_BLOCKS if b.info[1:] and b.info[1] in BUILT]
PARSED_BLOCKS = [b for b in YAML_BLOCKS if b.info[1:] and b.info[1] in PARSED]


@pytest.mark.parametrize(
    "block", BUILT_BLOCKS, ids=[f"{b.where} {b.info[1]} builds" for b in BUILT_BLOCKS]
)
def test_spec_examples_build(block: Block, cli: Cli, in_tmp: Path) -> None:
    kind = block.info[1]
    files, extra = _tree(block, kind)
    if kind != "signal":
        shutil.copytree(REPO / "signals", in_tmp / "signals")
    write_tree(in_tmp, files)
    result = cli("build", "--no-validate", *extra)
    shown = "\n".join(f"--- {name}\n{text}" for name, text in files.items())
    assert result.code == 0, f"{block.where}: the example does not build:\n{result.err}\n{shown}"


@pytest.mark.parametrize(
    "block", PARSED_BLOCKS, ids=[f"{b.where} {b.info[1]} parses" for b in PARSED_BLOCKS]
)
def test_other_yaml_examples_parse(block: Block) -> None:
    assert yaml.safe_load(block.text) is not None, f"{block.where}: empty YAML block"


def lint_examples() -> list[tuple[Block, Block]]:
    """(spec, finding) pairs of the offline check pages: a ```yaml spec block followed by a
    plain block of ``specs/web.yaml:…`` lines, what ``rulegen lint`` prints for it."""
    pairs = []
    for page in sorted((REPO / "docs/checks").rglob("*.md")):
        if "**Offline.**" not in page.read_text(encoding="utf-8"):
            continue
        blocks = list(fenced_blocks(page))
        for spec, finding in zip(blocks, blocks[1:], strict=False):
            if spec.info == ("yaml", "spec") and not finding.info:
                assert finding.text.startswith("specs/web.yaml:"), finding.where
                pairs.append((spec, finding))
    return pairs


LINT_EXAMPLES = lint_examples()


@pytest.mark.parametrize(
    ("spec", "finding"), LINT_EXAMPLES, ids=[f"{s.where} lints as shown" for s, _ in LINT_EXAMPLES]
)
def test_check_pages_show_the_real_finding(
    spec: Block, finding: Block, cli: Cli, in_tmp: Path
) -> None:
    """A page shows its own check's findings (a small example may also read metrics with no
    matcher: ``selector/unscoped``, its own page, says so on every such spec)."""
    write_tree(in_tmp, {"specs/web.yaml": spec.text})
    result = cli("lint")
    check = "/".join(spec.page.relative_to(REPO / "docs/checks").with_suffix("").parts)
    own = [line for line in result.out.splitlines(keepends=True) if f"[{check}]" in line]
    assert "".join(own) == finding.text, f"{finding.where}: rulegen lint prints another finding"


PYTHON_BLOCKS = [
    block
    for page in PAGES
    if page.exists()
    for block in fenced_blocks(page)
    if block.info[:1] == ("python",)
]


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_python_examples_parse(block: Block) -> None:
    ast.parse(block.text, filename=block.where)


# --- links ---------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?:[^\]`]|`[^`]*`)*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<title>.+?)\s*#*\s*$")


def _without_fences(page: Path) -> str:
    """The page without its fenced blocks (fences included)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    fenced = {n for block in fenced_blocks(page) for n in range(block.line - 1, block.end)}
    return "\n".join(line for n, line in enumerate(lines) if n not in fenced)


def _prose(page: Path) -> str:
    """The page without fenced blocks and inline code spans (links there are not links)."""
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", _without_fences(page))


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in _without_fences(page).splitlines():
        heading = HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading["title"])
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links() -> list[tuple[Path, str]]:
    return [
        (page, match["target"])
        for page in PAGES
        if page.exists()
        for match in LINK.finditer(_prose(page))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", match["target"])
    ]


LINKS = links()


@pytest.mark.parametrize(
    ("page", "target"), LINKS, ids=[f"{p.relative_to(REPO)} -> {t}" for p, t in LINKS]
)
def test_relative_links_resolve(page: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    assert resolved.exists(), f"{page.relative_to(REPO)}: {target}: no such file"
    if anchor and resolved.suffix == ".md":
        assert anchor in anchors(resolved), (
            f"{page.relative_to(REPO)}: {target}: no heading with anchor #{anchor} "
            f"(known: {', '.join(sorted(anchors(resolved)))})"
        )


CODE_PATH = re.compile(r"(?:src/rulegen|rulegen|tests|benchmarks|\.ci)/[\w./-]*")


def code_paths() -> list[tuple[Path, str]]:
    """Paths into the code named in code spans (no placeholders such as ``<service>``)."""
    return sorted(
        {
            (page, span)
            for page in PAGES
            if page.exists()
            for span in re.findall(r"`([^`\n]+)`", _without_fences(page))
            if CODE_PATH.fullmatch(span)
        }
    )


CODE_PATHS = code_paths()


@pytest.mark.parametrize(
    ("page", "path"), CODE_PATHS, ids=[f"{p.relative_to(REPO)} names {t}" for p, t in CODE_PATHS]
)
def test_paths_named_in_the_docs_exist(page: Path, path: str) -> None:
    """Files move (``rulegen/spec/loader.py`` became ``rulegen/source/loader.py``): a page
    that names a module, test or script must follow."""
    real = REPO / "src" / path if path.startswith("rulegen/") else REPO / path
    assert real.exists(), f"{page.relative_to(REPO)}: `{path}` does not exist"


def test_slugs_follow_github() -> None:
    assert slug("Fleets: build speed and memory") == "fleets-build-speed-and-memory"
    assert slug("`--check`") == "--check"
    assert slug("Other rule engines: Prometheus Operator, Thanos Ruler, Mimir") == (
        "other-rule-engines-prometheus-operator-thanos-ruler-mimir"
    )


# --- generated and per-id pages ------------------------------------------------------------


def test_signal_table_is_generated_from_the_catalog(update_golden: bool) -> None:
    page = REPO / "docs/signals.md"
    text = page.read_text(encoding="utf-8")
    assert (text.count(BEGIN), text.count(END)) == (1, 1), f"{page}: {BEGIN} … {END} markers"
    head, rest = text.split(BEGIN)
    body, tail = rest.split(END)
    table = render_table(load_catalog())
    if update_golden:
        page.write_text(f"{head}{BEGIN}\n{table}{END}{tail}", encoding="utf-8")
        return
    assert body == f"\n{table}", (
        "docs/signals.md: the signal table is stale; run `python -m rulegen.catalog` and paste "
        "its output between the markers (or pytest tests/test_docs.py --update-golden)"
    )


def test_a_metric_no_exporter_provides_says_where_it_comes_from() -> None:
    """The weight-loading signals' default metric is the example fleet's own: the page says
    so, what vLLM offers instead (no metric, a log line) and how to name another one."""
    page = (REPO / "docs/signals.md").read_text(encoding="utf-8")
    section = page.split("## The weight-loading metric", 1)[1].split("\n## ", 1)[0]
    signals = [s for s in load_catalog().signals.values() if s.family == "weights"]
    assert len(signals) == 2
    for signal in signals:
        assert f"`{signal.params['metric'].default}`" in section, signal.signal
        assert f"{signal.signal}: {{metric: " in section, signal.signal
    assert "no exporter provides it upstream" in section
    assert "vllm-versions.md" in section
    assert "Model loading took" in section


def lint_check_ids() -> set[str]:
    """Check ids (``area/name`` string literals) in the lint package's source."""
    ids: set[str] = set()
    for source in (REPO / "src/rulegen/lint").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and re.fullmatch(r"[a-z]+/[a-z]+(?:-[a-z]+)*", value):
                ids.add(value)
    return ids


def test_every_lint_check_has_its_page() -> None:
    ids = lint_check_ids()
    assert {"rate/window", "series/missing"} <= ids, "the check ids are no longer found"
    pages = {
        p.relative_to(REPO / "docs/checks").with_suffix("").as_posix()
        for p in (REPO / "docs/checks").rglob("*.md")
    }
    assert pages == ids, "docs/checks/<id>.md: one page per lint check id"
    index = (REPO / "docs/lint.md").read_text(encoding="utf-8")
    unlinked = sorted(i for i in ids if f"(checks/{i}.md)" not in index)
    assert not unlinked, f"docs/lint.md does not link to {unlinked}"
