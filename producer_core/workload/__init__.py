"""What to send: workload specs and files, rate schedules, message sources and
partition choice. No clock read, no socket; imports only the shared modules."""
