"""kbatch's command line (Click)."""

from cli.streams import guard_startup_signals, harden_streams

harden_streams()
guard_startup_signals()  # cli.main ends it once every module is imported
