#!/bin/sh
# The health check docker-compose.yml runs (as in apache/kafka's image).
exec kafka-run-class.sh org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
