"""Option declarations that `produce` and `compare-modes` share, light to import."""

from __future__ import annotations

from typing import Any

import click

OUT_HELP = ("Write a results directory: results.json (schema v1), and per run the latency "
            ".hgrm, the encoded histogram and the per-request log (Parquet). "
            "See docs/reference/results.md.")



def delivery_options(func: Any) -> Any:
    """`--verify` and `--allow-failures`, shared by `produce` and `compare-modes`."""
    func = click.option(
        "--allow-failures", is_flag=True,
        help="Exit 0 even when messages failed or have an unknown outcome (runs that "
             "expect faults); they are still reported. --verify problems still exit 4.")(func)
    return click.option(
        "--verify", is_flag=True,
        help="After the run, read every produced partition back from the offsets the run "
             "started at and report present / missing / duplicated / out-of-order messages "
             "per topic (results JSON 'verify'). Exit 4 when an acknowledged message is "
             "missing, or on a duplicate or reorder with idempotence on.")(func)
