"""How results and progress look in a terminal (rich). The engine knows nothing of this."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from cli.render.broker_cost import broker_cost_rows
from producer_core.engine.modes import COLLECTOR_MODES
from producer_core.results.metric_catalog import summary_metric

console = Console(stderr=True)
"""Progress and notices go to stderr so stdout stays clean for tables and pipes."""
out = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)
"""Tables: the terminal's width, or `COLUMNS` when set (rich reads it); wide when piped
without it (CI logs), so metric names and cells are not folded."""


def _reasons(msgs: dict[str, Any]) -> str:
    """Discard reasons and counts (mode bruce's rate limit), for the summary table."""
    return ", ".join(f"{reason}: {count:,}" for reason, count in msgs["discard_reasons"].items())


def _ms(value: float) -> str:
    return f"{value:,.2f}"


def summary_table(result: dict[str, Any]) -> Table:
    """The final summary of one run, from its results JSON."""
    table = Table(title=f"kbatch produce — mode {result['mode']}", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    msgs = result["messages"]
    rate = result["rate"]
    target = rate["target_msgs_per_s"]
    rows = [
        ("requests_sent", f"{result['requests_sent']:,}"),
        ("retried requests", f"{result['retried_requests']:,}"),
        ("msgs_per_req", f"{result['msgs_per_req']:,.1f}"),
        ("partitions per request (mean / p50 / max)",
         "{mean:,.1f} / {p50:,.0f} / {max:,.0f}".format(**result["partitions_per_request"])),
        ("bytes per request (mean / max)",
         "{mean:,.0f} / {max:,.0f}".format(**result["bytes_per_request"])),
        ("messages intended / sent", f"{msgs['intended']:,} / {msgs['sent']:,}"),
        outcome_row(result),
        *([("discarded (reasons)", f"{msgs['discarded']:,} ({_reasons(msgs)})")]
          if msgs.get("discarded") else []),
        *_rate_rows(rate, _target_text(result, target), result["duration_s"],
                    _closed_loop_text(result)),
        *_volume_rows(result),
    ]
    lat = result["latency"]
    rows += [
        ("ack latency p50 / p95 / p99 ms", f"{_ms(lat['p50_ms'])} / {_ms(lat['p95_ms'])} / "
                                           f"{_ms(lat['p99_ms'])}"),
        ("ack latency p99.9 / max ms", f"{_ms(lat['p999_ms'])} / {_ms(lat['max_ms'])}"),
        *_e2e_rows(result),
        ("linger per request p50 / p99 / max ms",
         f"{_ms(result['linger']['p50_ms'])} / {_ms(result['linger']['p99_ms'])} / "
         f"{_ms(result['linger']['max_ms'])}"),
        ("generator lag p99 / max ms", f"{_ms(result['generator_lag']['p99_ms'])} / "
                                       f"{_ms(result['generator_lag']['max_ms'])}"),
        *([("broker round trip p50 / p99 ms", f"{_ms(result['rtt']['p50_ms'])} / "
                                              f"{_ms(result['rtt']['p99_ms'])}")]
          if result.get("rtt", {}).get("count") else []),
        ("requests by broker", ", ".join(
            f"{k}: {v:,}" for k, v in result["requests_by_broker"].items()) or "-"),
    ]
    batch_linger = result.get("batch_linger")  # absent from results of older versions
    if batch_linger and batch_linger.get("count") and (
            result["mode"] in COLLECTOR_MODES or not _same_linger(result["linger"],
                                                                  batch_linger)):
        rows.append(("batch linger p50 / p99 / p99.9 / max ms (KIP-1224)",
                     " / ".join(_ms(batch_linger[k]) for k in ("p50_ms", "p99_ms", "p999_ms",
                                                              "max_ms"))))
    if "send_rate_per_s" in result:
        rows.append(("sends (requests) per second", f"{result['send_rate_per_s']:,.1f}"))
    priming = result.get("priming")
    if priming:  # before time zero, outside every figure (transport/priming.py)
        rows.append(("primed before the clock: partitions (requests) / s",
                     f"{priming['partitions']:,} ({priming.get('requests', 0):,}) / "
                     f"{priming['seconds']:,.1f}"))
    for name, value in rows:
        table.add_row(name, value)
    blocked = blocked_row(result)
    if blocked is not None:
        table.add_row(*blocked)
    reasons = {k: v for k, v in msgs["failed_reasons"].items() if k != NOT_SENT}
    if reasons:
        table.add_row("failure reasons (not written)", ", ".join(
            f"{k}: {v:,}" for k, v in reasons.items()))
    if msgs.get("unknown_reasons"):
        table.add_row("unknown reasons (may be written)", ", ".join(
            f"{k}: {v:,}" for k, v in msgs["unknown_reasons"].items()))
    idempotence = result.get("idempotence") or {}
    if idempotence.get("enabled") and "producer_id" in idempotence:
        table.add_row("idempotence: producer id / epoch (bumps)",
                      f"{idempotence['producer_id']} / {idempotence['producer_epoch']} "
                      f"({idempotence.get('epoch_bumps', 0)})")
    for name, value in broker_cost_rows(result):
        table.add_row(name, value)
    collector = collector_text(result)
    if collector is not None:
        table.add_row("collector (sends by trigger)", collector)
    client = client_text(result)
    if client is not None:
        table.add_row("client (as it reports itself)", client)
    if result.get("complete") is False:
        table.add_row("complete", "no: stopped before its end")
    return table


def blocked_row(result: dict[str, Any]) -> tuple[str, str] | None:
    """The time the generator waited for memory, if it did: the engine counts each wait,
    the Java producer only its total (`bufferpool-wait-time-ns-total`)."""
    blocked = result.get("generator_blocked") or {}
    if blocked.get("episodes"):
        return ("generator blocked on memory total / max ms (times)",
                f"{_ms(blocked['total_ms'])} / {_ms(blocked['max_ms'])} "
                f"({blocked['episodes']:,})")
    if blocked.get("total_ms"):
        return "generator blocked on memory total ms (the client's count)", _ms(
            blocked["total_ms"])
    return None


def collector_text(result: dict[str, Any]) -> str | None:
    """A collector mode's sends by trigger: kbatch's own (mode broker ...) or the patched
    librdkafka's statistics (mode librdkafka-broker), from the results' ``collector``
    section: ``167 sends (flush 7, broker_linger 160), 333.0 partitions per send``; None
    without one."""
    collector = result.get("collector")
    if not isinstance(collector, dict) or "sends_by_reason" not in collector:
        return None
    reasons = ", ".join(f"{k} {v:,}" for k, v in collector["sends_by_reason"].items() if v)
    text = f"{collector.get('sends', 0):,} sends" + (f" ({reasons})" if reasons else "")
    per_send = (collector.get("partitions_per_send") or {}).get("mean")
    return text + (f", {per_send:,.1f} partitions per send"
                   if isinstance(per_send, int | float) else "")


CLIENT_FIGURES = ("linger.ms", "batch.size")
"""The client settings a table names beside a real client's reported version (issue 44)."""


def client_text(result: dict[str, Any]) -> str | None:
    """What a real client run reports of itself: ``kafka-clients 3.9.1; linger.ms 0,
    batch.size 16384 (its defaults)``; None for kbatch's own engine."""
    rdkafka = result.get("librdkafka")
    if isinstance(rdkafka, dict) and rdkafka.get("version"):
        python = rdkafka.get("confluent_kafka_version")
        build = rdkafka.get("client_build")
        patches = rdkafka.get("patches")
        return f"librdkafka {rdkafka['version']}" + (
            f" (confluent-kafka {python})" if python else "") + (
            f", build sha256 {str(build.get('sha256'))[:12]}" if isinstance(build, dict)
            else "") + (f", patches {', '.join(patches)}" if patches else "")
    go = result.get("go_client")
    if isinstance(go, dict) and go.get("client_version"):
        go_build = go.get("client_build")
        if isinstance(go_build, dict):
            return (f"{go.get('client')} {go_build.get('module_version')} (build "
                    f"{go_build.get('path')}, sha256 {str(go_build.get('sha256'))[:12]})")
        return f"{go.get('client')} {go['client_version']}"
    section = result.get("kafka_java")
    if not isinstance(section, dict) or not section.get("client_version"):
        return None
    config = section.get("client_config") or {}
    defaults = set(section.get("client_defaults") or ())
    figures = [(k, config[k]) for k in CLIENT_FIGURES if k in config]
    text = f"kafka-clients {section['client_version']}"
    build = section.get("client_build")
    if isinstance(build, dict):
        text += f" (build {build.get('path')}, sha256 {str(build.get('sha256'))[:12]})"
    if figures:
        text += "; " + ", ".join(f"{k} {v}" for k, v in figures)
        if all(k in defaults for k, _ in figures):
            text += " (its defaults)"
        elif any(k in defaults for k, _ in figures):
            text += " (" + ", ".join(f"{k} its default" for k, _ in figures
                                     if k in defaults) + ")"
    return text


def _closed_loop_text(result: dict[str, Any]) -> str | None:
    """A closed loop's senders (its rate is an outcome); None for a schedule."""
    loop = result.get("workload", {}).get("closed_loop")
    if not loop:
        return None
    think = result["workload"].get("think_time_s") or 0
    return (f"closed loop, {loop:,} sender{'s' if loop > 1 else ''}"
            + (f", think {think * 1000:g} ms" if think else ""))


def _target_text(result: dict[str, Any], target: float | None) -> str:
    """The rate asked for: a number, max, or a closed loop's senders."""
    loop = _closed_loop_text(result)
    if loop is not None:
        return loop
    return "max" if target is None else f"{target:,.0f}"


def _rate_rows(rate: dict[str, Any], target_text: str, duration_s: float,
               closed_loop: str | None = None) -> list[tuple[str, str]]:
    """Offered, sent and acknowledged rates over the schedule's window, and the overrun
    (results/rates.py); older documents: the achieved rate and its target. A closed
    loop's offered rate is what its senders offered: the label names the loop."""
    if "acked_msgs_per_s" not in rate:
        return [("rate achieved (target)",
                 f"{rate['achieved_msgs_per_s']:,.0f}/s ({target_text})")]
    offered = rate["offered_msgs_per_s"]
    window = f"{rate['window_s']:,.1f} s" + (f", {closed_loop}" if closed_loop else " schedule")
    rows = [(f"msg/s offered / sent / acked ({window})",
             f"{target_text if offered is None else f'{offered:,.0f}'} / "
             f"{rate['sent_msgs_per_s']:,.0f} / {rate['acked_msgs_per_s']:,.0f}")]
    if rate["overrun_s"] >= 0.05:
        rows.append(("overrun: wall time past the schedule",
                     f"{rate['overrun_s']:,.1f} s (acked {rate['achieved_msgs_per_s']:,.0f}/s "
                     f"over all {duration_s:,.1f} s)"))
    return rows


def _same_linger(per_request: dict[str, Any], per_batch: dict[str, Any]) -> bool:
    """A request's linger and its batches' (KIP-1224) tell one story in the per-partition
    modes, whose requests mostly carry one batch: there one row says it, unless they differ
    by more than a quarter (or 0.5 ms). The collector modes show both: there they differ
    by design."""
    return all(abs(per_request[k] - per_batch[k]) <= max(0.5, 0.25 * per_request[k])
               for k in ("p50_ms", "p99_ms", "max_ms") if k in per_request and k in per_batch)


def _e2e_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """End-to-end latency (intended send to consume), in runs with --consume."""
    e2e = result.get("e2e_latency")
    if not e2e:
        return []
    return [("end-to-end latency p50 / p95 / p99 ms",
             f"{_ms(e2e['p50_ms'])} / {_ms(e2e['p95_ms'])} / {_ms(e2e['p99_ms'])}"),
            ("end-to-end latency p99.9 / max ms",
             f"{_ms(e2e['p999_ms'])} / {_ms(e2e['max_ms'])}")]


def _volume_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """MB/s and what compression did (absent from results of older versions)."""
    rate, compression = result["rate"], result.get("compression")
    rows = []
    if "mb_per_s" in rate:
        rows.append(("MB/s payload / on the wire",
                     f"{rate['mb_per_s']:,.2f} / {rate['wire_mb_per_s']:,.2f}"))
    if compression and compression.get("type", "none") != "none":
        rows.append(("compression: type, ratio (payload / wire), wire bytes per request",
                     f"{compression['type']}, {compression['ratio']:,.2f}, "
                     f"{compression['wire_bytes_per_request']:,.0f}"))
    return rows


def verify_table(verify: dict[str, Any], label: str = "") -> Table:
    """`--verify`'s verdict per topic (and in total when there are several topics)."""
    if verify.get("read_error"):
        table = Table(title=f"--verify{' — ' + label if label else ''}: the read-back "
                            f"failed after {verify['read_s']:,.1f} s; nothing was checked")
        table.add_column("acknowledged", justify="right")
        table.add_column("why", overflow="fold")
        table.add_row(f"{verify['acknowledged']:,}", verify["read_error"])
        return table
    state = "problems: " + "; ".join(verify["problems"]) if verify["problems"] else "clean"
    idem = "on" if verify["idempotence"] else "off"
    table = Table(title=f"--verify{' — ' + label if label else ''}: read back "
                        f"{verify['records_read']:,} records in {verify['read_s']:,.1f} s, "
                        f"idempotence {idem} — {state}")
    # headers that fit an 80-column terminal whole (a cut "dupl…" hides the verdict); a
    # long topic name folds instead
    table.add_column("topic", justify="left", overflow="fold")
    for name in ("acked", "present", "missing", "duplicated", "out of\norder",
                 "unacked\nfound"):
        table.add_column(name, justify="right", no_wrap=True)
    keys = ("acknowledged", "present", "missing", "duplicated", "out_of_order",
            "unacknowledged_found")
    topics = verify["topics"]
    rows = list(topics.items())
    if len(rows) > 1:
        rows.append(("total", verify))
    for name, counts in rows:
        cells = [f"{counts[key]:,}" for key in keys]
        bad = [counts["missing"], *(
            (counts["duplicated"], counts["out_of_order"]) if verify["idempotence"] else ())]
        table.add_row(name, *cells, style="red" if any(bad) else None)
    if not verify["read_complete"]:
        table.caption = ("the read-back stopped at its time limit: counts of missing "
                         "records may be too high")
    return table


NOT_SENT = "interrupted"
"""The failure reason of messages a signal stopped before they were sent: run_types.
INTERRUPTED, spelled here so that rendering does not import the engine (a test holds the
two equal)."""


def not_sent(msgs: dict[str, Any]) -> int:
    return int((msgs.get("failed_reasons") or {}).get(NOT_SENT, 0))


def outcome_row(result: dict[str, Any]) -> tuple[str, str]:
    """Every message's outcome; with acks=0 nothing is acknowledged, only sent. Messages a
    signal stopped before they were sent are "not sent", apart from those that failed."""
    msgs = result["messages"]
    unknown = msgs.get("unknown", 0)
    stopped = not_sent(msgs)
    failed = f"{msgs['failed'] - stopped:,}" + (f" / {stopped:,}" if stopped else "")
    label = "failed / not sent (stopped)" if stopped else "failed"
    if str(result.get("settings", {}).get("acks")) == "0":
        return (f"sent (acks=0) / {label} / unknown",
                f"{msgs.get('sent_unacknowledged', 0):,} / {failed} / {unknown:,}")
    return (f"acknowledged / {label} / unknown",
            f"{msgs['acknowledged']:,} / {failed} / {unknown:,}")


def print_warnings(result: dict[str, Any]) -> None:
    for warning in result.get("warnings", []):
        console.print(f"[yellow]Warning:[/yellow] {warning}")


def _cell(metric: str, cell: dict[str, float], repeat: int) -> str:
    declared = summary_metric(metric)
    digits = declared.digits if declared is not None else 1
    text = f"{cell['median']:,.{digits}f}"
    if repeat > 1:
        text += f" ({cell['min']:,.{digits}f}–{cell['max']:,.{digits}f})"
    return text


def comparison_table(document: dict[str, Any], width: int | None = None) -> Table:
    """The side-by-side table of `compare-modes`, like the seed's Improvement Summary.

    It fits `width` (default: the terminal's): where a column per mode and a change column
    per mode would not fit, each mode's change goes under its value in one column, so no
    mode name is ever cut short."""
    from producer_core.analysis.compare import change_text

    summary = document["summary"]
    modes = [mode for mode in document["modes"] if mode in summary]  # a stopped run: fewer
    repeat = document["repeat"]
    title = "kbatch compare-modes" + (f" — median (min–max) of {repeat} rounds"
                                      if repeat > 1 else "")
    from producer_core.analysis.compare import present_metrics

    metrics = present_metrics(summary, modes)  # older results lack some metrics
    cells = {mode: [_cell(metric, summary[mode][metric], repeat) for metric in metrics]
             for mode in modes}
    changes = {mode: [change_text(metric, summary[modes[0]][metric]["median"],
                                  summary[mode][metric]["median"]) for metric in metrics]
               for mode in modes[1:]}
    headers = {mode: f"change vs {modes[0]}" for mode in modes[1:]}
    wide = max(map(len, metrics), default=6) + 4 + sum(
        max(len(mode), *map(len, cells[mode])) + 3 for mode in modes) + sum(
        max(len(headers[mode]), *map(len, changes[mode])) + 3 for mode in modes[1:])
    compact = wide > (width or out.width)
    table = Table(title=title)
    table.add_column("metric", no_wrap=True)
    for index, mode in enumerate(modes):
        table.add_column(mode, justify="right", min_width=len(mode))
        if index and not compact:
            table.add_column(headers[mode], justify="right")
    for row_index, metric in enumerate(metrics):
        row = [metric]
        for index, mode in enumerate(modes):
            value = cells[mode][row_index]
            if index and compact:
                row.append(f"{value}\n[dim]{changes[mode][row_index]}[/dim]")
                continue
            row.append(value)
            if index:
                row.append(changes[mode][row_index])
        table.add_row(*row)
    clients: dict[str, str] = {}
    for run in document.get("runs", []):
        text = client_text(run)
        collector = collector_text(run)
        if collector is not None:
            text = f"collector {collector}" + (f"; {text}" if text else "")
        if text is not None and run.get("mode") in modes:
            clients.setdefault(run["mode"], text)
    table.caption = ("p50_ms ... max_ms: ack latency (intended send → acknowledgement)" + (
        "; e2e_*: end-to-end latency (intended send → consume)"
        if any("e2e_p99_ms" in summary[mode] for mode in modes) else "") + (
        "; broker_produce_p99_ms: Kafka's own reservoir of its last minutes, not this run "
        "alone" if any("broker_produce_p99_ms" in summary[mode] for mode in modes) else "") + (
        "; *_msgs_per_s: within the schedule's window (achieved: to the last ack)"
        if any("acked_msgs_per_s" in summary[mode] for mode in modes) else "") + (
        f"; under each value: its change vs {modes[0]}" if compact else "") + "".join(
        f"\n{mode}: {text}" for mode, text in clients.items()))
    return table


def describe_topics(workload: Any) -> str:
    """`topic 'x'`, or `3 topics (a, b, c)` / `50 topics (a, b, ... z)` for a workload file."""
    names = [t.name for t in workload.topic_specs()]
    if len(names) == 1:
        return f"topic {names[0]!r}"
    shown = ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:3])}, ... {names[-1]}"
    return f"{len(names)} topics ({shown})"


def topics_table(result: dict[str, Any], limit: int = 60) -> Table:
    """Per-topic figures of a multi-topic run (requests count once per topic carried)."""
    table = Table(title="per topic (a request carrying several topics counts for each)")
    for name in ("topic", "requests", "msgs/req", "acked", "failed", "discarded", "rate/s",
                 "MB/s", "p50 ms", "p99 ms"):
        table.add_column(name, justify="left" if name == "topic" else "right",
                         no_wrap=name == "topic")
    topics = sorted(result["topics"].items(), key=lambda kv: -kv[1]["records_sent"])
    for name, t in topics[:limit]:
        m = t["messages"]
        table.add_row(name, f"{t['requests']:,}", f"{t['msgs_per_req']:,.1f}",
                      f"{m['acknowledged']:,}", f"{m['failed']:,}", f"{m['discarded']:,}",
                      f"{t['achieved_msgs_per_s']:,.0f}", f"{t.get('mb_per_s', 0.0):,.2f}",
                      _ms(t["latency"]["p50_ms"]),
                      _ms(t["latency"]["p99_ms"]))
    if len(topics) > limit:
        table.caption = f"{len(topics) - limit} more topics in the JSON"
    return table
