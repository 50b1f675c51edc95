"""The routing file (version 1, ``routing:``, no ``service``) as pydantic models.

Why a file of its own: one Alertmanager serves every service, so its tree is written once, in
exactly one input file, and checked against every alert the service specs generate.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rulegen.source.base import Duration, SeverityList, SpecBase

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class Webhook(SpecBase):
    """A webhook receiver (the URL is configuration, not a secret, in Alertmanager 0.25)."""

    url: str
    send_resolved: bool = True


class PagerDuty(SpecBase):
    """PagerDuty: Events v2 (``routing_key_file``) or v1 (``service_key_file``), from files."""

    routing_key_file: str | None = None
    service_key_file: str | None = None
    routing_key: str | None = None
    service_key: str | None = None
    send_resolved: bool = True
    # Go templates, as Alertmanager reads them (its defaults when left out)
    description: str | None = None
    severity: str | None = None


class Slack(SpecBase):
    """A Slack incoming webhook; its URL is a secret read from a file (or the base file's
    ``global.slack_api_url_file``)."""

    api_url_file: str | None = None
    api_url: str | None = None
    channel: str | None = None
    send_resolved: bool = True
    # Go templates, as Alertmanager reads them; ``text`` defaults to every alert's summary
    # and description (``routing.resolve``), Alertmanager's own title when left out
    title: str | None = None
    text: str | None = None


class Email(SpecBase):
    """An e-mail receiver; SMTP settings come from the base file's ``global``."""

    to: str
    auth_password: str | None = None
    auth_password_file: str | None = None
    send_resolved: bool = False


class ReceiverSpec(SpecBase):
    """A named receiver with exactly one integration."""

    name: str = Field(pattern=NAME)
    webhook: Webhook | None = None
    pagerduty: PagerDuty | None = None
    slack: Slack | None = None
    email: Email | None = None
    # no integration: what reaches it is dropped (Alertmanager's "null" receiver)
    discard: bool = False


class RouteSpec(SpecBase):
    """A child route: equality (``match``) and regex (``match_re``) label matchers."""

    match: dict[str, str] = {}
    match_re: dict[str, str] = {}
    receiver: str
    continue_: bool = Field(default=False, alias="continue")
    group_by: list[str] | None = None
    routes: list[RouteSpec] = []


class InhibitSpec(SpecBase):
    """Silence ``target`` alerts while a ``source`` alert with the same ``equal`` labels fires."""

    source: dict[str, str] = Field(min_length=1)
    target: dict[str, str] = Field(min_length=1)
    equal: list[str] = []


class RoutingTestSpec(SpecBase):
    """A label set and the receivers it must reach, in tree order."""

    labels: dict[str, str] = Field(min_length=1)
    receivers: list[str] = Field(min_length=1)


class Routing(SpecBase):
    """The Alertmanager tree rulegen owns: route, receivers, inhibit rules."""

    base: str | None = None
    group_by: list[str] = ["alertname", "service"]
    group_wait: Duration = "30s"
    group_interval: Duration = "5m"
    repeat_interval: Duration = "4h"
    default_receiver: str
    receivers: list[ReceiverSpec] = Field(min_length=1)
    routes: list[RouteSpec] = []
    inhibit: list[InhibitSpec] = []
    tests: list[RoutingTestSpec] = []
    # The repository's severities (docs/routing.md#severities): the severity values of the
    # routes, inhibitions and tests are checked against it, and so is every spec's.
    severities: SeverityList = None


class RoutingFile(SpecBase):
    """A routing input file."""

    version: Literal[1]
    routing: Routing
