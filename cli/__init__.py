"""kbatch's command line (Click)."""

from cli.streams import guard_startup_signals, harden_streams, quiet_client_logs

harden_streams()
quiet_client_logs()
guard_startup_signals()  # cli.main ends it once every module is imported
