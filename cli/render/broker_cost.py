"""The produce summary's rows for `broker_cost`: what the run cost the brokers and kbatch."""

from __future__ import annotations

from typing import Any


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def broker_cost_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the summary table (none for results without the section)."""
    cost = result.get("broker_cost")
    if not cost:
        return []
    window = cost["window"]
    broker, client, kafka = cost["broker"], cost["client"], cost["kafka"]
    label = f"after {window['warmup_s']:g} s warm-up, " if window.get("warmup_s") else ""
    rows = []
    if broker.get("measured"):
        nodes = broker.get("nodes", {})
        per_node = ", ".join(f"{n}: {_num(v.get('cpu_s'))}" for n, v in nodes.items())
        rows += [
            (f"broker CPU s ({label}{window['seconds']:,.1f} s measured)",
             f"{_num(broker['cpu_s'])} ({_num(broker['cpu_pct_of_core'], 0)}% of a core)"
             + (f"; by node {per_node}" if len(nodes) > 1 else "")),
            ("broker CPU ms per 1,000 requests / s per million msgs / s per MB",
             f"{_num(broker['cpu_ms_per_1k_requests'], 1)} / "
             f"{_num(broker['cpu_s_per_million_msgs'], 2)} / {_num(broker['cpu_s_per_mb'], 3)}"),
        ]
        if broker.get("peak_rss_mb") is not None:
            rows.append(("broker peak RSS MB", _num(broker["peak_rss_mb"], 0)))
    else:
        rows.append(("broker CPU", "not measured (" + kafka.get("reason", "no source") + ")"))
    if client.get("measured"):
        rows.append(("kbatch CPU s (per million msgs) / peak RSS MB",
                     f"{_num(client['cpu_s'])} ({_num(client['cpu_s_per_million_msgs'])}) / "
                     f"{_num(client.get('peak_rss_mb'), 0)}"))
    if kafka.get("available"):
        total = kafka["produce_time_ms"]["total"]
        rows += [
            ("Kafka Produce requests (whole run / kbatch requests_sent)",
             f"{_num(kafka.get('produce_requests_run'), 0)} / "
             f"{kafka.get('requests_sent_run', 0):,}"),
            ("Kafka Produce TotalTime ms: run's mean (exact) / p50 / p99 (Kafka's "
             "reservoir of recent minutes)",
             f"{_num(total['mean'])} / {_num(total['p50'])} / {_num(total['p99'])}"),
            ("Kafka request handler / network idle %",
             f"{_num(kafka.get('request_handler_idle_pct'), 1)} / "
             f"{_num(kafka.get('network_processor_idle_pct'), 1)}"),
        ]
        gap = round_trip_gap(result, total)
        if gap:
            rows.append(("round trip beyond Kafka's Produce time", gap))
    else:
        rows.append(("Kafka's own metrics", f"not available: {kafka.get('reason', '')}"))
    if cost.get("missing"):
        rows.append(("broker metrics missing", "; ".join(cost["missing"])))
    return rows


GAP_RATIO = 2.0
"""A client round trip p99 this many times Kafka's Produce time is worth explaining."""


def round_trip_gap(result: dict[str, Any], total: dict[str, Any]) -> str | None:
    """Why the client's round trip can be far longer than Kafka's Produce time: Kafka's
    clock starts when it reads the request off the socket."""
    rtt = (result.get("rtt") or {}).get("p99_ms")
    kafka_p99 = total.get("p99")
    if rtt is None or kafka_p99 is None or rtt < 10 or rtt < GAP_RATIO * max(kafka_p99, 1):
        return None
    return (f"round trip p99 {rtt:,.1f} ms vs Kafka's {kafka_p99:,.1f} ms: Kafka times a "
            "request from when it reads it, so the rest waited before that (behind earlier "
            "requests on the connection, which Kafka reads one at a time; a full socket), "
            "in a throttle, or in kbatch's own loop before it read the answer; a stall "
            "shows in the warnings")


def broker_cost_notes(runs: list[dict[str, Any]]) -> list[str]:
    """One line per distinct reason the comparison's broker rows are missing figures."""
    notes: list[str] = []
    for run in runs:
        cost = run.get("broker_cost")
        if not cost:
            continue
        kafka = cost.get("kafka") or {}
        if not kafka.get("available"):
            line = f"Broker cost: Kafka's own metrics not available: {kafka.get('reason')}."
            if line not in notes:
                notes.append(line)
        if not (cost.get("broker") or {}).get("measured"):
            line = "Broker cost: the brokers' CPU was not measured."
            if line not in notes:
                notes.append(line)
    return notes
