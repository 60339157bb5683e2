"""Parallel extraction in worker processes, each document under a time and a memory limit.

Every document is one job (``run_job``), handed by the phase to the run's executor
(``map_limited``: the local executor's warm pool of limited workers, ``phases/isolation.py``) with
``extract.workers`` processes (default: the number of cores; ``0`` runs in the calling
process without limits), ``extract.timeout_s`` and ``extract.memory_mb``. A job stopped at
a limit becomes a PARSE_ERROR saying why, and the other documents go on. Results are keyed
by job, so the caller writes them in its own (sorted) order: output is byte-identical
whatever the number of workers.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from indexfoundry.errors import IndexFoundryError, ParseError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, Unsupported, extract_bytes
from indexfoundry.phases.isolation import IsolationPool, Limits, Stopped, preload, run_isolated
from indexfoundry.phases.isolation import default_workers as default_workers

# Modules imported once in the fork server, so each worker starts with them loaded.
preload(
    [
        "indexfoundry.phases.extract.workers",
        "indexfoundry.phases.extract.dispatch",
        "indexfoundry.phases.extract.pdf",
        "indexfoundry.phases.extract.pdflayout",
        "indexfoundry.phases.extract.ocr",
        "indexfoundry.phases.extract.html",
        "indexfoundry.phases.extract.docx",
        "indexfoundry.phases.extract.tabular",
        "pdfminer.pdfinterp",
        "pdfminer.converter",
        "pypdfium2",
        "docx",
        "bs4",
        "lxml.etree",
        "markdownify",
    ]
)


@dataclass(frozen=True)
class ExtractJob:
    """One raw file to extract; ``key`` identifies it in the results."""

    key: int
    path: str
    raw: RawRecord
    config: PipelineConfig
    options: ExtractOptions = field(default_factory=ExtractOptions)
    # The raw bytes, when they travel with the job (a Ray worker without the runs folder).
    data: bytes | None = None


@dataclass
class ExtractResult:
    """What became of one job: documents, an unsupported type, or an error."""

    items: list[ExtractedText] = field(default_factory=list)
    unsupported: str | None = None
    error: IndexFoundryError | None = None
    seconds: float = 0.0


def run_job(job: ExtractJob) -> ExtractResult:
    """Extract one file, turning every failure into a result (the isolation boundary of a job)."""
    start = time.monotonic()
    uri = job.raw.uri
    try:
        data = job.data if job.data is not None else Path(job.path).read_bytes()
        items = extract_bytes(data, job.raw, job.config, job.options)
        result = ExtractResult(items=items)
    except Unsupported as exc:
        result = ExtractResult(unsupported=str(exc))
    except IndexFoundryError as error:
        result = ExtractResult(error=error)
    except MemoryError:
        result = ExtractResult(
            error=ParseError(
                f"{uri} needs more memory than the limit (extract.memory_mb = {job.config.extract.memory_mb})",
                suggestion="Raise extract.memory_mb, or exclude the file",
                details={"uri": uri, "limit": "memory"},
            )
        )
    except RecursionError:
        result = ExtractResult(
            error=ParseError(
                f"{uri} is nested too deeply to parse", suggestion="Exclude the file", details={"uri": uri}
            )
        )
    except OSError as exc:
        result = ExtractResult(
            error=ParseError(
                f"cannot read {uri}: {exc}", suggestion="Check the run's raw/ folder", details={"uri": uri}
            )
        )
    except Exception as exc:  # the job boundary: a parser bug on one file must not end the run
        result = ExtractResult(
            error=ParseError(
                f"{uri} could not be extracted: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                suggestion="The file is probably malformed; exclude it or report the problem with this file",
                details={"uri": uri, "traceback": traceback.format_exc(limit=8)},
            )
        )
    result.seconds = round(time.monotonic() - start, 3)
    return result


def _killed(job: ExtractJob, stopped: Stopped) -> ExtractResult:
    cfg = job.config.extract
    hint = (
        "Raise extract.timeout_s, or exclude the file"
        if stopped.limit == "time"
        else "Raise extract.memory_mb, or exclude the file"
    )
    return ExtractResult(
        error=ParseError(
            f"{job.raw.uri}: extraction {stopped.reason}",
            suggestion=hint,
            details={
                "uri": job.raw.uri,
                "limit": stopped.limit,
                "timeout_s": cfg.timeout_s,
                "memory_mb": cfg.memory_mb,
            },
        )
    )


def outcome_of(job: ExtractJob, outcome: ExtractResult | Stopped) -> ExtractResult:
    """A job's result; a job stopped at a limit is a PARSE_ERROR saying which."""
    return outcome if isinstance(outcome, ExtractResult) else _killed(job, outcome)


def run_jobs(
    jobs: Iterable[ExtractJob],
    workers: int,
    timeout_s: float,
    memory_mb: int,
    on_done: Callable[[ExtractJob, ExtractResult], None] | None = None,
    pool: IsolationPool | None = None,
) -> dict[int, ExtractResult]:
    """Run ``jobs`` in ``workers`` processes (0: here, in order); results keyed by ``job.key``.
    Without a ``pool`` (an executor's: ``LocalExecutor.pool``) the workers last for this call."""
    results: dict[int, ExtractResult] = {}

    def done(job: ExtractJob, outcome: ExtractResult | Stopped) -> None:
        results[job.key] = result = outcome_of(job, outcome)
        if on_done is not None:
            on_done(job, result)

    run_isolated(jobs, run_job, Limits(workers, timeout_s, memory_mb), on_done=done, pool=pool)
    return results
