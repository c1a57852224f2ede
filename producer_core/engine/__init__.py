"""The producer engine: what runs a workload in a mode against a target.

`core` (the pure producer: accumulator, linger policies, sender, transactions), `modes` (the
mode registry), `drivers` (kbatch's asyncio engine, librdkafka, the clients run out of
process) and `transport` (the wire). It never imports the tools around it (brokers,
measure, analysis, distributed, cli): tests/unit/test_import_graph.py checks that."""
