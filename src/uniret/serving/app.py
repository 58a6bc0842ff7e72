"""The FastAPI app that `uniret serve` runs: search the production bundle over HTTP.

Endpoints (JSON unless said otherwise):

    POST /search        {"query": str, "mode": str | null, "k": int, "query_id": str | null, "client_id": str | null}
                        -> {"query", "query_id", "mode", "k", "version", "took_ms",
                        "results": [{"doc_id", "score"}, ...]} best first. query_id: the client's or a new
                        UUID (with feedback.log_dir set, the answer is logged as a UBI query record). mode: one the
                        bundle offers (null: its recipe's serve_mode, or serve.default_mode); k in
                        1..serve.max_k; the query at most serve.max_query_chars. 400 unknown mode or not JSON,
                        413 body over serve.max_body_bytes, 422 bad field, 503 no bundle yet, 504 timeout.
    POST /events        one UBI event or {"events": [...]} -> {"accepted": n}; 400 not JSON, 413 body or batch
                        too large, 422 a bad field (named), 429 a client over its rate, 503 logging off.
    GET  /healthz       {"status": "ok"} while the process lives.
    GET  /readyz        200 {"status": "ready", "bundle": {version, path, modes, default_mode,
                        loaded_at}} once a bundle is live, 503 before.
    GET  /metrics       Prometheus text: requests and latency per mode and status, in-flight, reloads.
    POST /admin/reload  header `Authorization: Bearer $UNIRET_ADMIN_TOKEN`; body optional:
                        {"bundle": folder under <registry>/bundles} or {"version": the production
                        version expected}; none: production.json's bundle. 200 with the new bundle;
                        401/403 token, 409 path or version refused, 422 the bundle failed to load or
                        its probe (the old one keeps serving).
    POST /admin/canary  same token; re-reads <registry>/canary.json: loads the running canary's candidate
                        beside production (its share of searches is then answered with the team-draft
                        interleaving of both, header X-Uniret-Canary: interleaved), or drops an ended one.

For example:

    curl -s localhost:8000/search -H 'content-type: application/json' \\
         -d '{"query": "vitamin D and bone density", "k": 10}'
    curl -s -X POST localhost:8000/admin/reload -H "authorization: Bearer $UNIRET_ADMIN_TOKEN"

Searches run on a bounded pool of `serve.threads` threads (persistent, so the JVM attaches each
once), those of a GIL-bound mode on `serve.gil_searches` threads of their own (`SearchPools`), or with 0
(the default) on the event loop itself: the hand-off to a thread cost 0.5-0.8 ms of CPU a request (E86);
reloads run on their own single thread so a slow load never blocks searches. No
`from __future__ import annotations` here: FastAPI must see the request model built in
`create_app` as a real class, not as a string.
"""

import asyncio
import functools
import hmac
import logging
import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from uniret.core.runs import ranked
from uniret.retrieval.base import Searcher
from uniret.serving.canary import CanaryServing
from uniret.serving.limits import BodySizeLimit
from uniret.serving.metrics import ServingMetrics
from uniret.serving.schemas import (
    BundleInfo,
    EventsResponse,
    Hit,
    ReadyResponse,
    ReloadRequest,
    ReloadResponse,
    SearchResponse,
    search_request_model,
)
from uniret.serving.settings import ServingSettings
from uniret.serving.source import SourceError, bundle_loader
from uniret.serving.state import BundleLoadError, LiveBundle, Loader, NotReady, ServingState, search_one
from uniret.serving.ubi_log import EventRejected, ServingLog
from uniret.serving.watch import PointerWatcher

log = logging.getLogger("uniret.serving")

QID = "q"
INVALID_MODE = "invalid"  # metrics label of requests naming no offered mode (bounded cardinality)


def run_query(searcher: Searcher, query: str, k: int) -> list[tuple[str, float]]:
    """Top-k (doc id, score) of one query, best first (doc id breaks ties)."""
    return ranked(search_one(searcher, QID, query, k).get(QID, {}), k)


