"""``series/speed-missing`` (online): NICs a saturation alert or diagnosis cannot see."""

from __future__ import annotations

from collections.abc import Iterator

from rulegen.core import promql
from rulegen.errors import FieldPath
from rulegen.lint.check import Check, Scope
from rulegen.pipeline.service import ResolvedSpec

SPEED = "node_network_speed_bytes"


def _readers(spec: ResolvedSpec) -> Iterator[tuple[str, FieldPath, str]]:
    """(name, spec path, NIC selector) of each alert and diagnosis that divides by the link
    speed the NICs report (no ``link_speed`` of its own)."""
    for alert in spec.alerts:
        signal = alert.signal
        if signal is None or signal.signal != "network_saturation":
            continue
        if alert.params.get("link_speed"):
            continue
        virtual = promql.Matcher("device", "!~", str(alert.params["virtual_devices"]))
        sel = "{" + ", ".join(m.render() for m in (*alert.selector_matchers, virtual)) + "}"
        yield alert.name, alert.origin.path, sel
    for diagnosis in spec.diagnoses:
        if diagnosis.link_speed is not None:
            continue
        for item in diagnosis.evidence:
            for name, text in promql.selectors(item.recording.expr):
                if name == SPEED:
                    yield diagnosis.name, diagnosis.origin.path, text[len(SPEED) :]
                    break


def run(scope: Scope) -> None:
    """Physical NICs with no usable ``node_network_speed_bytes`` over the last day, read by
    a ``network_saturation`` alert without ``link_speed`` or a diagnosis whose evidence is
    the NICs' share of their link speed (``throughput_network_bound``, and the others that
    read it) without ``link_speed``: they divide by the speed, so they can never fire for
    those NICs (virtual devices report no speed; some drivers report none, 0 or -1, which
    node_exporter exports as -125000). Each finding names the other alerts and diagnoses of
    the spec that are blind to the same NICs."""
    api, now = scope.online.api, scope.online.now
    readers = list(_readers(scope.spec))
    for name, path, sel in readers:
        # NICs seen in the last day that never had a usable speed in it
        expr = (
            f"count by (instance, device) "
            f"(count_over_time(node_network_receive_bytes_total{sel}[1d]))"
            f" unless on (instance, device) (max_over_time({SPEED}{sel}[1d]) > 0)"
        )
        nics = api.query(expr, now)
        if not nics:
            continue
        shown = ", ".join(
            f"{n.metric.get('instance', '?')}/{n.metric.get('device', '?')}" for n in nics[:5]
        )
        more = f" and {len(nics) - 5} more" if len(nics) > 5 else ""
        others = [n for n, _, s in readers if n != name and s == sel]
        also = f" (nor can {', '.join(others)})" if others else ""
        scope.report(
            path,
            f"{name}: {len(nics)} physical NIC(s) have no usable {SPEED} ({shown}{more}) and "
            f"it has no link_speed: it can never fire for them{also}; set link_speed or "
            "exclude them in virtual_devices",
        )


CHECK = Check(
    "series/speed-missing",
    "warning",
    "physical NICs with no usable `node_network_speed_bytes`, read by a saturation alert or "
    "diagnosis without `link_speed`",
    run,
    online=True,
)
