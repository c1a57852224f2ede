"""Mode kafka-java: Apache Kafka's Java producer (kafka-clients, needs a JDK) on the same
workload. Which settings reach it is `producer_core.engine.modes.kafka_java_settings`; the driver is
loaded only when a run of this mode starts."""

from __future__ import annotations

from producer_core.engine.modes.kafka_java_settings import check_mode
from producer_core.engine.modes.spec import ModeSpec

KAFKA_JAVA = ModeSpec(
    "kafka-java", "Apache Kafka's Java producer (kafka-clients, needs a JDK) on the same "
    "workload", driver="producer_core.engine.drivers.kafka_java.run:run_async",
    reads=("linger.ms",),
    check=check_mode, versions="a kafka-clients release on Maven Central",
    install="producer_core.engine.drivers.kafka_java.driver:install",
    build="producer_core.engine.drivers.kafka_java.driver:register_build")
