"""One exception tree for IndexFoundry.

Every error carries one of the error codes (docs/design.md, "Error codes"), whether it can be
retried, and a suggestion for what to do next. The three surfaces (CLI, HTTP, MCP) map these to
exit codes, HTTP statuses and the ``ToolError`` shape; nothing else catches broadly.
"""

from __future__ import annotations

import errno
from typing import Any, Literal, get_args

ErrorCode = Literal[
    "FETCH_FAILED",
    "FETCH_TIMEOUT",
    "DOMAIN_BLOCKED",
    "FILE_TOO_LARGE",
    "PARSE_ERROR",
    "OCR_FAILED",
    "EMPTY_CONTENT",
    "CHUNK_ERROR",
    "EMBED_ERROR",
    "DB_ERROR",
    "CONFIG_INVALID",
    "RUN_NOT_FOUND",
    # Runs, servers, reranking and the unexpected (docs/design.md, "Error codes").
    "RUN_LOCKED",
    "RUN_SHRANK",
    "NOT_FOUND",
    "AUTH_REQUIRED",
    "RATE_LIMITED",
    "REQUEST_TOO_LARGE",
    "RERANK_ERROR",
    "INTERNAL_ERROR",
]

ERROR_CODES: tuple[str, ...] = get_args(ErrorCode)

# CLI exit codes: 2 for what the user must fix in their input, 3 for a missing run or
# object, 4 for work that failed and may succeed when retried, 1 for everything else.
_EXIT_CODES: dict[str, int] = {
    "CONFIG_INVALID": 2,
    "RUN_NOT_FOUND": 3,
    "NOT_FOUND": 3,
    "RUN_LOCKED": 4,
}


class IndexFoundryError(Exception):
    """Base of every error IndexFoundry raises on purpose."""

    code: ErrorCode = "INTERNAL_ERROR"
    recoverable: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        recoverable: bool | None = None,
        suggestion: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if recoverable is not None:
            self.recoverable = recoverable
        self.suggestion = suggestion
        self.details = details or {}

    @property
    def exit_code(self) -> int:
        """Process exit code the CLI uses for this error."""
        return _EXIT_CODES.get(self.code, 1)

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` object of a ``ToolError``: code, message, details, recoverable, suggestion."""
        out: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "recoverable": self.recoverable,
        }
        if self.suggestion:
            out["suggestion"] = self.suggestion
        if self.details:
            out["details"] = self.details
        return out

    def one_line(self) -> str:
        """``CODE: message (suggestion)`` on one line, for the terminal and logs."""
        text = f"{self.code}: {self.message}"
        if self.suggestion:
            text += f" — {self.suggestion}"
        return " ".join(text.split())


class ConfigInvalid(IndexFoundryError):
    code: ErrorCode = "CONFIG_INVALID"


class RunNotFound(IndexFoundryError):
    code: ErrorCode = "RUN_NOT_FOUND"


class RunLocked(IndexFoundryError):
    code: ErrorCode = "RUN_LOCKED"
    recoverable = True


class NotFound(IndexFoundryError):
    code: ErrorCode = "NOT_FOUND"


class FetchFailed(IndexFoundryError):
    code: ErrorCode = "FETCH_FAILED"
    recoverable = True


class FetchTimeout(IndexFoundryError):
    code: ErrorCode = "FETCH_TIMEOUT"
    recoverable = True


class DomainBlocked(IndexFoundryError):
    code: ErrorCode = "DOMAIN_BLOCKED"


class FileTooLarge(IndexFoundryError):
    code: ErrorCode = "FILE_TOO_LARGE"


class ParseError(IndexFoundryError):
    code: ErrorCode = "PARSE_ERROR"


class OcrFailed(IndexFoundryError):
    code: ErrorCode = "OCR_FAILED"


class EmptyContent(IndexFoundryError):
    code: ErrorCode = "EMPTY_CONTENT"


class ChunkError(IndexFoundryError):
    code: ErrorCode = "CHUNK_ERROR"


class EmbedError(IndexFoundryError):
    code: ErrorCode = "EMBED_ERROR"


class RerankError(IndexFoundryError):
    """A reranker could not score; search falls back to the retrieval order with a warning."""

    code: ErrorCode = "RERANK_ERROR"
    recoverable = True


class DbError(IndexFoundryError):
    code: ErrorCode = "DB_ERROR"


def missing_extra(package: str, extra: str, feature: str) -> ConfigInvalid:
    """Error for an optional integration whose extra is not installed."""
    return ConfigInvalid(
        f"{feature} needs the '{package}' package, which is not installed",
        suggestion=f"pip install 'indexfoundry[{extra}]'",
    )


# errno values of a write that failed because the disk, a quota or a file size limit is full.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


# SQLite primary result codes of a failed write: SQLITE_IOERR (10) and SQLITE_FULL (13).
_SQLITE_STORAGE_CODES = frozenset({10, 13})


def storage_full(exc: BaseException) -> IndexFoundryError | None:
    """The error for a write that failed because storage is full (``None`` for any other error).

    Covers OSError (ENOSPC, EFBIG, EDQUOT) and SQLite's I/O and disk-full errors. Recoverable:
    once space is back, rerunning the same run resumes it (completed phases are skipped; a
    phase without its manifest entry is redone).
    """
    if isinstance(exc, OSError):
        if exc.errno not in DISK_FULL_ERRNOS:
            return None
        what = f"{exc.filename or 'a run file'}: {exc.strerror or exc}"
    elif (int(getattr(exc, "sqlite_errorcode", -1)) & 0xFF) in _SQLITE_STORAGE_CODES:
        what = f"a SQLite database: {exc}"
    else:
        return None
    return IndexFoundryError(
        f"cannot write {what} (disk full or file size limit reached)",
        code="INTERNAL_ERROR",
        recoverable=True,
        suggestion="Free disk space or raise the file size limit, then rerun the same run (--run-id) to resume it",
        details={"errno": exc.errno} if isinstance(exc, OSError) else {"sqlite_errorcode": exc.sqlite_errorcode},  # type: ignore[attr-defined]
    )
