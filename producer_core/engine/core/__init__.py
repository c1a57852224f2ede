"""The pure producer: no clock read, no socket. Time comes in as an argument, what to do
goes out as commands (see `producer.Producer` and docs/contributing/producer-core.md)."""
