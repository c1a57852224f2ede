"""Compression ratio of each payload kind with each codec, kbatch's engine on Tansu.

    python benchmarks/compression.py [--seconds 2] [--mode partition]

Prints a Markdown table (docs/findings/compression.md): per payload kind and codec, the ratio of key
and value bytes to record-batch bytes on the wire, and the wire bytes per request. The
JSON-events file is generated here from a fixed seed (2,000 users, 6 pages, 4 events).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from producer_core import EmbeddedBroker, PayloadSpec, Workload, build_settings, run  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def events_file(path: Path, count: int = 20_000) -> Path:
    """JSON click events, one per line (~135 bytes each)."""
    rng = random.Random(7)
    users = [f"user-{i:05d}" for i in range(2000)]
    lines = []
    for i in range(count):
        page = rng.choice(["/home", "/cart", "/checkout", f"/product/{rng.randrange(10000)}",
                           f"/search?q={rng.choice(['shoes', 'red+dress', 'laptop'])}",
                           "/account"])
        lines.append(json.dumps({
            "ts": 1_700_000_000_000 + i * 37, "user": rng.choice(users),
            "event": rng.choice(["view", "click", "add_to_cart", "purchase"]), "page": page,
            "session": f"{rng.getrandbits(64):016x}", "latency_ms": rng.randrange(1, 900)}))
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--mode", default="partition")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        events = events_file(Path(tmp) / "events.jsonl")
        kinds = {
            "random (default), 1,000 B": (PayloadSpec(), 1000),
            "`--compressibility 0.5`, 1,000 B": (PayloadSpec(compressibility=0.5), 1000),
            "`--compressibility 0.9`, 1,000 B": (PayloadSpec(compressibility=0.9), 1000),
            "`--payload-file` JSON events (~135 B)": (
                PayloadSpec("file", file=str(events)), 100),
        }
        broker = EmbeddedBroker()
        broker.start()
        try:
            print("| payload | " + " | ".join(CODECS) + " |")
            print("|---" * (len(CODECS) + 1) + "|")
            for index, (name, (payload, size)) in enumerate(kinds.items()):
                cells = []
                for codec in CODECS:
                    workload = Workload(topic=f"compression-{index}-{codec}", partitions=8,
                                        rate=8000, duration_s=args.seconds,
                                        message_size=size, payload=payload)
                    settings = build_settings(
                        {"compression.type": codec, "linger.ms": "50"}.items(), mode=args.mode)
                    doc = run(workload, settings, args.mode, broker.bootstrap).to_dict()
                    c = doc["compression"]
                    cells.append(f"{c['ratio']:.2f} ({c['wire_bytes_per_request']:,.0f})")
                print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