class SearchPools:
    """The search threads: `threads` for most modes, and `gil_threads` with a first-come queue of
    their own for a GIL-bound searcher (`Searcher.gil_bound`, serve.gil_searches): threads that
    fight over the GIL serve fewer queries, later (E43). Persistent, so the JVM attaches each once."""

    def __init__(self, threads: int, gil_threads: int):
        self.shared = ThreadPoolExecutor(threads, thread_name_prefix="uniret-search")
        self.gil = ThreadPoolExecutor(gil_threads, thread_name_prefix="uniret-search-gil") if gil_threads else None

    def for_searcher(self, searcher: Searcher) -> ThreadPoolExecutor | None:
        """The pool that runs `searcher`'s queries; None: the caller's own thread (gil_threads 0)."""
        return self.gil if searcher.gil_bound else self.shared

    def shutdown(self) -> None:
        """Finish the queued searches, then stop the threads."""
        self.shared.shutdown(wait=True)
        if self.gil is not None:
            self.gil.shutdown(wait=True)


def bundle_info(live: LiveBundle, display=str) -> BundleInfo:
    return BundleInfo(version=live.version, path=display(live.path), modes=live.modes,
                      default_mode=live.default_mode, loaded_at=live.loaded_at)


def _validation_response(exc: RequestValidationError) -> JSONResponse:
    """400 for a body that is not JSON, 422 naming each bad field otherwise; always {"detail": str}."""
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        where = next(e for e in errors if e.get("type") == "json_invalid")
        return JSONResponse({"detail": f"request body is not valid JSON: {where.get('msg')}"}, status_code=400)
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {e.get('msg')}")
    return JSONResponse({"detail": "; ".join(parts)}, status_code=422)


