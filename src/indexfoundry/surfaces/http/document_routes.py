"""``GET /documents/{doc_id}`` and ``GET /chunks/{chunk_id}``: one document of the served run
(with its chunks in order) or one chunk, by content-addressed id."""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime.
from typing import Annotated

from fastapi import APIRouter, Path, Query

from indexfoundry.models.records import DocumentChunk
from indexfoundry.models.serve import DocumentView
from indexfoundry.surfaces.http.guard import Served
from indexfoundry.surfaces.http.schemas import ERROR_RESPONSES, HEX_ID, NOT_FOUND


def document_router(base: str, wanted: set[str]) -> APIRouter:
    """The document and chunk endpoints among ``wanted``."""
    router = APIRouter()
    if "get_document" in wanted:

        @router.get(
            f"{base}/documents/{{doc_id}}",
            response_model=DocumentView,
            response_model_exclude_none=True,
            responses={**ERROR_RESPONSES, **NOT_FOUND},
            operation_id="get_document",
            tags=["documents"],
        )
        def get_document(
            doc_id: Annotated[str, Path(pattern=HEX_ID, description="Document id")],
            run: Served,
            include_text: Annotated[bool, Query(description="Include the extracted text")] = False,
        ) -> DocumentView:
            """One document of the served run, with its chunks in order."""
            return run.document(doc_id, include_text=include_text)

    if "get_chunk" in wanted:

        @router.get(
            f"{base}/chunks/{{chunk_id}}",
            response_model=DocumentChunk,
            response_model_exclude_none=True,
            responses={**ERROR_RESPONSES, **NOT_FOUND},
            operation_id="get_chunk",
            tags=["documents"],
        )
        def get_chunk(
            chunk_id: Annotated[str, Path(pattern=HEX_ID, description="Chunk id")], run: Served
        ) -> DocumentChunk:
            """One chunk of the served run (the canonical DocumentChunk record)."""
            return run.chunk(chunk_id)

    return router
