"""``POST /freshness``: which sources of the served run changed, at a cost the caller pays.

- A key is required whenever the server has keys configured (even with ``require_auth`` off):
  each check makes requests to the run's sources, so an anonymous caller gets none.
- Every source still to check is charged to the caller's rate limit, one request's worth
  each (on top of the request itself); the limit may pay for fewer (the rest are reported
  unchecked and the answer says ``limited``) or for none (429 with ``Retry-After``).
- A source checked less than ``serve.freshness_reuse_s`` seconds ago (default 300) is answered
  from that check: repeated calls cost at most one sweep of the sources per interval.
"""

# No ``from __future__ import annotations``: FastAPI reads the route signature at runtime.
from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, BeforeValidator, Field, StrictStr

from indexfoundry import api
from indexfoundry.api import FreshnessReport
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.retrieval import SearchRequest
from indexfoundry.surfaces.http.auth import auth_error
from indexfoundry.surfaces.http.errors import HttpProblem, retry_after_header
from indexfoundry.surfaces.http.guard import Guard, Served
from indexfoundry.surfaces.http.schemas import ERROR_RESPONSES
from indexfoundry.surfaces.http.settings import HttpSettings


def _json_number(value: Any) -> Any:
    """JSON Schema's number: 3 and 0.5 yes; true and "0.5" no."""
    if isinstance(value, bool | str):
        raise ValueError("must be a number")
    return value


JsonNumber = Annotated[float, BeforeValidator(_json_number)]


class FreshnessBody(BaseModel):
    """Which sources to check, and how long the check may take."""

    model_config = SearchRequest.model_config

    # At most 25 uris of 512 characters: a body the spec allows always fits the default 16 KiB body
    # limit (a larger list would be refused with 413 although the spec allowed it).
    uris: Annotated[list[Annotated[StrictStr, Field(min_length=1, max_length=512)]], Field(max_length=25)] | None = (
        Field(default=None, description="Only these sources (results' source.uri); default: every source of the run")
    )
    sample: Annotated[float, Field(gt=0, le=1), BeforeValidator(_json_number)] | None = Field(
        default=None, description="Check this share of the sources (the same ones each time)"
    )
    max_seconds: JsonNumber = Field(
        default=20, gt=0, le=60, description="Time limit; sources left unchecked set timed_out"
    )


def freshness_router(settings: HttpSettings, guard: Guard) -> APIRouter:
    """``POST {base}/freshness``, checking with one reuse cache per app."""
    router = APIRouter()
    cache = api.FreshnessCache(settings.freshness_reuse_s)

    def budget_for(client: str) -> Any:
        def budget(wanted: int) -> int:
            if guard.limiter is None:
                return wanted
            granted, wait = guard.limiter.take(client, wanted)
            if granted == 0:
                error = IndexFoundryError(
                    f"checking {wanted} source(s) needs more of this client's rate limit than is left",
                    code="RATE_LIMITED",
                    recoverable=True,
                    suggestion=f"Retry after {retry_after_header(wait)['Retry-After']} s, or check fewer sources",
                )
                raise HttpProblem(429, error, retry_after_header(wait))
            return granted

        return budget

    @router.post(
        f"{settings.base_path}/freshness",
        response_model=FreshnessReport,
        response_model_exclude_none=True,
        responses=ERROR_RESPONSES,
        operation_id="check_freshness",
        tags=["service"],
    )
    def check_freshness(body: FreshnessBody, run: Served, request: Request) -> FreshnessReport:
        """Which sources of the served run changed since it read them: files by hash, URLs by a
        conditional request (ETag / Last-Modified) through the run's SSRF-guarded fetcher, within
        max_seconds, optionally on a deterministic sample. Needs a key when the server has keys;
        each source checked costs one request of the caller's rate limit; a check made within
        the reuse interval is answered again (reused)."""
        principal = getattr(request.state, "principal", None)
        if principal is None and len(guard.keys):
            raise HttpProblem(401, auth_error(), {"WWW-Authenticate": "Bearer"})
        return api.check_freshness(
            run.id,
            runs_dir=run.runs_dir,
            uris=body.uris,
            sample=body.sample,
            max_seconds=body.max_seconds,
            cache=cache,
            budget=budget_for(guard.client_id(request)),
        )

    return router
