"""What is measured besides the producer: broker and client process cost, broker metrics,
consumers for end-to-end latency (`--consume`)."""
