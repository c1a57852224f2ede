"""Mode franz-go: Go's franz-go producer on the same workload, through kbatch's Go client driver
(`producer_core.engine.drivers.go_clients`, needs the Go toolchain to build it once). Which
settings reach it is `producer_core.engine.modes.go_client_settings`."""

from __future__ import annotations

from producer_core.engine.modes.go_client_settings import GO_VERSIONS, built_check, mode_check
from producer_core.engine.modes.spec import ModeSpec

FRANZ_GO = ModeSpec(
    "franz-go", "twmb/franz-go (Go): when one partition's linger ends, every partition "
    "with records goes out (needs Go)",
    driver="producer_core.engine.drivers.go_clients.run:run_async", reads=("linger.ms",),
    check=mode_check("franz-go"), check_built=built_check("franz-go"), transactions=False,
    versions=GO_VERSIONS, install="producer_core.engine.drivers.go_clients.driver:install_franz_go",
    build="producer_core.engine.drivers.go_clients.builds:register_franz_go")
