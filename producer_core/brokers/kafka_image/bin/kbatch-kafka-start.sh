#!/bin/sh
# Start one KRaft node from the environment, as apache/kafka's image does: every KAFKA_*
# variable (except the JVM ones) becomes a line of server.properties; CLUSTER_ID formats
# the storage on the first start (a restarted container keeps its formatted data).
set -eu
CONF=/opt/kafka/config/server.properties
: > "$CONF"
env | while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_PERFORMANCE_OPTS|KAFKA_LOG4J_OPTS|KAFKA_GC_LOG_OPTS|KAFKA_JMX_OPTS|KAFKA_DEBUG) ;;
    KAFKA_*)
      key=$(printf '%s' "${name#KAFKA_}" | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g' | tr 'A-Z' 'a-z')
      printf '%s=%s\n' "$key" "$value" >> "$CONF" ;;
  esac
done
grep -q '^log.dirs=' "$CONF" || echo "log.dirs=/var/lib/kafka/data" >> "$CONF"
: "${CLUSTER_ID:?CLUSTER_ID must be set (a base64 UUID, as KRaft requires)}"
LOGDIR=$(sed -n 's/^log.dirs=//p' "$CONF" | cut -d, -f1)
if [ ! -f "$LOGDIR/meta.properties" ]; then
  kafka-run-class.sh kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$CONF" --ignore-formatted > /dev/null
fi
exec kafka-run-class.sh ${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g} kafka.Kafka "$CONF"
