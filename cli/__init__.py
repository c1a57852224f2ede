"""kbatch's command line (Click)."""

from cli.app.streams import (
    guard_startup_signals,
    harden_streams,
    ignore_signals_at_the_end,
    quiet_client_logs,
)

ignore_signals_at_the_end()  # first registered, so the last exit handler to run
harden_streams()
quiet_client_logs()
guard_startup_signals()  # cli.main ends it once every module is imported
