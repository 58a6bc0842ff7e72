"""Tell a running server that the registry changed, with a bearer token: POST /admin/reload (the
production bundle) or POST /admin/canary (the canary's candidate, uniret.registry.canary)."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any

log = logging.getLogger("uniret.registry")

RELOAD_PATH = "/admin/reload"
CANARY_PATH = "/admin/canary"
BODY_PREVIEW = 300  # characters of a server's reply kept in the result


@dataclass
class NotifyResult:
    """Outcome of a reload call. A failed notify never undoes a promotion: it is reported."""

    status: str  # "ok", "pending" (sent, no reply in time: the reload may still finish), "failed" or "skipped"
    detail: str
    http_status: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def notify_reload(serve_url: str | None, token: str | None, version: str, timeout_s: float) -> NotifyResult:
    """POST {serve_url}/admin/reload; skipped when no URL or token is configured."""
    return _post(serve_url, token, RELOAD_PATH, {"version": version}, timeout_s, version)


def notify_canary(serve_url: str | None, token: str | None, timeout_s: float) -> NotifyResult:
    """POST {serve_url}/admin/canary: the server re-reads canary.json (loads or drops the candidate)."""
    return _post(serve_url, token, CANARY_PATH, {}, timeout_s, "the canary's candidate")


def _post(serve_url: str | None, token: str | None, path: str, payload: dict[str, Any], timeout_s: float,
          version: str) -> NotifyResult:
    if not serve_url:
        return NotifyResult("skipped", "no registry.serve_url configured: no server to reload")
    if not token:
        return NotifyResult("skipped", "no admin token in the environment: cannot authenticate the reload")
    url = serve_url.rstrip("/") + path
    body = json.dumps(payload).encode()
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            reply = resp.read().decode(errors="replace")[:BODY_PREVIEW]
            log.info("server %s reloaded bundle %s (%s)", serve_url, version, resp.status)
            return NotifyResult("ok", f"POST {url}: {resp.status} {reply}".strip(), resp.status)
    except urllib.error.HTTPError as exc:
        reply = exc.read().decode(errors="replace")[:BODY_PREVIEW]
        detail = f"POST {url}: HTTP {exc.code} {reply}".strip()
        code: int | None = exc.code
    except (TimeoutError, urllib.error.URLError) as exc:
        if not isinstance(exc, TimeoutError) and not isinstance(getattr(exc, "reason", None), TimeoutError):
            detail, code = f"POST {url}: {getattr(exc, 'reason', exc)}", None
        else:
            # delivered, unanswered: a large bundle takes minutes to load under load, so this is not a failure
            detail = (f"POST {url}: no reply within {timeout_s:g} s; the server may still be loading {version} "
                      "(see its /readyz)")
            log.warning("reload notification pending (the promotion stands): %s", detail)
            return NotifyResult("pending", detail)
    except OSError as exc:
        detail, code = f"POST {url}: {getattr(exc, 'reason', exc)}", None
    log.warning("reload notification failed (the promotion stands): %s", detail)
    return NotifyResult("failed", detail, code)
