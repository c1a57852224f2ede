"""Mode sarama: Go's sarama producer on the same workload, through kbatch's Go client driver
(`producer_core.engine.drivers.go_clients`, needs the Go toolchain to build it once). Which
settings reach it is `producer_core.engine.modes.go_client_settings`."""

from __future__ import annotations

from producer_core.engine.modes.go_client_settings import GO_VERSIONS, built_check, mode_check
from producer_core.engine.modes.spec import ModeSpec

SARAMA = ModeSpec(
    "sarama", "IBM/sarama (Go), flushing per broker by Flush.Frequency/Bytes/Messages "
    "(needs Go)",
    driver="producer_core.engine.drivers.go_clients.run:run_async", reads=("linger.ms",),
    check=mode_check("sarama"), check_built=built_check("sarama"), transactions=False,
    versions=GO_VERSIONS, install="producer_core.engine.drivers.go_clients.driver:install_sarama",
    build="producer_core.engine.drivers.go_clients.builds:register_sarama")
