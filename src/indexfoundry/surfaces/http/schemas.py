"""What the routers share in the spec: the documented error answers, and the search request body
built for a server's limits and allowed filters (so the spec states the real limits).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, StrictStr, create_model

from indexfoundry.models.retrieval import AllowedFilter, SearchFilter, SearchRequest
from indexfoundry.surfaces.http.errors import ErrorEnvelope
from indexfoundry.surfaces.http.settings import HttpSettings

HEX_ID = r"^[0-9a-f]{64}$"

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorEnvelope, "description": "Invalid request (CONFIG_INVALID)"},
    401: {"model": ErrorEnvelope, "description": "Missing or invalid API key (AUTH_REQUIRED)"},
    403: {"model": ErrorEnvelope, "description": "The key may not search this namespace (AUTH_REQUIRED)"},
    413: {"model": ErrorEnvelope, "description": "Request body too large (REQUEST_TOO_LARGE)"},
    429: {
        "model": ErrorEnvelope,
        "description": "Rate limited (RATE_LIMITED); see Retry-After",
        "headers": {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}},
    },
    500: {"model": ErrorEnvelope, "description": "Internal error (INTERNAL_ERROR)"},
    503: {"model": ErrorEnvelope, "description": "No run loaded yet, or the store is unavailable"},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorEnvelope, "description": "No such document or chunk (NOT_FOUND)"}
}


def _json_integer(value: Any) -> Any:
    """JSON Schema's integer: 3 and 3.0 yes; true, "3" and 3.5 no (pydantic's lax int takes the first two)."""
    if isinstance(value, bool | str):
        raise ValueError("must be an integer")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
Scalar = StrictStr | StrictInt | StrictFloat | StrictBool
Number = StrictInt | StrictFloat
_VALUE_KINDS: tuple[tuple[frozenset[str], Any, str], ...] = (
    (frozenset({"eq", "neq", "contains"}), Scalar, "A string, number or boolean"),
    (frozenset({"gt", "gte", "lt", "lte"}), Number, "A number"),
    (
        frozenset({"in"}),
        # One type per list: stores compare lists of a single type (the service refuses mixed lists).
        Annotated[list[StrictStr], Field(min_length=1)]
        | Annotated[list[Number], Field(min_length=1)]
        | Annotated[list[StrictBool], Field(min_length=1)],
        "A non-empty list of values of one type (strings, numbers or booleans)",
    ),
)


def filter_item_type(allowed: list[AllowedFilter]) -> Any:
    """The filter item of the search body: one variant per allowed field and kind of operator,
    so the spec states exactly which filters the run accepts (the retrieval profile's list)."""
    variants: list[Any] = []
    for flt in allowed:
        for ops, value_type, value_doc in _VALUE_KINDS:
            chosen = sorted(set(flt.operators) & ops)
            if not chosen:
                continue
            name = "Filter_" + "".join(ch if ch.isalnum() else "_" for ch in flt.field) + "_" + "_".join(chosen)
            variants.append(
                create_model(
                    name,
                    __config__=SearchFilter.model_config,
                    field=(Literal[flt.field], Field(description="Metadata field")),  # type: ignore[arg-type]
                    op=(Literal[tuple(chosen)], Field(description="Operator")),  # type: ignore[arg-type]
                    value=(value_type, Field(description=value_doc)),
                )
            )
    if not variants:
        return SearchFilter
    union: Any = variants[0]
    for variant in variants[1:]:
        union = union | variant
    return union


def search_body_model(settings: HttpSettings) -> type[BaseModel]:
    """The search request body: ``SearchRequest`` without ``mode`` (the path says it), with the
    server's configured query-length and top_k limits, so the spec states the real limits."""
    fields: dict[str, Any] = {}
    for name, info in SearchRequest.model_fields.items():
        if name == "mode":
            continue
        fields[name] = (info.annotation, info)
    if settings.allowed_filters is not None:
        filters = SearchRequest.model_fields["filters"]
        item = filter_item_type(settings.allowed_filters)
        fields["filters"] = (list[item], Field(default_factory=list, description=filters.description))  # type: ignore[valid-type]
    fields["query"] = (
        str,
        Field(
            min_length=1,
            max_length=settings.max_query_chars,
            description=SearchRequest.model_fields["query"].description,
        ),
    )
    top_k = SearchRequest.model_fields["top_k"]
    fields["top_k"] = (
        JsonInt,
        Field(default=top_k.default, ge=1, le=settings.max_top_k, description=top_k.description),
    )
    offset = SearchRequest.model_fields["offset"]
    fields["offset"] = (JsonInt, Field(default=offset.default, ge=0, le=1000, description=offset.description))
    model: type[BaseModel] = create_model(
        "SearchBody",
        __config__=SearchRequest.model_config,
        __doc__="Search request: query, top_k, filters (ANDed), offset for paging.",
        **fields,
    )
    return model
