"""Fuzzing: randomly broken specs end in exit 0 or 2 with one clean line per error, never a crash.

Valid specs (the example and a few small ones) are mutated at random: keys deleted or added,
values replaced by odd scalars, lists, mappings and unicode, list entries duplicated, signal
names swapped, units changed, parameters moved to other alerts, and the YAML text itself
truncated or spliced. ``rulegen build --no-validate`` and ``rulegen validate`` then run
in-process: ``run()`` must return (not raise) 0 or 2, agree with itself, and write nothing
when it fails.
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, example_spec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rulegen import cli
from rulegen.catalog import Catalog, load_catalog
from rulegen.cli import run

PathKey = tuple[str | int, ...]

SIGNAL_DIR = REPO / "signals"

SEEDS: dict[str, str] = {
    # the example with what it inherits from specs/defaults.yaml: a seed stands alone
    "llm-serving": yaml.safe_dump(example_spec(), allow_unicode=True, sort_keys=False),
    "minimal": """
version: 1
service: web
alerts:
  - signal: disk_await
    threshold: 5ms
    severity: warning
""",
    "custom": """
version: 1
service: api
labels: {team: platform}
runbook_url: https://runbooks.example.com/{alert}
alerts:
  - signal: custom
    name: ApiDown
    expr: 'up{job="api"} == 0'
    for: 2m
    severity: critical
    summary: '{labels.instance} down for {for}'
    description: 'value {value}'
""",
    "params": """
version: 1
service: llm
evaluation_interval: 15s
scrape_interval: 15s
selectors: {vllm: 'job="vllm"', node: 'job="node"'}
alerts:
  - signal: ttft_latency
    threshold: 500ms
    quantile: 0.95
    window: 10m
    buckets: [0.1, 0.25, 0.5, 1, 2.5]
    severity: critical
    matchers: 'model_name=~"llama.*"'
  - signal: network_saturation
    name: FrontendNicSaturated
    threshold: 80%
    link_speed: 25Gbps
    for: 10m
    severity: warning
  - signal: prefix_cache_hit_rate
    threshold: 30%
    severity: info
    labels: {team: inference}
