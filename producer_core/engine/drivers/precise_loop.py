"""An asyncio event loop whose timers fire within microseconds, not whole milliseconds.

On Linux asyncio waits in `selectors.EpollSelector.select`, which rounds every timeout *up*
to a whole millisecond (epoll_wait takes milliseconds). The engine sleeps until the next
message is due or the next linger deadline, so each wake came 0-1 ms late: at 2,000 msg/s
messages were appended in pairs up to 1 ms after their time, and a 5 ms linger lasted
6 ms, which made mode `java` batch more than the Java producer it emulates (issue #18).
`select(2)` takes microseconds: waiting on the epoll descriptor itself with select() and
then collecting the events with a zero-timeout epoll_wait keeps epoll for the sockets and
gets microsecond timers. Where that cannot work (no epoll, or a descriptor past select's
FD_SETSIZE) the loop waits as asyncio's default does.
"""

from __future__ import annotations

import asyncio
import select
import selectors
from typing import Any

FD_SETSIZE = 1024
"""select(2) cannot watch a descriptor at or above this."""


if hasattr(selectors, "EpollSelector"):

    class PreciseEpollSelector(selectors.EpollSelector):
        """EpollSelector whose waits are as long as asked, to the microsecond."""

        def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
            fd = self.fileno()
            if timeout is not None and timeout > 0 and fd < FD_SETSIZE:
                select.select([fd], [], [], timeout)  # readable when an event is pending
                timeout = 0
            return super().select(timeout)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """An event loop with microsecond timers where the platform allows, else the default."""
    if hasattr(selectors, "EpollSelector"):
        return asyncio.SelectorEventLoop(PreciseEpollSelector())
    return asyncio.new_event_loop()
