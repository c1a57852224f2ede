"""Mode kafka-go: Go's kafka-go producer on the same workload, through kbatch's Go client driver
(`producer_core.engine.drivers.go_clients`, needs the Go toolchain to build it once). Which
settings reach it is `producer_core.engine.modes.go_client_settings`."""

from __future__ import annotations

from producer_core.engine.modes.go_client_settings import GO_VERSIONS, built_check, mode_check
from producer_core.engine.modes.spec import ModeSpec

KAFKA_GO = ModeSpec(
    "kafka-go", "segmentio/kafka-go (Go), batching per partition by BatchTimeout/BatchSize, "
    "no idempotence (needs Go)",
    driver="producer_core.engine.drivers.go_clients.run:run_async", reads=("linger.ms",),
    check=mode_check("kafka-go"), check_built=built_check("kafka-go"), transactions=False,
    versions=GO_VERSIONS, install="producer_core.engine.drivers.go_clients.driver:install_kafka_go",
    build="producer_core.engine.drivers.go_clients.builds:register_kafka_go")
