#!/bin/sh
# Run a Java class with Kafka's jars (what Kafka's own bin/kafka-run-class.sh does).
exec java -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
  -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
  ${KAFKA_OPTS:-} -cp "/opt/kafka/libs/*" "$@"
