"""The routing file (version 1, ``routing:``, no ``service``) as pydantic models.

Why a file of its own: one Alertmanager serves every service, so its tree is written once, in
exactly one input file, and checked against every alert the service specs generate.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rulegen.source.base import Duration, SeverityList, SpecBase

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
RESOLVED = "notify when the alert resolves too"
SECRET_FILE = "a file holding the {} (read by Alertmanager)"
INLINE_SECRET = "refused: a secret is never written inline, write {1} instead ({0})"
LABELS = "label name → value"


class Webhook(SpecBase):
    """A webhook receiver (the URL is configuration, not a secret, in Alertmanager 0.25)."""

    url: str = Field(description="the URL Alertmanager posts the alerts to")
    send_resolved: bool = Field(default=True, description=RESOLVED)


class PagerDuty(SpecBase):
    """PagerDuty: Events v2 (``routing_key_file``) or v1 (``service_key_file``), from files."""

    routing_key_file: str | None = Field(
        default=None, description=SECRET_FILE.format("Events v2 routing key")
    )
    service_key_file: str | None = Field(
        default=None, description=SECRET_FILE.format("Events v1 service key")
    )
    routing_key: str | None = Field(
        default=None, description=INLINE_SECRET.format("Events v2 routing key", "routing_key_file")
    )
    service_key: str | None = Field(
        default=None, description=INLINE_SECRET.format("Events v1 service key", "service_key_file")
    )
    send_resolved: bool = Field(default=True, description=RESOLVED)
    # Go templates, as Alertmanager reads them (its defaults when left out)
    description: str | None = Field(
        default=None, description="a Go template; default: Alertmanager's"
    )
    severity: str | None = Field(default=None, description="a Go template; default: Alertmanager's")


class Slack(SpecBase):
    """A Slack incoming webhook; its URL is a secret read from a file (or the base file's
    ``global.slack_api_url_file``)."""

    api_url_file: str | None = Field(
        default=None,
        description=SECRET_FILE.format("webhook URL") + "; not needed when the "
        "base file sets global.slack_api_url_file",
    )
    api_url: str | None = Field(
        default=None, description=INLINE_SECRET.format("webhook URL", "api_url_file")
    )
    channel: str | None = Field(default=None, description="the channel, e.g. #alerts")
    send_resolved: bool = Field(default=True, description=RESOLVED)
    # Go templates, as Alertmanager reads them; ``text`` defaults to every alert's summary
    # and description (``routing.resolve``), Alertmanager's own title when left out
    title: str | None = Field(default=None, description="a Go template; default: Alertmanager's")
    text: str | None = Field(
        default=None,
        description="a Go template; default: each alert's summary, description and runbook",
    )


class Email(SpecBase):
    """An e-mail receiver; SMTP settings come from the base file's ``global``."""

    to: str = Field(description="the address the alerts are sent to")
    auth_password: str | None = Field(
        default=None, description=INLINE_SECRET.format("SMTP password", "auth_password_file")
    )
    auth_password_file: str | None = Field(
        default=None, description=SECRET_FILE.format("SMTP password")
    )
    send_resolved: bool = Field(default=False, description=RESOLVED)


class ReceiverSpec(SpecBase):
    """A named receiver with exactly one integration."""

    name: str = Field(pattern=NAME, description="the receiver's name, as routes name it")
    webhook: Webhook | None = Field(default=None, description="a webhook integration")
    pagerduty: PagerDuty | None = Field(default=None, description="a PagerDuty integration")
    slack: Slack | None = Field(default=None, description="a Slack integration")
    email: Email | None = Field(default=None, description="an e-mail integration")
    # no integration: what reaches it is dropped (Alertmanager's "null" receiver)
    discard: bool = Field(
        default=False, description="true: no integration, the receiver drops what reaches it"
    )


class RouteSpec(SpecBase):
    """A child route: equality (``match``) and regex (``match_re``) label matchers."""

    match: dict[str, str] = Field(default={}, description="label → value the alert must have")
    match_re: dict[str, str] = Field(
        default={}, description="label → RE2 regex (anchored) the alert's value must match"
    )
    receiver: str = Field(description="the receiver of the alerts the route matches")
    continue_: bool = Field(
        default=False,
        alias="continue",
        description="true: the alert goes on to the next sibling routes after this one",
    )
    group_by: list[str] | None = Field(
        default=None, description="the route's grouping labels; default: its parent's"
    )
    routes: list[RouteSpec] = Field(default=[], description="nested child routes")


class InhibitSpec(SpecBase):
    """Silence ``target`` alerts while a ``source`` alert with the same ``equal`` labels fires."""

    source: dict[str, str] = Field(min_length=1, description=f"{LABELS} of the alert that inhibits")
    target: dict[str, str] = Field(min_length=1, description=f"{LABELS} of the alerts silenced")
    equal: list[str] = Field(
        default=[], description="labels source and target must have equal values of"
    )


class RoutingTestSpec(SpecBase):
    """A label set and the receivers it must reach, in tree order."""

    labels: dict[str, str] = Field(min_length=1, description="an alert's labels")
    receivers: list[str] = Field(
        min_length=1, description="the receivers the alert must reach, in tree order"
    )


class Routing(SpecBase):
    """The Alertmanager tree rulegen owns: route, receivers, inhibit rules."""

    base: str | None = Field(
        default=None,
        description="an Alertmanager config with everything rulegen does not "
        "own (global, templates, …), relative to the routing file",
    )
    group_by: list[str] = Field(
        default=["alertname", "service"], description="the root route's grouping labels"
    )
    group_wait: Duration = Field(default="30s", description="the root route's group_wait")
    group_interval: Duration = Field(default="5m", description="the root route's group_interval")
    repeat_interval: Duration = Field(default="4h", description="the root route's repeat_interval")
    default_receiver: str = Field(description="the root route's receiver")
    receivers: list[ReceiverSpec] = Field(
        min_length=1, description="named receivers, each with exactly one integration"
    )
    routes: list[RouteSpec] = Field(default=[], description="the root route's child routes")
    inhibit: list[InhibitSpec] = Field(default=[], description="inhibit rules")
    tests: list[RoutingTestSpec] = Field(
        default=[], description="label sets and the receivers they must reach"
    )
    # The repository's severities (docs/routing.md#severities): the severity values of the
    # routes, inhibitions and tests are checked against it, and so is every spec's.
    severities: SeverityList = None


class RoutingFile(SpecBase):
    """A routing input file."""

    version: Literal[1] = Field(description="the file format's version: 1")
    routing: Routing = Field(description="the Alertmanager tree rulegen owns")
