"""``series/speed-missing`` (online): NICs a saturation alert cannot see."""

from __future__ import annotations

from rulegen.core import promql
from rulegen.lint.check import Check, Scope


def run(scope: Scope) -> None:
    """Physical NICs with no usable ``node_network_speed_bytes`` over the last day, read by
    a ``network_saturation`` alert without ``link_speed``: the alert divides by the speed,
    so it can never fire for them (virtual devices report no speed; some drivers report
    none, or 0)."""
    api, now = scope.online.api, scope.online.now
    for alert in scope.spec.alerts:
        signal = alert.signal
        if signal is None or signal.signal != "network_saturation":
            continue
        if alert.params.get("link_speed"):
            continue
        virtual = promql.Matcher("device", "!~", str(alert.params["virtual_devices"]))
        sel = "{" + ", ".join(m.render() for m in (*alert.selector_matchers, virtual)) + "}"
        # NICs seen in the last day that never had a usable speed in it
        expr = (
            f"count by (instance, device) "
            f"(count_over_time(node_network_receive_bytes_total{sel}[1d]))"
            f" unless on (instance, device) (max_over_time(node_network_speed_bytes{sel}[1d]) > 0)"
        )
        nics = api.query(expr, now)
        if nics:
            shown = ", ".join(
                f"{n.metric.get('instance', '?')}/{n.metric.get('device', '?')}" for n in nics[:5]
            )
            more = f" and {len(nics) - 5} more" if len(nics) > 5 else ""
            scope.report(
                alert.origin.path,
                f"{alert.name}: {len(nics)} physical NIC(s) have no usable "
                f"node_network_speed_bytes ({shown}{more}) and the alert has no link_speed: "
                "it can never fire for them; set link_speed or exclude them in virtual_devices",
            )


CHECK = Check(
    "series/speed-missing",
    "warning",
    "physical NICs with no usable `node_network_speed_bytes`, read by a saturation alert "
    "without `link_speed`",
    run,
    online=True,
)
