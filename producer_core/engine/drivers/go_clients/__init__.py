"""Modes franz-go, sarama and kafka-go: Go's three Kafka producers on kbatch's workload.

One small Go program (``go/``, its own go.mod and go.sum) holds all three clients and
speaks the client-driver pipe protocol (`producer_core.engine.drivers.client_pipe`); `driver`
builds it with the Go toolchain into the per-user cache on first use, `run` runs a
workload through it with the shared pipe run.
"""
