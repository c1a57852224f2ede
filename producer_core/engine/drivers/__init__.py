"""The drivers behind one `RunDriver` protocol (`producer_core.engine.drivers.run_types`): kbatch's
asyncio engine, librdkafka and the Java producer. No driver imports another."""
