"""Errors the engine raises on purpose, each with a message meant for a person.

The CLI maps `UsageError` subclasses to exit code 2 and every other `KbatchError`
to exit code 1, printing only the message: no traceback for anything we anticipated.
"""


class KbatchError(Exception):
    """A failure we anticipated; its message says what went wrong and what to do."""


class UsageError(KbatchError):
    """The user's input (flags, settings, workload) is invalid."""


class ConfigError(UsageError):
    """A producer setting is unknown or out of range."""


class BrokerError(KbatchError):
    """A broker could not be started, reached, or asked to do something."""


class Interrupted(KeyboardInterrupt):
    """A signal ended the command at once; ``signum`` gives the exit code (128 + signum:
    130 for SIGINT, 143 for SIGTERM, whichever part of kbatch caught it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class BrokerBinaryMissing(BrokerError):
    """The embedded broker's executable is not installed."""
