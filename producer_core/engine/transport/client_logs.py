"""Log lines of the client libraries kbatch drives (aiokafka for topic set-up and
`--verify`'s read-back, py4j for Spark) go to one file, not the terminal.

With brokers down, aiokafka logs an error per connection attempt through Python's
last-resort handler, straight to stderr: hundreds of lines around kbatch's own one-paragraph
error. Here they are written to ``kbatch-client-<pid>.log`` in the temp directory (0600,
created at the first line) and counted; the CLI prints one line at exit saying how many
there were and where they are. librdkafka's and the Java producer's logs are handled where
those clients start (a NullHandler; the driver's stderr file).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import IO

THIRD_PARTY_LOGGERS = ("aiokafka", "kafka", "py4j")


class _ToFile(logging.Handler):
    """Writes records to a private file opened at the first one, and counts them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0
        self.path: Path | None = None
        self._file: IO[str] | None = None
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._file is None:
                path = Path(tempfile.gettempdir()) / f"kbatch-client-{os.getpid()}.log"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW,
                             0o600)
                self._file = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
                self.path = path
            self._file.write(self.format(record) + "\n")
            self._file.flush()
            self.count += 1
        except Exception:  # noqa: BLE001 - a log line must never break a run
            self.handleError(record)

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        super().close()


_HANDLER: _ToFile | None = None


def capture_client_logs() -> None:
    """Route the third-party loggers to the file (idempotent)."""
    global _HANDLER
    if _HANDLER is None:
        _HANDLER = _ToFile()
    for name in THIRD_PARTY_LOGGERS:
        logger = logging.getLogger(name)
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)
        logger.propagate = False


def client_log_summary() -> str | None:
    """One line saying how many client log lines there were and where, or None."""
    if _HANDLER is None or not _HANDLER.count or _HANDLER.path is None:
        return None
    lines = "line" if _HANDLER.count == 1 else "lines"
    return (f"The Kafka client libraries logged {_HANDLER.count:,} {lines} (connection "
            f"attempts and the like), kept out of this output: {_HANDLER.path}")
