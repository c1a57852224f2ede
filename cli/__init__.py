"""kbatch's command line (Click)."""

from cli.streams import harden_streams

harden_streams()
