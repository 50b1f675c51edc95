"""Nothing lost, nothing leaked, no traceback: every file rulegen reads from a user is guarded.

Specs, ``--signals`` signal files, the routing file, the Alertmanager base file it names and
the user's own promtool test files all go through the spec loader (``spec.loader``): a size
cap, an alias-expansion cap, a nesting cap, UTF-8 only, no explicit YAML tags, no lone
surrogates. Each hazard is one exact ``FILE:LINE:COL: path: message`` line, exit 2, and
nothing under ``--out``. Inline credentials in the routing and base files are refused without
ever being printed. Signal templates that would loop or allocate without end stop at a budget,
reported at their line of the signal file.

The expected lines are literal: each column can be checked against the document above it
(nesting counts every enclosing list and mapping, the document's own mapping included).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, CliResult, spec_errors, write_tree

from rulegen.load import discover, display
from rulegen.validate.cache import _rule_files

Cli = Callable[..., CliResult]

SERVICE = """\
version: 1
service: web
alerts:
  - {signal: disk_await, threshold: 5ms, severity: warning}
"""
ROUTING = """\
version: 1
routing:
  base: alertmanager/base.yml
  default_receiver: a
  receivers:
    - name: a
      webhook: {url: 'http://sink.internal/hook'}
"""
# A signal definition that is valid apart from what a case puts in it.
SIGNAL = """\
signal: probe
alert: ProbeHigh
family: node
about: ABOUT
threshold: {unit: number, op: ">"}
defaults: {window: null, for: 5m}
record: null
expr: EXPR
summary: SUMMARY
description: "probe at [[ value ]]"
test:
  settle: instant
  labels: {instance: "host-{n}"}
  vary: instance
  series:
    - {name: probe_value, value: VALUE}