def _check_token(expected: str | None, authorization: str | None) -> None:
    """401 without a bearer token, 403 for a wrong one (or when no token is configured)."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise HTTPException(401, "missing bearer token (Authorization: Bearer <token>)",
                            headers={"WWW-Authenticate": "Bearer"})
    if expected is None:
        raise HTTPException(403, "admin endpoint disabled: no admin token configured on this server")
    given = authorization[len("bearer "):].strip()
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(403, "invalid admin token")


def create_app(settings: ServingSettings, loader: Loader | None = None) -> FastAPI:
    """The serving app; it loads the source's bundle in the background at start-up.

    `loader` builds {mode: Searcher} from a bundle folder (default: the bundle's own retrieval
    params, ONNX query encoder with `serve.onnx_threads`).
    """
    cfg = settings.serve
    source = settings.source
    metrics = ServingMetrics()
    ubi = ServingLog(settings.feedback, metrics)  # UBI logging; off unless feedback.log_dir is set
    if cfg.faiss_threads is not None:
        from uniret.retrieval.faiss_loader import set_search_threads

        set_search_threads(cfg.faiss_threads)  # process-wide: this process only serves
    engine = None  # the Milvus client when the structures live in Milvus
    if settings.engine == "milvus":
        from uniret.milvus.client import connect_configured
        from uniret.serving.milvus_engine import alias_source, milvus_loader

        engine = connect_configured(settings.milvus)  # EngineError (one line) when unreachable
        source = alias_source(source, engine, settings.milvus)
        default_loader = milvus_loader(engine, settings.milvus, cfg.onnx_threads, cfg.batch_max, cfg.batch_wait_ms,
                                       cfg.request_timeout_s, cfg.batch_workers, cfg.modes, cfg.default_mode)
    else:
        default_loader = bundle_loader(cfg.onnx_threads, settings.retrieval, cfg.batch_max, cfg.batch_wait_ms,
                                       cfg.request_timeout_s, cfg.batch_workers, cfg.modes, cfg.default_mode)
    verified_loader = source.verified_loader(loader or default_loader)
    state = ServingState(verified_loader, cfg.probe_query, cfg.default_mode)
    # a running canary's candidate, loaded beside production (docs/gate-registry.md#canary)
    canary = CanaryServing(source.registry_root, verified_loader, cfg.probe_query, cfg.default_mode, metrics,
                           random.Random(settings.canary_seed))
    metrics.track(lambda: state.current, source.registry_root)  # the alerts' gauges (docs/monitoring.md)
    search_pools = SearchPools(cfg.search_threads(), cfg.gil_searches)
    admin_pool = ThreadPoolExecutor(1, thread_name_prefix="uniret-admin")
    SearchRequest = search_request_model(cfg)  # noqa: N806 - a class built from the config

    def reload(path, version) -> tuple[LiveBundle, LiveBundle | None]:
        try:
            new, old = state.reload(path, version)
        except BundleLoadError:
            metrics.reloads.labels(result="failed").inc()
            raise
        metrics.reloads.labels(result="ok").inc()
        metrics.set_bundle(new.version, source.display(new.path))
        canary.sync()  # a promotion may have ended the canary (its candidate is production now): drop it
        return new, old

    def initial_load() -> None:
        try:
            reload(*source.resolve())
        except (SourceError, BundleLoadError) as exc:
            log.error("no bundle loaded at start-up (%s): %s; /readyz stays 503 until a reload succeeds",
                      source.describe(), exc)

    watcher = None
    if cfg.watch_interval_s > 0 and source.registry_root is not None:
        watcher = PointerWatcher(source, lambda: state.current.version if state.current else None,
                                 reload, cfg.watch_interval_s, on_tick=canary.sync)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        ubi.start()
        if cfg.workers > 1:
            # uvicorn lets a worker accept connections only after this returns: one still loading would
            # answer 503 to whatever the kernel handed it, while /readyz, reaching another, says ready
            await asyncio.get_running_loop().run_in_executor(admin_pool, initial_load)
        else:  # one process: /healthz answers while the bundle loads
            admin_pool.submit(initial_load)
        if watcher is not None:
            watcher.start()
        yield
        if watcher is not None:
            watcher.stop()
        search_pools.shutdown()
        admin_pool.shutdown(wait=True)
        state.close()
        canary.close()
        ubi.close()  # writes what is queued
        if engine is not None:
            engine.close()
        metrics.close_process()

    # no /docs, /redoc or /openapi.json: they answer without the admin token and load assets from a CDN
    app = FastAPI(title="uniret", description="Hybrid (learned-sparse + dense) first-stage retrieval",
                  lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.serving = state
    app.state.metrics = metrics
    app.state.canary = canary
    app.add_middleware(BodySizeLimit, limit=cfg.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_response(exc)

    @app.get("/healthz")
    async def healthz() -> dict:
        """The process is alive (says nothing about the bundle)."""
        return {"status": "ok"}

    @app.get("/readyz", response_model=ReadyResponse)
    async def readyz() -> ReadyResponse:
        """200 with the live bundle once one is loaded, 503 before."""
        live = state.current
        if live is None:
            raise HTTPException(503, "no bundle loaded yet")
        return ReadyResponse(status="ready", bundle=bundle_info(live, source.display))

    exposition = metrics.exposition_registry()  # every worker's figures in multiprocess mode

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(generate_latest(exposition), media_type=CONTENT_TYPE_LATEST)

    async def run_search(live: LiveBundle, mode: str, query: str, k: int) -> list[tuple[str, float]]:
        """One mode's top k on its pool with the request timeout (or on the event loop: serve.gil_searches 0);
        HTTPException 504/500 on failure."""
        searcher = live.searchers[mode]
        pool = search_pools.for_searcher(searcher)
        try:
            if pool is None:  # serve.gil_searches 0: on the event loop, no thread hand-off (E86)
                return run_query(searcher, query, k)
            work = asyncio.get_running_loop().run_in_executor(pool, run_query, searcher, query, k)
            return await asyncio.wait_for(work, cfg.request_timeout_s)
        except TimeoutError as exc:
            raise HTTPException(504, f"search took longer than {cfg.request_timeout_s:g} s") from exc
        except Exception as exc:
            log.exception("search failed (mode %s, bundle %s)", mode, live.version)
            raise HTTPException(500, f"search failed in mode {mode!r}: {type(exc).__name__}") from exc

    async def interleaved(live: LiveBundle, mode: str, explicit: bool, req, plan: dict) -> tuple[list, dict | None]:
        """Production's and the candidate's lists merged by team draft, with the record's canary attributes;
        production's list and None when the candidate cannot answer (dropped meanwhile, lacks the mode asked,
        failed): a canary costs evidence, never an answer."""
        with canary.lease() as cand:
            cand_mode = mode if explicit else (cand.default_mode if cand is not None else mode)
            if cand is None or cand_mode not in cand.searchers:
                return await run_search(live, mode, req.query, req.k), None
            prod_hits, cand_hits = await asyncio.gather(run_search(live, mode, req.query, req.k),
                                                        run_search(cand, cand_mode, req.query, req.k),
                                                        return_exceptions=True)
            if isinstance(prod_hits, BaseException):
                raise prod_hits
            if isinstance(cand_hits, BaseException):
                log.warning("canary: candidate %s failed a search, production answered alone: %s", cand.version,
                            getattr(cand_hits, "detail", cand_hits))
                return prod_hits, None
            hits, mixed = canary.interleave(prod_hits, cand_hits, req.k)
            return hits, {"interleaved_with": cand.version,
                          "canary": {"id": plan["id"], "candidate_mode": cand_mode, "teams": mixed.team_string}}

    @app.post("/search", response_model=SearchResponse)
    async def search(req: SearchRequest, response: Response) -> SearchResponse:
        """Top-k documents for one query in one mode of the live bundle (interleaved with a canary's candidate
        for the canary's share of searches)."""
        start = time.perf_counter()
        label, status = INVALID_MODE, 500
        metrics.inflight.inc()
        try:
            with state.lease() as live:
                mode = req.mode or live.default_mode
                if mode not in live.searchers:
                    status = 400
                    raise HTTPException(400, f"unknown mode {mode!r}; this bundle offers: {', '.join(live.modes)}")
                label = mode
                attributes = {"bundle_version": live.version, "mode": mode, "k": req.k}
                plan = canary.draw(live.version)
                try:
                    extra = None
                    if plan is not None:
                        hits, extra = await interleaved(live, mode, req.mode is not None, req, plan)
                    else:
                        hits = await run_search(live, mode, req.query, req.k)
                    if extra is None:
                        hits, swapped = ubi.shown_order(hits)
                        if swapped:
                            attributes["randpair"] = list(swapped)
                    else:  # no RandPair swap here: it would move documents away from their team's pick
                        attributes.update(extra)
                        metrics.canary_answers.inc()
                        response.headers["X-Uniret-Canary"] = "interleaved"
                except HTTPException as exc:
                    status = exc.status_code
                    raise
                status = 200
                query_id = req.query_id or str(uuid.uuid4())
                ubi.log_query(query_id, req.client_id or "anonymous", req.query, [d for d, _ in hits], attributes)
                took_ms = (time.perf_counter() - start) * 1000.0
                return SearchResponse(query=req.query, query_id=query_id, mode=mode, k=req.k, version=live.version,
                                      took_ms=round(took_ms, 3),
                                      results=[Hit(doc_id=d, score=s) for d, s in hits])
        except NotReady as exc:
            status = 503
            raise HTTPException(503, "no bundle loaded yet; retry when /readyz answers 200") from exc
        finally:
            metrics.inflight.dec()
            metrics.observe(label, status, time.perf_counter() - start)

    @app.post("/events", response_model=EventsResponse)
    async def events(request: Request):
        """Accept UBI events (one, or {"events": [...]}) for the log; a batch is taken or refused whole."""
        try:
            accepted = ubi.accept_events(await request.body())
        except EventRejected as exc:
            return JSONResponse({"detail": exc.detail, "reason": exc.reason}, status_code=exc.status)
        return EventsResponse(accepted=accepted)

    def require_admin(authorization: str | None = Header(default=None)) -> None:
        _check_token(settings.admin_token, authorization)

    # the body is parsed by hand after the token check: unauthenticated calls get 401/403, never 400/422
    @app.post("/admin/reload", response_model=ReloadResponse, dependencies=[Depends(require_admin)])
    async def admin_reload(request: Request) -> ReloadResponse:
        """Load a bundle aside, probe it and swap it in; on failure the old bundle keeps serving.

        Body (optional): {"bundle": folder} or {"version": expected production version}.
        """
        raw = await request.body()
        try:
            body = ReloadRequest.model_validate_json(raw) if raw.strip() else ReloadRequest()
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from exc
        start = time.perf_counter()
        serving = state.current.version if state.current else "no bundle"
        try:
            path, version = source.resolve(body.bundle, body.version)
        except SourceError as exc:
            metrics.reloads.labels(result="failed").inc()
            raise HTTPException(409, source.relative_text(f"{exc}; still serving {serving}")) from exc
        loop = asyncio.get_running_loop()
        try:
            new, old = await loop.run_in_executor(admin_pool, reload, path, version)
        except BundleLoadError as exc:
            raise HTTPException(422, source.relative_text(f"reload failed, still serving {serving}: {exc}")) from exc
        return ReloadResponse(status="reloaded", previous=old.version if old else None, bundle=bundle_info(new, source.display),
                              took_ms=round((time.perf_counter() - start) * 1000.0, 1))

    @app.post("/admin/canary", dependencies=[Depends(require_admin)])
    async def admin_canary() -> dict:
        """Re-read the registry's canary.json: load the running canary's candidate, or drop an ended one."""
        did = await asyncio.get_running_loop().run_in_executor(admin_pool, functools.partial(canary.sync, retry=True))
        return {"status": source.relative_text(did)}

    return app
