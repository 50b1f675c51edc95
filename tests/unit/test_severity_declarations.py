"""``rulegen.source.severities``: what a declaration picks, and when a spec's fits the routing
file's (the spec-side errors are in tests/alerts/test_severities.py)."""

from __future__ import annotations

import pytest

from rulegen.source.severities import DEFAULT, Severities, disagreement


def declared(*names: str, paging: tuple[str, ...] = ()) -> Severities:
    return Severities(names, frozenset(paging), "specs/defaults.yaml:3:15")


@pytest.mark.parametrize(
    ("severities", "page", "ticket"),
    [
        (DEFAULT, "critical", "warning"),
        (declared("page", "ticket", "none", paging=("page",)), "page", "ticket"),
        (declared("P1", "P2", "P3", paging=("P2",)), "P2", "P1"),
        (declared("a", "b"), "a", "a"),  # none pages: the first for a page
        (declared("a", "b", paging=("a", "b")), "a", "b"),  # all page: the last for a ticket
    ],
)
def test_page_and_ticket_follow_the_paging(severities: Severities, page: str, ticket: str) -> None:
    assert (severities.page, severities.ticket) == (page, ticket)


def test_rank_is_the_declared_order() -> None:
    severities = declared("page", "ticket", "none", paging=("page",))
    assert severities.rank("page") > severities.rank("ticket") > severities.rank("none") > 0
    assert severities.rank("critical") == 0


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        (DEFAULT, None),
        (declared("critical", "none", paging=("critical",)), None),
        (declared("page", paging=("page",)), "page is not declared there"),
        (declared("none", "critical", paging=("critical",)), "the order differs (there: "
         "critical, none)"),
        (declared("critical", "warning", paging=("critical", "warning")),
         "paging differs for warning"),
    ],
)  # fmt: skip
def test_a_spec_fits_the_routing_file_when_it_is_a_part_of_it(
    spec: Severities, why: str | None
) -> None:
    routing = declared("critical", "warning", "info", "none", paging=("critical",))
    assert disagreement(spec, routing) == why