"""
SIGNAL_OK = {
    "ABOUT": "a probe",
    "EXPR": "'probe_value{{ sel() }}'",
    "SUMMARY": '"probe at [[ value ]]"',
    "VALUE": '"q"',
}


@dataclass(frozen=True)
class Kind:
    """One kind of input file: where it lives, a document with ``HAZARD`` as the value of one
    key (at ``line``, ``col``, field ``path``), and the files around it.

    ``deep``: the column and the (shortened) path of the first list nested past 64 levels
    when ``HAZARD`` is 100 ``[``: the value's own column plus 64 minus the collections around
    it (the document's mapping and one per step of ``path``). ``bomb``: where the alias bomb
    passes 20000 values (the column is the first anchor's, one right of the value's).
    """

    name: str
    file: str
    document: str
    line: int
    col: int
    path: str
    deep: tuple[int, str]
    bomb: str
    others: dict[str, str]
    argv: tuple[str, ...] = ()


KINDS = [
    Kind(
        "spec",
        "specs/web.yaml",
        "version: 1\nservice: web\nalerts:\n  - signal: disk_await\n    threshold: 5ms\n"
        "    severity: warning\n    summary: HAZARD\n",
        7, 14, "alerts[0].summary", (14 + 61, "alerts[0].summary[0]..."),
        "alerts[0].summary[4][0][6][8][8][0]", {},
    ),
    Kind(
        "signal file",
        "signals/probe.yaml",
        SIGNAL.replace("ABOUT", "HAZARD").replace("EXPR", SIGNAL_OK["EXPR"])
        .replace("SUMMARY", SIGNAL_OK["SUMMARY"]).replace("VALUE", SIGNAL_OK["VALUE"]),
        4, 8, "about", (8 + 63, "about[0][0][0]..."), "about[4][0][6][8][8][4]",
        {"specs/web.yaml": SERVICE}, ("--signals", "signals"),
    ),
    Kind(
        "routing file",
        "specs/routing.yaml",
        "version: 1\nrouting:\n  group_by: HAZARD\n  default_receiver: a\n  receivers:\n"
        "    - name: a\n      webhook: {url: 'http://sink.internal/hook'}\n",
        3, 13, "routing.group_by", (13 + 62, "routing.group_by[0][0]..."),
        "routing.group_by[4][0][6][8][8][5]", {"specs/web.yaml": SERVICE},
    ),
    Kind(
        "base file",
        "specs/alertmanager/base.yml",
        "global: {resolve_timeout: 5m}\ntemplates: HAZARD\n",
        2, 12, "templates", (12 + 63, "templates[0][0][0]..."), "templates[4][0][6][8][8][5]",
        {"specs/web.yaml": SERVICE, "specs/routing.yaml": ROUTING},
    ),
    Kind(
        "user test file",
        "specs/tests/extra.yml",
        "rule_files: [../prometheus/web.rules.yml]\nevaluation_interval: HAZARD\ntests: []\n",
        2, 22, "evaluation_interval", (22 + 63, "evaluation_interval[0][0][0]..."),
        "evaluation_interval[4][0][6][8][8][5]", {"specs/web.yaml": SERVICE},
    ),
]  # fmt: skip

# Five anchors of ten: 100000 values from one line.
BOMB = ", ".join(
    [
        "[&a [x,x,x,x,x,x,x,x,x,x]",
        "&b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]",
        "&c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]",
        "&d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]",
        "&e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]]",
    ]
)


@dataclass(frozen=True)
class Hazard:
    """What replaces ``HAZARD``; ``expect`` gives the one error line for a kind."""

    name: str
    value: str
    expect: Callable[[Kind], str]


def _at(kind: Kind, col: int, path: str, message: str) -> str:
    return f"{kind.file}:{kind.line}:{col}: {path}: {message}"


TAGGED = "explicit YAML tags are not allowed (got {}); write the plain value"
SURROGATE = (
    "contains a lone surrogate U+D800 (from a \\u escape), which is not text; "
    "write the character itself or its \\U00XXXXXX escape"
)
DEEP = "nested more than 64 levels deep (lists and mappings inside each other)"
EXPANDS = "document expands to more than 20000 values (YAML alias bomb or runaway anchors)"

HAZARDS = [
    Hazard("an !!int tag", "!!int abc", lambda k: _at(k, k.col, k.path, TAGGED.format("!!int"))),
    Hazard(
        "a !!timestamp tag with an impossible date",
        "!!timestamp 2020-99-99",
        lambda k: _at(k, k.col, k.path, TAGGED.format("!!timestamp")),
    ),
    Hazard(
        "a python object tag",
        '!!python/object/apply:os.system ["true"]',
        lambda k: _at(k, k.col, k.path, TAGGED.format("!!python/object/apply:os.system")),
    ),
    Hazard("a lone surrogate escape", '"x\\ud800y"', lambda k: _at(k, k.col, k.path, SURROGATE)),
    Hazard("lists nested 100 deep", "[" * 100 + "]" * 100, lambda k: _at(k, *k.deep, DEEP)),
    Hazard("an alias bomb", BOMB, lambda k: _at(k, k.col + 1, k.bomb, EXPANDS)),
    Hazard(
        "a file over 2 MB", "LARGE", lambda k: f"{k.file}:1:1: file is larger than 2000000 bytes"
    ),
    Hazard(
        "a file that is not UTF-8",
        "NOT-UTF-8",
        lambda k: f"{k.file}:1:1: file is not UTF-8 (invalid continuation byte)",
    ),
]


def _write_hazard(root: Path, kind: Kind, hazard: Hazard) -> None:
    write_tree(root, kind.others)
    target = root / kind.file
    target.parent.mkdir(parents=True, exist_ok=True)
    if hazard.value == "LARGE":
        target.write_text(kind.document.replace("HAZARD", "x") + "# " + "x" * 2_000_000 + "\n")
    elif hazard.value == "NOT-UTF-8":
        target.write_bytes(kind.document.replace("HAZARD", "café").encode("latin-1"))
    else:
        target.write_text(kind.document.replace("HAZARD", hazard.value), encoding="utf-8")


CASES = [(kind, hazard) for kind in KINDS for hazard in HAZARDS]


@pytest.mark.parametrize(
    ("kind", "hazard"),
    CASES,
    ids=[f"{hazard.name} in a {kind.name} is one positioned error" for kind, hazard in CASES],
)
def test_every_input_file_has_the_loader_guards(
    kind: Kind, hazard: Hazard, in_tmp: Path, cli: Cli
) -> None:
    _write_hazard(in_tmp, kind, hazard)

    result = cli("build", "--no-validate", "--out", "out", *kind.argv)

    assert result.err.splitlines() == list(spec_errors(hazard.expect(kind)))
    assert (result.code, result.out) == (2, "")
    assert "Traceback" not in result.err
    assert not (in_tmp / "out").exists()


# --- nesting in the routing tree --------------------------------------------------------------


def test_a_routing_tree_nested_past_the_limit_is_one_positioned_error(
    in_tmp: Path, cli: Cli
) -> None:
    lines = ["version: 1", "routing:", "  default_receiver: a", "  receivers:", "    - name: a"]
    lines += ["      webhook: {url: 'http://sink.internal/hook'}", "  routes:"]
    for depth in range(40):  # route k starts on line 8 + 3k, indented 4 + 4k
        indent = " " * (4 + 4 * depth)
        lines += [f"{indent}- match: {{team: t{depth}}}", f"{indent}  receiver: a"]
        lines += [f"{indent}  routes:" if depth < 39 else f"{indent}  continue: false"]
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": "\n".join(lines) + "\n"})

    result = cli("build", "--no-validate", "--out", "out")

    # route 30 is a mapping at level 64 (document, routing, routes, then two per route); its
    # match mapping, line 98, column 124 + len("- match: {"), is level 65
    assert result.err.splitlines() == list(
        spec_errors(f"specs/routing.yaml:98:134: routing.routes[0].routes...: {DEEP}")
    )
    assert (result.code, result.out) == (2, "")
    assert not (in_tmp / "out").exists()


# --- text Python cannot write ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            'version: 1\nservice: web\nlabels: {team: "a\\udc00"}\nalerts:\n'
            "  - {signal: disk_await, threshold: 5ms, severity: warning}\n",
            f"specs/web.yaml:3:16: labels.team: {SURROGATE.replace('D800', 'DC00')}",
        ),
        (
            'version: 1\nservice: web\nlabels: {"t\\ud83d": a}\nalerts:\n'
            "  - {signal: disk_await, threshold: 5ms, severity: warning}\n",
            f"specs/web.yaml:3:10: labels: {SURROGATE.replace('D800', 'D83D')}",
        ),
        (
            "version: 1\nservice: web\nalerts:\n  - signal: disk_await\n    threshold: 5ms\n"
            "    severity: warning\n    for: 2020-99-99\n",
            "specs/web.yaml:7:10: alerts[0].for: invalid value: month must be in 1..12",
        ),
        (
            "version: 1\nservice: web\nalerts:\n  - signal: disk_await\n    threshold: 5ms\n"
            f"    severity: warning\n    for: {'9' * 5000}\n",
            "specs/web.yaml:7:10: alerts[0].for: invalid value: Exceeds the limit (4300 digits) "
            "for integer string conversion: value has 5000 digits",
        ),
        (
            '{"version": 1, "service": "web", "alerts": [{"signal": "disk_await",'
            ' "threshold": "5ms", "severity": "warning", "for":!!int "5"}]}\n',
            f"specs/web.yaml:1:119: alerts[0].for: {TAGGED.format('!!int')}",
        ),
    ],
    ids=[
        "a lone surrogate in a label value is rejected at the value",
        "a lone surrogate in a label name is rejected at the key",
        "an impossible date is a positioned error, not a ValueError",
        "an integer of 5000 digits is a positioned error, not a ValueError",
        "a tag right after a flow colon never reaches the libyaml fast path",
    ],
)
def test_values_python_cannot_hold_or_write_are_positioned_errors(
    spec: str, expected: str, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": spec})

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(spec_errors(expected))
    assert (result.code, result.out) == (2, "")
    assert not (in_tmp / "out").exists()


def test_a_user_test_file_that_is_not_a_mapping_is_rejected(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/tests/extra.yml": "- a\n- b\n"})

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(
        spec_errors("specs/tests/extra.yml:1:1: a promtool test file must be a YAML mapping")
    )
    assert result.code == 2
    assert not (in_tmp / "out").exists()


def test_a_valid_user_test_file_is_copied_byte_for_byte(in_tmp: Path, cli: Cli) -> None:
    text = (
        "# my test\nrule_files: [../prometheus/web.rules.yml]  # é\n"
        "evaluation_interval: 1m\ntests: []\n"
    )
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/tests/extra.yml": text})

    result = cli("build", "--no-validate", "--out", "out")

    assert result.code == 0, result.err
    assert (in_tmp / "out" / "tests" / "extra.yml").read_bytes() == text.encode()


def test_the_test_cache_reads_a_user_test_file_with_the_same_guards() -> None:
    bomb = f"rule_files: [a.yml]\nx: {BOMB}\n".encode()
    deep = b"rule_files: [a.yml]\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n"
    assert _rule_files(b"rule_files: [a.yml, b.yml]\n") == ["a.yml", "b.yml"]
    assert _rule_files(bomb) is None
    assert _rule_files(deep) is None
    assert _rule_files(b"rule_files: [\xff]\n") is None


# --- secrets ----------------------------------------------------------------------------------

SECRET = "s3cr3t-VALUE-42"
FROM_FILES = "secrets are read from files only: write {}: /path/to/secret"
URL_CREDENTIALS = (
    "secrets are read from files only: this URL carries credentials (user:password@, or a "
    "query parameter such as token=); remove them from the URL and keep them out of the "
    "committed files"
)


def _base_global(field: str) -> str:
    """A base file whose ``global`` holds ``field`` on line 3, its value at column 5 + len."""
    return f"global:\n  resolve_timeout: 5m\n  {field}: {SECRET}\n"


# (behaviour, base file, the error line)
BASE_SECRETS = [
    *(
        (
            f"global {field} inline is refused: {field}_file instead",
            _base_global(field),
            f"specs/alertmanager/base.yml:3:{5 + len(field)}: global.{field}: "
            + FROM_FILES.format(f"{field}_file"),
        )
        for field in (
            "smtp_auth_password", "smtp_auth_secret", "slack_api_url", "slack_app_token",
            "opsgenie_api_key", "victorops_api_key", "wechat_api_secret", "telegram_bot_token",
            "rocketchat_token", "rocketchat_token_id", "mattermost_webhook_url",
        )
    ),
    (
        "a basic_auth password in global.http_config is refused: password_file instead",
        f"global:\n  http_config:\n    basic_auth: {{username: u, password: {SECRET}}}\n",
        "specs/alertmanager/base.yml:3:41: global.http_config.basic_auth.password: "
        + FROM_FILES.format("password_file"),
    ),
    (
        "a bearer_token is refused: bearer_token_file instead",
        f"global:\n  http_config:\n    bearer_token: {SECRET}\n",
        "specs/alertmanager/base.yml:3:19: global.http_config.bearer_token: "
        + FROM_FILES.format("bearer_token_file"),
    ),
    (
        "authorization credentials are refused: credentials_file instead",
        f"global:\n  http_config:\n    authorization: {{type: Bearer, credentials: {SECRET}}}\n",
        "specs/alertmanager/base.yml:3:48: global.http_config.authorization.credentials: "
        + FROM_FILES.format("credentials_file"),
    ),
    (
        "an oauth2 client_secret is refused: client_secret_file instead",
        "global:\n  http_config:\n    oauth2:\n      client_id: x\n"
        f"      client_secret: {SECRET}\n      token_url: https://sso.internal/token\n",
        "specs/alertmanager/base.yml:5:22: global.http_config.oauth2.client_secret: "
        + FROM_FILES.format("client_secret_file"),
    ),
    (
        "a TLS key written inline is refused: key_file instead",
        f"global:\n  smtp_tls_config:\n    key: {SECRET}\n",
        "specs/alertmanager/base.yml:3:10: global.smtp_tls_config.key: "
        + FROM_FILES.format("key_file"),
    ),
    (
        "inline http_headers secrets are refused: files instead",
        f"global:\n  http_config:\n    http_headers:\n      X-Token: {{secrets: [{SECRET}]}}\n",
        "specs/alertmanager/base.yml:4:26: global.http_config.http_headers.X-Token.secrets: "
        "secrets are read from files only: write files: [/path/to/secret]",
    ),
    (
        "a proxy_connect_header has no file form: it stays out of the committed files",
        f"global:\n  http_config:\n    proxy_connect_header: {{X-Auth: [{SECRET}]}}\n",
        "specs/alertmanager/base.yml:3:27: global.http_config.proxy_connect_header: secrets are "
        "read from files only, and Alertmanager cannot read proxy_connect_header from a file: "
        "keep it out of the committed files (add it when deploying)",
    ),
    (
        "credentials in a proxy URL are refused",
        f"global:\n  http_config:\n    proxy_url: http://bob:{SECRET}@proxy.internal:3128\n",
        f"specs/alertmanager/base.yml:3:16: global.http_config.proxy_url: {URL_CREDENTIALS}",
    ),
    (
        "credentials in any URL anywhere in the base file are refused",
        f"templates: ['https://u:{SECRET}@templates.internal/a.tmpl']\n",
        f"specs/alertmanager/base.yml:1:13: templates[0]: {URL_CREDENTIALS}",
    ),
]  # fmt: skip

ROUTING_HEAD = """\
version: 1
routing:
  default_receiver: a
  receivers:
    - name: a
      webhook: {url: 'http://sink.internal/hook'}
"""

# (behaviour, the receiver line (line 8), the error line)
ROUTING_SECRETS = [
    (
        "an inline pagerduty routing_key is refused and never printed",
        f"      pagerduty: {{routing_key: {SECRET}}}",
        "specs/routing.yaml:8:32: routing.receivers[1].pagerduty.routing_key: "
        + FROM_FILES.format("routing_key_file"),
    ),
    (
        "an inline slack api_url is refused and never printed",
        f"      slack: {{api_url: 'https://hooks.slack.com/services/{SECRET}'}}",
        "specs/routing.yaml:8:24: routing.receivers[1].slack.api_url: "
        + FROM_FILES.format("api_url_file"),
    ),
    (
        "an inline email auth_password is refused and never printed",
        f"      email: {{to: ops@example.com, auth_password: {SECRET}}}",
        "specs/routing.yaml:8:51: routing.receivers[1].email.auth_password: "
        + FROM_FILES.format("auth_password_file"),
    ),
    (
        "credentials in a webhook URL are refused and never printed",
        f"      webhook: {{url: 'http://bob:{SECRET}@sink.internal/hook'}}",
        f"specs/routing.yaml:8:22: routing.receivers[1].webhook.url: {URL_CREDENTIALS}",
    ),
    (
        "a token in a webhook URL's query string is refused and never printed",
        f"      webhook: {{url: 'http://sink.internal/hook?team=a&access_token={SECRET}'}}",
        f"specs/routing.yaml:8:22: routing.receivers[1].webhook.url: {URL_CREDENTIALS}",
    ),
]


def _secret_free(result: CliResult, root: Path) -> None:
    assert SECRET not in result.out + result.err
    assert not (root / "out").exists()


@pytest.mark.parametrize(
    ("base", "expected"),
    [(base, expected) for _, base, expected in BASE_SECRETS],
    ids=[behaviour for behaviour, _, _ in BASE_SECRETS],
)
def test_a_credential_in_the_base_file_is_refused_at_its_place(
    base: str, expected: str, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": ROUTING})
    (in_tmp / "specs/alertmanager").mkdir()
    (in_tmp / "specs/alertmanager/base.yml").write_text(base)

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(spec_errors(expected))
    assert result.code == 2
    _secret_free(result, in_tmp)


@pytest.mark.parametrize(
    ("receiver", "expected"),
    [(receiver, expected) for _, receiver, expected in ROUTING_SECRETS],
    ids=[behaviour for behaviour, _, _ in ROUTING_SECRETS],
)
def test_a_credential_in_the_routing_file_is_refused_at_its_place(
    receiver: str, expected: str, in_tmp: Path, cli: Cli
) -> None:
    routing = ROUTING_HEAD + "    - name: b\n" + receiver + "\n"
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": routing})

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(spec_errors(expected))
    assert result.code == 2
    _secret_free(result, in_tmp)


def test_a_secret_of_the_wrong_type_is_not_echoed_by_the_type_error(in_tmp: Path, cli: Cli) -> None:
    routing = ROUTING_HEAD + "    - name: b\n      pagerduty: {routing_key: 987654321}\n"
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": routing})

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(
        spec_errors(
            "specs/routing.yaml:8:32: routing.receivers[1].pagerduty.routing_key: "
            + FROM_FILES.format("routing_key_file"),
            "specs/routing.yaml:8:32: routing.receivers[1].pagerduty.routing_key: must be a "
            "string (got a hidden value)",
        )
    )
    assert "987654321" not in result.out + result.err


@pytest.mark.parametrize(
    "url",
    [
        f"https://u:{SECRET}@rb.internal/{{alert}}",
        f"https://rb.internal/{{alert}}?api_key={SECRET}",
    ],
    ids=["user:password@", "?api_key="],
)
def test_a_runbook_url_with_credentials_never_reaches_the_rules(
    in_tmp: Path, cli: Cli, url: str
) -> None:
    spec = SERVICE.replace("service: web\n", f"service: web\nrunbook_url: {url}\n")
    write_tree(in_tmp, {"specs/web.yaml": spec})

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(
        spec_errors(f"specs/web.yaml:3:14: runbook_url: {URL_CREDENTIALS}")
    )
    _secret_free(result, in_tmp)


def test_secrets_read_from_files_build_and_only_their_paths_are_written(
    in_tmp: Path, cli: Cli
) -> None:
    base = (
        "global:\n  smtp_smarthost: smtp.internal:587\n"
        "  smtp_auth_password_file: /run/secrets/smtp\n"
        "  http_config: {basic_auth: {username: u, password_file: /run/secrets/basic}}\n"
    )
    routing = ROUTING_HEAD + "    - name: b\n      pagerduty: {routing_key_file: /run/secrets/pd}\n"
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": SERVICE,
            "specs/routing.yaml": routing.replace(
                "routing:\n", "routing:\n  base: alertmanager/base.yml\n"
            ),
            "specs/alertmanager/base.yml": base,
        },
    )

    result = cli("build", "--no-validate", "--out", "out")

    assert result.code == 0, result.err
    config = (in_tmp / "out/alertmanager/alertmanager.yml").read_text()
    assert "/run/secrets/smtp" in config
    assert "/run/secrets/basic" in config
    assert "routing_key_file: /run/secrets/pd" in config


# --- template bombs in --signals signal files -------------------------------------------------

# (behaviour, the field replaced, its template, the error line): ``expr`` is line 8 column 7,
# ``summary`` line 9 column 10, the recipe ``value`` line 16 column 34.
LOOPS = "more than 10000 loop iterations, calls or list items"
LONG = "it builds a text longer than 100000 characters"
BOMBS = [
    ("a loop over range(10**8)", "EXPR", "'{% for i in range(10**8) %}x{% endfor %}up'",
     f"signals/probe.yaml:8:7: expr: template stopped: {LOOPS}"),
    ("nested loops over range(99999)", "EXPR",
     "'{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}up'",
     f"signals/probe.yaml:8:7: expr: template stopped: {LOOPS}"),
    ("a string repeated 10**9 times", "EXPR", """'{{ "x" * 10**9 }}'""",
     f"signals/probe.yaml:8:7: expr: template stopped: {LONG}"),
    ("a power of 10**10 digits", "EXPR", "'{{ 10 ** (10 ** 10) }}'",
     "signals/probe.yaml:8:7: expr: template stopped: a number larger than 4096 bits"),
    ("a printf width of 10**9", "EXPR", """'{{ "%0999999999d" % 1 }}'""",
     f"signals/probe.yaml:8:7: expr: template stopped: {LONG}"),
    ("a str.center of 10**9", "EXPR", """'{{ "a".center(10**9) }}'""",
     f"signals/probe.yaml:8:7: expr: template stopped: {LONG}"),
    ("a str.format width of 10**9", "EXPR", """'{{ "{:>999999999}".format(1) }}'""",
     f"signals/probe.yaml:8:7: expr: template stopped: {LONG}"),
    ("a str.replace that multiplies the text", "EXPR",
     """'{{ ("x" * 99999).replace("x", "x" * 99999) }}'""",
     f"signals/probe.yaml:8:7: expr: template stopped: {LONG}"),
    ("a join of a huge list", "EXPR", """'{{ ",".join(["x" * 50000] * 9) }}'""",
     f"signals/probe.yaml:8:7: expr: template stopped: {LONG}"),
    ("a macro that calls itself", "EXPR", "'{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}'",
     "signals/probe.yaml:8:7: expr: template stopped: recursion too deep"),
    ("a macro that doubles its work 40 times", "EXPR",
     "'{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}'",
     f"signals/probe.yaml:8:7: expr: template stopped: {LOOPS}"),
    ("a text template looping over range(10**8)", "SUMMARY",
     "'[% for i in range(10**8) %]x[% endfor %]'",
     f"signals/probe.yaml:9:10: summary: template stopped: {LOOPS}"),
    ("a recipe computing a power of 10**10 digits", "VALUE", "'q * 10 ** (10 ** 10)'",
     "signals/probe.yaml:16:34: test.series[0].value: template stopped: a number larger "
     "than 4096 bits"),
    ("a recipe summing range(10**8)", "VALUE", "'range(10**8) | sum'",
     f"signals/probe.yaml:16:34: test.series[0].value: template stopped: {LOOPS}"),
]  # fmt: skip


PROBE_SERVICE = """\
version: 1
service: web
alerts:
  - {signal: probe, threshold: 5, severity: warning}
"""


def _signal(field: str, template: str) -> str:
    text = SIGNAL
    for key, value in SIGNAL_OK.items():
        text = text.replace(key, template if key == field else value)
    return text


@pytest.mark.parametrize(
    ("field", "template", "expected"),
    [(field, template, expected) for _, field, template, expected in BOMBS],
    ids=[f"{behaviour} stops at the signal file's line" for behaviour, *_ in BOMBS],
)
@pytest.mark.slow
def test_a_runaway_template_stops_quickly_at_its_line(
    field: str, template: str, expected: str, tmp_path: Path
) -> None:
    probe = _signal(field, template)
    write_tree(tmp_path, {"specs/web.yaml": PROBE_SERVICE, "signals/probe.yaml": probe})
    started = time.monotonic()

    # a real process with a timeout: a template that hangs fails the test instead of the run
    proc = subprocess.run(
        [sys.executable, "-m", "rulegen", "build", "--no-validate", "--out", "out",
         "--signals", "signals"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip

    assert time.monotonic() - started < 60  # a guard against a hang, not a benchmark
    assert proc.stderr.splitlines() == list(spec_errors(expected))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_lipsum_is_not_available_to_templates(in_tmp: Path, cli: Cli) -> None:
    probe = _signal("EXPR", "'{{ lipsum(10**6) }}'")
    write_tree(in_tmp, {"specs/web.yaml": PROBE_SERVICE, "signals/probe.yaml": probe})

    result = cli("build", "--no-validate", "--out", "out", "--signals", "signals")

    assert result.err.splitlines() == list(
        spec_errors(
            "specs/web.yaml:4:5: alerts[0]: signal probe (signals/probe.yaml): template "
            "error: 'lipsum' is undefined"
        )
    )
    assert result.code == 2


@pytest.mark.slow
def test_the_built_in_catalog_renders_exactly_as_before() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rulegen", "build", "--check", "--no-validate"],
        cwd=REPO, capture_output=True, text=True, check=False,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to date" in proc.stdout


# --- symbolic links -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_symlink_loop_named_on_the_command_line_is_one_line_exit_2(in_tmp: Path) -> None:
    (in_tmp / "loop.yaml").symlink_to("loop.yaml")

    proc = subprocess.run(
        [sys.executable, "-m", "rulegen", "build", "loop.yaml", "--no-validate", "--out", "out"],
        cwd=in_tmp, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip

    assert proc.stderr.splitlines() == [
        "rulegen: error: loop.yaml: broken symbolic link (its target is missing or it loops)"
    ]
    assert (proc.returncode, proc.stdout) == (2, "")
    assert not (in_tmp / "out").exists()


def test_a_symlink_loop_still_has_a_display_name(in_tmp: Path) -> None:
    (in_tmp / "specs").mkdir()
    (in_tmp / "specs" / "a.yaml").symlink_to("b.yaml")
    (in_tmp / "specs" / "b.yaml").symlink_to("a.yaml")

    assert display(Path("specs/a.yaml")) == "specs/a.yaml"


def test_a_dangling_spec_symlink_in_a_folder_is_a_warning_naming_it(in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SERVICE})
    (in_tmp / "specs" / "gone.yaml").symlink_to("moved-away.yaml")
    (in_tmp / "specs" / "loop.yml").symlink_to("loop.yml")

    inputs = discover([Path("specs")])

    assert inputs.specs == (Path("specs/web.yaml"),)
    assert inputs.warnings == (
        "specs/gone.yaml: skipped: broken symbolic link (its target is missing or it loops)",
        "specs/loop.yml: skipped: broken symbolic link (its target is missing or it loops)",
    )


def test_a_dangling_user_test_symlink_is_a_positioned_error(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SERVICE})
    (in_tmp / "specs" / "tests").mkdir()
    (in_tmp / "specs" / "tests" / "gone.yml").symlink_to("moved-away.yml")

    result = cli("build", "--no-validate", "--out", "out")

    assert result.err.splitlines() == list(
        spec_errors("specs/tests/gone.yml:1:1: cannot read file: No such file or directory")
    )
    assert result.code == 2
    assert not (in_tmp / "out").exists()


def test_a_template_that_writes_a_lone_surrogate_is_stopped_at_its_line(
    in_tmp: Path, cli: Cli
) -> None:
    # YAML keeps '\ud800' as six characters; Jinja's string literal turns them into U+D800
    probe = _signal("SUMMARY", """'probe at [[ "\\ud800" ]] [[ value ]]'""")
    write_tree(in_tmp, {"specs/web.yaml": PROBE_SERVICE, "signals/probe.yaml": probe})

    result = cli("build", "--no-validate", "--out", "out", "--signals", "signals")

    assert result.err.splitlines() == list(
        spec_errors(
            "signals/probe.yaml:9:10: summary: template output contains a lone surrogate "
            "U+D800 (from a \\u escape), which is not text"
        )
    )
    assert result.code == 2
    assert not (in_tmp / "out").exists()


def test_a_recipe_that_fails_only_with_the_specs_values_is_a_spec_error(
    in_tmp: Path, cli: Cli
) -> None:
    """The trial render at load passes (threshold 1); the spec's threshold 5 divides by zero."""
    probe = _signal("VALUE", '"q / (threshold - 5)"')
    write_tree(in_tmp, {"specs/web.yaml": PROBE_SERVICE, "signals/probe.yaml": probe})

    result = cli("build", "--no-validate", "--out", "out", "--signals", "signals")

    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines()[0].startswith(
        "specs/web.yaml:4:5: alerts[0]: cannot generate a test for ProbeHigh: cannot evaluate "
        "'q / (threshold - 5)': "
    )
    assert not (in_tmp / "out").exists()
