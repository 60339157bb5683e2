"""Per-client rate limiting: a token bucket (GCRA form) per client key.

Each client may make ``burst`` requests at once and ``requests_per_minute`` sustained. A
refused request learns when to retry (``Retry-After``). The table of clients is bounded: the
least recently seen clients are forgotten first, which only ever makes the limiter kinder.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class RateLimiter:
    """Thread-safe token buckets keyed by client."""

    def __init__(
        self,
        requests_per_minute: int,
        burst: int,
        *,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = 60.0 / requests_per_minute  # seconds between two sustained requests
        self.burst = burst
        self.max_clients = max_clients
        self._clock = clock
        # Per client: the "theoretical arrival time" of the next request under the sustained rate.
        self._tat: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def acquire(self, client: str) -> float:
        """0.0 if the request may go ahead, else the seconds to wait before retrying."""
        now = self._clock()
        tolerance = self.interval * (self.burst - 1)
        with self._lock:
            tat = max(self._tat.get(client, now), now)
            allowed_at = tat - tolerance
            if now < allowed_at:
                self._tat.move_to_end(client)
                return allowed_at - now
            self._tat[client] = tat + self.interval
            self._tat.move_to_end(client)
            while len(self._tat) > self.max_clients:
                self._tat.popitem(last=False)
            return 0.0
