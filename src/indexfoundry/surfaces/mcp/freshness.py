"""What ``check_freshness`` may cost an MCP server: a reuse interval and a per-minute source budget.

Each source still to check is charged one unit of a budget of ``per_minute`` sources a minute
(all of it available at once); a check made within ``reuse_s`` seconds (default 300) is
answered again at no cost. A call the budget cannot pay for at all is ``RATE_LIMITED`` with the
seconds to wait; one it pays for in part checks that part and says ``limited``. So ten calls
in a row cost at most one sweep of the run's sources.
"""

from __future__ import annotations

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.http.ratelimit import RateLimiter

DEFAULT_REUSE_S = 300.0
DEFAULT_PER_MINUTE = 120


class FreshnessGate:
    """The reuse cache and the source budget of one MCP server's ``check_freshness``."""

    def __init__(self, reuse_s: float = DEFAULT_REUSE_S, per_minute: int = DEFAULT_PER_MINUTE) -> None:
        self.cache = api.FreshnessCache(reuse_s)
        self.limiter = RateLimiter(per_minute, per_minute) if per_minute > 0 else None

    def budget(self, wanted: int) -> int:
        """Pay for up to ``wanted`` checks; RATE_LIMITED when none can be paid for now."""
        if self.limiter is None:
            return wanted
        granted, wait = self.limiter.take("mcp", wanted)
        if granted == 0:
            raise IndexFoundryError(
                f"checking {wanted} source(s) would go over this server's freshness budget",
                code="RATE_LIMITED",
                recoverable=True,
                suggestion=f"Retry in {max(1, round(wait))} s, or check fewer sources (paths, sample)",
                details={"retry_after_s": round(wait, 3)},
            )
        return granted
