"""What is measured besides the producer: consumers for end-to-end latency (`--consume`)."""
