"""The per-client token bucket, driven by a fake clock."""

from __future__ import annotations

from indexfoundry.surfaces.http.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_gets_its_burst_at_once_then_waits_one_interval():
    clock = Clock()
    limiter = RateLimiter(60, 10, clock=clock)
    assert [limiter.acquire("a") for _ in range(10)] == [0.0] * 10
    wait = limiter.acquire("a")
    assert abs(wait - 1.0) < 1e-9  # 60 per minute: one per second
    clock.now += wait
    assert limiter.acquire("a") == 0.0


def test_the_sustained_rate_never_exceeds_requests_per_minute():
    clock = Clock()
    limiter = RateLimiter(120, 5, clock=clock)
    allowed = 0
    for _ in range(6000):  # a client retrying every 10 ms for 60 s
        if limiter.acquire("a") == 0.0:
            allowed += 1
        clock.now += 0.01
    assert allowed <= 120 + 5
    assert allowed >= 120


def test_clients_are_limited_independently():
    clock = Clock()
    limiter = RateLimiter(60, 1, clock=clock)
    assert limiter.acquire("a") == 0.0
    assert limiter.acquire("a") > 0
    assert limiter.acquire("b") == 0.0


def test_the_client_table_is_bounded_by_forgetting_the_least_recent():
    clock = Clock()
    limiter = RateLimiter(60, 1, max_clients=3, clock=clock)
    for name in "abcd":
        assert limiter.acquire(name) == 0.0
    assert limiter.acquire("a") == 0.0  # forgotten, so it starts with a fresh bucket
    assert limiter.acquire("d") > 0
