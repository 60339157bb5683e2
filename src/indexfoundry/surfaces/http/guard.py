"""Who may call the API: authentication, the namespace check and the rate limit (``Guard``), and
the dependencies that hand a route the caller's key or the served run, leased and checked.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the dependencies' signatures at runtime.
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError, RunNotFound
from indexfoundry.surfaces.http.auth import KeyRing, Principal, auth_error, presented_key
from indexfoundry.surfaces.http.errors import HttpProblem, retry_after_header
from indexfoundry.surfaces.http.holder import RunHolder
from indexfoundry.surfaces.http.ratelimit import RateLimiter
from indexfoundry.surfaces.http.settings import HttpSettings

DEFAULT_NAMESPACE = "default"

api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key")
bearer_scheme = HTTPBearer(auto_error=False, description="API key as a bearer token")


class Guard:
    """Authentication, namespace check and rate limiting for the API endpoints."""

    def __init__(self, settings: HttpSettings, holder: RunHolder) -> None:
        self.settings = settings
        self.holder = holder
        self.keys = KeyRing([])
        rl = settings.rate_limit
        self.limiter = RateLimiter(rl.requests_per_minute, rl.burst) if rl.enabled else None

    def load_keys(self) -> None:
        self.keys = KeyRing.load(self.settings.api_keys_env, self.settings.api_key_file)

    def auth_required(self, run: api.Run | None) -> bool:
        return self.settings.require_auth or (run is not None and run.profile.security.require_auth)

    def served(self, run: api.Run | None) -> api.Run:
        if run is None:
            error = RunNotFound(
                "no completed run is being served yet",
                recoverable=True,
                suggestion="Complete a pipeline run; the server loads it within seconds",
            )
            raise HttpProblem(503, error, retry_after_header(self.holder.reload_interval_s))
        return run

    def check(self, request: Request, key: str | None, leased: api.Run | None) -> api.Run:
        run = self.served(leased)
        principal = self.client(request, key, run)
        self.admit(run, principal)
        return run

    def client(self, request: Request, key: str | None, run: api.Run | None = None) -> Principal | None:
        """Rate limit the caller and authenticate its key (required by the server, or ``run``)."""
        principal: Principal | None = self.keys.authenticate(key) if key else None
        request.state.principal = principal.name if principal else None
        client = self.client_id(request)
        if self.limiter is not None:
            wait = self.limiter.acquire(client)
            if wait > 0:
                error = IndexFoundryError(
                    "too many requests",
                    code="RATE_LIMITED",
                    recoverable=True,
                    suggestion=f"Retry after {retry_after_header(wait)['Retry-After']} s",
                )
                raise HttpProblem(429, error, retry_after_header(wait))
        if self.auth_required(run) and principal is None:
            raise HttpProblem(401, auth_error(), {"WWW-Authenticate": "Bearer"})
        return principal

    @staticmethod
    def client_id(request: Request) -> str:
        """Whom the rate limit counts: the key's name, else the connecting address."""
        principal = getattr(request.state, "principal", None)
        return f"key:{principal}" if principal else f"ip:{request.client.host if request.client else '-'}"

    def admit(self, run: api.Run, principal: Principal | None) -> None:
        """May ``principal`` read ``run``: its profile's key requirement and namespaces."""
        if self.auth_required(run) and principal is None:
            raise HttpProblem(401, auth_error(), {"WWW-Authenticate": "Bearer"})
        namespace = run.namespace or DEFAULT_NAMESPACE
        allowed = run.profile.security.allowed_namespaces
        if (allowed is not None and namespace not in allowed) or (
            principal is not None and principal.namespaces is not None and namespace not in principal.namespaces
        ):
            error = IndexFoundryError(
                f"searching namespace '{namespace}' is not allowed",
                code="AUTH_REQUIRED",
                suggestion="Use a key allowed for this namespace (security.allowed_namespaces)",
            )
            raise HttpProblem(403, error)


def request_key(
    x_api_key: Annotated[str | None, Depends(api_key_header)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> str | None:
    """The dependency giving a route the key its request carries (``X-API-Key`` or a bearer token);
    both schemes appear in the spec's security requirements."""
    return presented_key(f"Bearer {bearer.credentials}" if bearer else None, x_api_key)


RequestKey = Annotated[str | None, Depends(request_key)]


def served_run(request: Request, key: RequestKey) -> Iterator[api.Run]:
    """The dependency giving a route the served run: leased from the app's ``RunHolder`` for the
    request and checked by its ``Guard`` (rate limit, key, namespace) before the route runs."""
    holder: RunHolder = request.app.state.holder
    guard: Guard = request.app.state.guard
    with holder.leased() as leased:
        yield guard.check(request, key, leased)


Served = Annotated[api.Run, Depends(served_run)]