""",
}

SIGNALS = [
    "custom",
    "cpu_iowait",
    "cpu_softirq",
    "disk_await",
    "disk_queue_depth",
    "disk_utilization",
    "e2e_latency",
    "gpu_underutilized",
    "grpc_errors",
    "kv_cache_usage",
    "network_drops",
    "network_saturation",
    "nvme_wear",
    "prefix_cache_hit_rate",
    "requests_waiting",
    "tcp_retransmits",
    "ttft_latency",
    "weight_loading_busy",
    "weight_loading_latency",
    "nvlink_utilization",
]

KEYS = [
    "version", "service", "labels", "runbook_url", "evaluation_interval", "scrape_interval",
    "selectors", "alerts", "signal", "name", "threshold", "for", "severity", "window",
    "matchers", "summary", "description", "expr", "quantile", "buckets", "metric",
    "link_speed", "bandwidth", "node", "vllm", "dcgm", "team", "severity", "__name__",
]  # fmt: skip

INTERESTING = [
    "", " ", "5ms", "5", "0", "-1", "80%", "150%", "0%", "100%", "0.5", "1e400", "1e-400",
    "nan", ".inf", "-.inf", "0s", "1ms", "1500ms", "5m", "1h30m", "52w", "5 minutes", "25Gbps",
    "0Gbps", "12.5GB/s", "fast", "yes", "null", "~", "custom", "warning", "critical", "info",
    "{{ $value }}", "{{", "}}", "{value}", "{labels.x}", "{labels.}", '{{ template "x" }}',
    'device="x"} or vector(1) #', 'job="node"', 'device=~"nvme.+"', 'a="b",', 'a=~"("',
    '__name__="up"', "up == 0", "max(up", "up[5m]", "https://x/{alert}", "ftp://x",
    "\t", "\n", "a\nb", "\x00", "\x85", "\u2028", "\ufeff", "\u202e", "💥", "é" * 70,
    "a" * 300, "-", "*", "&", "!!str", "%", "@", "`",
]  # fmt: skip

SPLICES = ["\t", ":", "{", "[", "- ", "&a ", "*a", '"', "'", "\ufeff", "<<: ", "? ", "|", "#"]
# Weighted towards edits that keep the structure, so most examples reach the semantic checks.
MUTATIONS = (
    "replace", "plausible", "plausible", "plausible", "unit", "unit", "signal", "signal",
    "move_param", "add_key", "delete", "duplicate", "wrap",
)  # fmt: skip
TEXT_MUTATIONS = ("none",) * 12 + ("truncate", "insert", "duplicate_line", "indent")
UNITS = ["", "ms", "s", "m", "h", "us", "µs", "%", "Gbps", "GB/s", "bps", "x", " ms", "e3", "y"]

# Characters that once crashed the loader or split a diagnostic (see FUZZ_REGRESSIONS).
NON_PRINTABLE = ["\x00", "\x01", "\x7f", "\ufffe"]


def odd_text() -> st.SearchStrategy[str]:
    """Short strings of letters, marks, symbols, controls, YAML syntax and line separators."""
    return st.text(
        alphabet=st.characters(
            codec="utf-8",
            categories=("L", "M", "N", "P", "S", "Z", "Cc", "Cf"),
            include_characters="{}[]:#&*!|>'\"%@`\t\n\r\x85\u2028\ufeff",
        ),
        max_size=16,
    )


def keys() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(KEYS), odd_text().filter(bool))


def values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**20), max_value=10**20),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(INTERESTING),
        odd_text(),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(keys(), inner, max_size=3),
        ),
        max_leaves=6,
    )


def _paths(node: Any, path: PathKey = ()) -> Iterator[PathKey]:
    """Every path below the root, parents before children."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key)
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*path, index)
            yield from _paths(value, (*path, index))


def _get(root: Any, path: PathKey) -> Any:
    node = root
    for part in path:
        node = node[part]
    return node


