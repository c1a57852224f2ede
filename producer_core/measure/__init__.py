"""What is measured besides the producer: broker and client process cost, broker metrics."""
