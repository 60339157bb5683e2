"""``GET /stats`` (what is served: the run, its counts, model, modes and filters) and
``GET /health`` (liveness and which run is served; never needs a key)."""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime.
from fastapi import APIRouter

from indexfoundry import __version__
from indexfoundry.models.serve import HealthView, StatsView
from indexfoundry.surfaces.http.guard import Guard, Served
from indexfoundry.surfaces.http.holder import RunHolder
from indexfoundry.surfaces.http.schemas import ERROR_RESPONSES


def service_router(base: str, wanted: set[str], holder: RunHolder, guard: Guard, serves_libraries: bool) -> APIRouter:
    """The service endpoints among ``wanted``; a server of many libraries is healthy with no run."""
    router = APIRouter()
    if "stats" in wanted:

        @router.get(
            f"{base}/stats",
            response_model=StatsView,
            response_model_exclude_none=True,
            responses=ERROR_RESPONSES,
            operation_id="stats",
            tags=["service"],
        )
        def stats(run: Served) -> StatsView:
            """What is served: the run, its counts, model, search modes and filters."""
            return run.stats()

    if "health" in wanted:

        @router.get(
            f"{base}/health",
            response_model=HealthView,
            response_model_exclude_none=True,
            responses={500: ERROR_RESPONSES[500]},
            operation_id="health",
            tags=["service"],
        )
        def health() -> HealthView:
            """Liveness, and which run is served (never needs a key)."""
            current = holder.current
            return HealthView(
                status="ok" if current is not None or serves_libraries else "waiting",
                run_id=current.id if current is not None else None,
                version=__version__,
                auth_required=guard.auth_required(current),
            )

    return router
