"""Choosing and opening the executor a run's phases hand their per-item work to.

The seam itself (``Executor``, ``LocalExecutor``) is the phases' (``phases/executor.py``): a phase
only sees that interface. The pipeline picks the one ``execution`` names and opens it before the
run exists: ``LocalExecutor`` here, or ``RayExecutor`` (``pipeline/ray_executor.py``, extra
``ray``) on a Ray cluster.
"""

from __future__ import annotations

from indexfoundry.errors import ConfigInvalid, missing_extra
from indexfoundry.models.config import ExecutionConfig
from indexfoundry.phases.executor import Executor, LocalExecutor


def open_executor(config: ExecutionConfig) -> Executor:
    """The executor ``execution`` names, connected (a Ray cluster that cannot be reached is a
    CONFIG_INVALID naming its address, raised before any phase runs)."""
    if config.engine == "local":
        return LocalExecutor()
    if config.engine == "ray":
        try:
            from indexfoundry.pipeline.ray_executor import RayExecutor
        except ImportError as exc:
            if exc.name is not None and exc.name.split(".")[0] == "ray":
                raise missing_extra("ray", "ray", "the ray executor (execution.engine: ray)") from None
            raise
        return RayExecutor(config)
    raise ConfigInvalid(f"unknown execution engine '{config.engine}'", suggestion="Use local or ray")
