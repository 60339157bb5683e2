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
        granted, wait = self.take(client, 1)
        return 0.0 if granted else wait

    def take(self, client: str, wanted: int) -> tuple[int, float]:
        """Spend up to ``wanted`` requests' worth of ``client``'s allowance at once (a check of
        ``wanted`` sources): (how many were granted, seconds until one more would be; 0 if any)."""
        if wanted <= 0:
            return 0, 0.0
        now = self._clock()
        capacity = self.interval * self.burst
        with self._lock:
            tat = max(self._tat.get(client, now), now)
            free = int((capacity - (tat - now)) / self.interval + 1e-9)
            granted = min(wanted, free)
            if granted <= 0:  # only a client that spent its allowance is refused: it has an entry
                self._tat.move_to_end(client)
                return 0, (tat - now) - (capacity - self.interval)
            self._tat[client] = tat + granted * self.interval
            self._tat.move_to_end(client)
            while len(self._tat) > self.max_clients:
                self._tat.popitem(last=False)
            return granted, 0.0