class Mutator:
    """Random edits of a parsed spec and of its YAML text, drawn from hypothesis."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.values = values()
        self.keys = keys()

    def mutate(self, data: Any) -> Any:
        """Apply one random edit to ``data`` (in place when possible); returns the result."""
        paths = list(_paths(data))
        if not paths:
            return self.draw(self.values)
        inside_alerts = [p for p in paths if p[:1] == ("alerts",) and len(p) >= 3]
        if inside_alerts and self.draw(st.integers(0, 9)) < 7:
            paths = inside_alerts
        kind = self.draw(st.sampled_from(MUTATIONS))
        getattr(self, f"_{kind}")(data, self.draw(st.sampled_from(paths)))
        return data

    def _delete(self, data: Any, path: PathKey) -> None:
        del _get(data, path[:-1])[path[-1]]

    def _replace(self, data: Any, path: PathKey) -> None:
        _get(data, path[:-1])[path[-1]] = self.draw(self.values)

    def _plausible(self, data: Any, path: PathKey) -> None:
        """A value of the kind a spec holds, often in the wrong place or unit."""
        _get(data, path[:-1])[path[-1]] = self.draw(st.sampled_from(INTERESTING))

    def _duplicate(self, data: Any, path: PathKey) -> None:
        parent, key = _get(data, path[:-1]), path[-1]
        if isinstance(parent, list) and isinstance(key, int):
            parent.insert(key, copy.deepcopy(parent[key]))

    def _wrap(self, data: Any, path: PathKey) -> None:
        parent, key = _get(data, path[:-1]), path[-1]
        parent[key] = [parent[key]] if self.draw(st.booleans()) else {"value": parent[key]}

    def _unit(self, data: Any, path: PathKey) -> None:
        parent, key = _get(data, path[:-1]), path[-1]
        value = parent[key]
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            number = re.match(r"^-?[0-9.]+", str(value))
            stem = number.group(0) if number else str(self.draw(st.integers(-5, 500)))
            parent[key] = stem + self.draw(st.sampled_from(UNITS))

    def _add_key(self, data: Any, path: PathKey) -> None:
        """A new key (often a known one) in the mapping at or around ``path``."""
        while path and not isinstance(_get(data, path), dict):
            path = path[:-1]
        target = _get(data, path)
        if isinstance(target, dict):
            target[self.draw(self.keys)] = self.draw(self.values)

    def _alert_at(self, data: Any, path: PathKey) -> dict[str, Any] | None:
        """The alert ``path`` points into, or a random alert."""
        alerts = data.get("alerts") if isinstance(data, dict) else None
        if not isinstance(alerts, list) or not alerts:
            return None
        index = path[1] if path[:1] == ("alerts",) and len(path) > 1 else None
        if not isinstance(index, int):
            index = self.draw(st.integers(0, len(alerts) - 1))
        alert = alerts[index]
        return alert if isinstance(alert, dict) else None

    def _signal(self, data: Any, path: PathKey) -> None:
        alert = self._alert_at(data, path)
        if alert is not None:
            known = self.draw(st.integers(0, 4)) > 0
            alert["signal"] = self.draw(st.sampled_from(SIGNALS) if known else odd_text())

    def _move_param(self, data: Any, path: PathKey) -> None:
        """Copy a key of one alert to another: a quantile onto disk_await, and so on."""
        source, dest = self._alert_at(data, path), self._alert_at(data, ())
        if source and dest is not None and dest is not source:
            name = self.draw(st.sampled_from(sorted(source)))
            dest[name] = copy.deepcopy(source[name])

    def mutate_text(self, text: str) -> str:
        """Sometimes break the YAML text itself: truncate, splice, re-indent."""
        kind = self.draw(st.sampled_from(TEXT_MUTATIONS))
        if kind == "none" or not text:
            return text
        at = self.draw(st.integers(0, len(text)))
        if kind == "truncate":
            return text[:at]
        if kind == "insert":
            pieces = [*SPLICES, *NON_PRINTABLE]
            return text[:at] + self.draw(st.sampled_from(pieces)) + text[at:]
        lines = text.splitlines(keepends=True)
        index = self.draw(st.integers(0, len(lines) - 1))
        if kind == "duplicate_line":
            lines.insert(index, lines[index])
        else:
            lines[index] = " " + lines[index]
        return "".join(lines)


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


def _run(*argv: str) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return Outcome(code, out.getvalue(), err.getvalue())


DIAGNOSTIC = re.compile(r"^specs/[ab]\.yaml:\d+:\d+: \S.*$")
SUMMARY = re.compile(r"^rulegen: (\d+) error\(s\); nothing written$")


def _check_error_output(outcome: Outcome) -> None:
    """Exit 2: one ``FILE:LINE:COL: ...`` line per error and the summary, or one usage line."""
    lines = outcome.err.removesuffix("\n").split("\n")
    assert "\r" not in outcome.err, outcome.err
    summary = SUMMARY.match(lines[-1])
    if summary is None:
        assert len(lines) == 1, outcome.err
        assert lines[0].startswith("rulegen: error: "), outcome.err
        return
    assert int(summary.group(1)) == len(lines) - 1, outcome.err
    for line in lines[:-1]:
        assert DIAGNOSTIC.match(line), line


def check_cli_on(files: dict[str, str]) -> None:
    """Write ``files`` to a fresh folder, run validate and build there, check the contract."""
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(Path(folder)):
        for name, text in files.items():
            Path(name).parent.mkdir(parents=True, exist_ok=True)
            Path(name).write_text(text, "utf-8")
        signals = ("--signals", str(SIGNAL_DIR))

        checked = _run("validate", "specs", *signals)
        built = _run("build", "--no-validate", "--out", "out", "specs", *signals)

        assert checked.code in (0, 2), checked
        assert built.code in (0, 2), built
        if checked.code == 2:
            _check_error_output(checked)
            assert checked.out == ""
            # anything validate rejects, build rejects too (build only adds test synthesis)
            assert built.code == 2, (checked, built)
        if built.code == 2:
            _check_error_output(built)
            assert built.out == ""
            assert not Path("out").exists(), "a failed build wrote output"
        else:
            assert checked.code == 0, (checked, built)
            assert sorted(p.name for p in Path("out").iterdir()) in (
                [".rulegen-manifest.json", "grafana", "prometheus"],
                [".rulegen-manifest.json", "grafana", "prometheus", "tests"],
            )


def _spec_text(draw: st.DrawFn) -> str:
    mutator = Mutator(draw)
    data = yaml.safe_load(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    for _ in range(draw(st.integers(1, 3))):
        data = mutator.mutate(data)
    text = yaml.safe_dump(data, allow_unicode=draw(st.booleans()), sort_keys=False)
    return mutator.mutate_text(text)


@st.composite
def spec_trees(draw: st.DrawFn) -> dict[str, str]:
    """One mutated spec as ``specs/a.yaml``, sometimes a second one as ``specs/b.yaml``."""
    files = {"specs/a.yaml": _spec_text(draw)}
    if draw(st.integers(0, 4)) == 0:
        files["specs/b.yaml"] = _spec_text(draw)
    return files


@pytest.fixture(scope="module", autouse=True)
def _catalog_loaded_once() -> Iterator[None]:
    """Load the (unchanging) signal catalog once per module instead of twice per example.

    Why: parsing the catalog's YAML is most of an in-process run; the fuzzer targets specs.
    """
    cache: dict[tuple[str, ...], Catalog] = {}

    def load(extra_dirs: Iterable[Path] = ()) -> Catalog:
        folders = [Path(folder) for folder in extra_dirs]
        key = tuple(str(folder.resolve()) for folder in folders)
        if key not in cache:
            cache[key] = load_catalog(folders)
        return cache[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "load_catalog", load)
        yield


FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(files=spec_trees())
def test_mutated_specs_exit_0_or_2_and_never_raise(files: dict[str, str]) -> None:
    check_cli_on(files)


# Minimal inputs the fuzzer once crashed on (shrunk by hypothesis, then by hand).
FUZZ_REGRESSIONS = {
    "a NUL byte in the file is one positioned error": "version: 1\x00\n",
    "a control character in the file is one positioned error": "version: 1\x7f\n",
    "a key with a line break keeps its diagnostic on one line": (
        "version: 1\n"
        "service: web\n"
        "alerts:\n"
        "  - {signal: disk_await, threshold: 5ms, severity: warning}\n"
        '"a\\nb": 1\n'
    ),
    "a label name with a line break keeps its diagnostic on one line": (
        "version: 1\n"
        "service: web\n"
        "alerts:\n"
        '  - {signal: disk_await, threshold: 5ms, severity: warning, labels: {"a\\rb": x}}\n'
    ),
}


@pytest.mark.parametrize("text", list(FUZZ_REGRESSIONS.values()), ids=list(FUZZ_REGRESSIONS))
def test_fuzz_regression(text: str) -> None:
    check_cli_on({"specs/a.yaml": text})


def test_the_unmutated_seeds_build() -> None:
    """The fuzzer starts from valid specs: otherwise it would only test the first error."""
    for name, text in SEEDS.items():
        with tempfile.TemporaryDirectory() as folder, contextlib.chdir(Path(folder)):
            Path("specs").mkdir()
            Path("specs/a.yaml").write_text(text, "utf-8")
            result = _run(
                "build", "--no-validate", "--out", "out", "specs", "--signals", str(SIGNAL_DIR)
            )
            assert result.code == 0, (name, result.err)
