"""Request and response bodies of the serving API (pydantic).

The /search request model is built from the `serve` params section, so its bounds (k, query
length) are enforced by validation and appear in the OpenAPI schema.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from uniret.config.serving import ServeConfig


class SearchRequestBase(BaseModel):
    """Fields shared by every configured /search request model."""

    model_config = ConfigDict(extra="forbid")

    query: str
    mode: str | None = None
    k: int

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must contain non-whitespace text")
        return value


def search_request_model(cfg: ServeConfig) -> type[SearchRequestBase]:
    """The /search request model with this server's bounds on k and on the query length."""

    class SearchRequest(SearchRequestBase):
        query: str = Field(min_length=1, max_length=cfg.max_query_chars, description="query text")
        mode: str | None = Field(
            default=None, description=f"retrieval mode offered by the bundle (default {cfg.default_mode or 'the bundle recipe mode'})"
        )
        # strict: "5" or true is a client bug, not a number of documents
        k: int = Field(default=cfg.default_k, ge=1, le=cfg.max_k, strict=True, description="number of documents returned")
        query_id: str | None = Field(default=None, min_length=1, max_length=128, pattern=r"\S",
                                     description="the client's id for this answer (UBI); default: a new UUID")
        client_id: str | None = Field(default=None, min_length=1, max_length=128, pattern=r"\S",
                                      description="who searched (UBI client_id); default: anonymous")

    return SearchRequest


class Hit(BaseModel):
    """One retrieved document."""

    doc_id: str
    score: float


class SearchResponse(BaseModel):
    """Top-k documents, best first, with the bundle version that produced them."""

    query: str
    query_id: str  # the client's, or a new UUID: events about this answer name it
    mode: str
    k: int
    version: str
    took_ms: float
    results: list[Hit]


class EventsResponse(BaseModel):
    """Outcome of POST /events: every event of the body was accepted (queued for the log)."""

    accepted: int


class ReloadRequest(BaseModel):
    """Body of POST /admin/reload (optional): a bundle folder, or the version production.json should name."""

    model_config = ConfigDict(extra="forbid")

    bundle: str | None = Field(default=None, description="bundle folder; relative paths are taken from the registry root")
    version: str | None = Field(default=None, description="expected production version (sent by `uniret promote`)")


class BundleInfo(BaseModel):
    """The live bundle."""

    version: str
    path: str
    modes: list[str]
    default_mode: str
    loaded_at: str


class ReloadResponse(BaseModel):
    """Outcome of a successful reload."""

    status: str
    previous: str | None
    bundle: BundleInfo
    took_ms: float


class ReadyResponse(BaseModel):
    """GET /readyz when a bundle is live."""

    status: str
    bundle: BundleInfo
