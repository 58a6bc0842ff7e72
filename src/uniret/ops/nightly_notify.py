"""POST a nightly run's outcome to a webhook (params `notify`): Slack-style text or an Alertmanager alert.

Shapes (`notify.format`):

    slack         {"text": "uniret nightly BLOCKED on <host>: <summary> ..."}: Slack incoming
                  webhooks (and Mattermost, Rocket.Chat, Google Chat, which read `text` too)
    alertmanager  [{"labels": {"alertname": "UniretNightlyBlocked", "severity", "service": "uniret",
                  "outcome"}, "annotations": {"summary", "description"}, "startsAt"}]: the body of
                  Alertmanager's POST /api/v2/alerts (give that full URL); it resolves after its
                  resolve_timeout, as a one-off event should

A receiver that is down, slow or refuses never fails the nightly: the result says so and is logged.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from uniret.config.notify import NotifyConfig
from uniret.config.params import Params
from uniret.ops.nightly_codes import outcome_name

log = logging.getLogger("uniret.ops")

BODY_PREVIEW = 200  # characters of a receiver's reply kept in the result
ALERT_NAMES = {"ok": "UniretNightlyOk", "blocked": "UniretNightlyBlocked", "failed": "UniretNightlyFailed",
               "paused": "UniretNightlyPaused"}
SEVERITY = {"ok": "info", "blocked": "warning", "failed": "critical", "paused": "info"}


@dataclass
class NotifyResult:
    """What became of one notification: sent, skipped (off, or an outcome not in `notify.outcomes`) or failed."""

    status: str
    detail: str


def webhook_url(cfg: NotifyConfig) -> str | None:
    """The URL to POST to: the env var named by `url_env`, else `url` (None: notifications off)."""
    return os.environ.get(cfg.url_env) or cfg.url


def message_text(outcome: str, summary: str, code: int, host: str, production: str | None) -> str:
    """The one human message of every shape."""
    prod = f"; production stays {production}" if production else ""
    return f"uniret nightly {outcome.upper()} on {host} (exit {code}): {summary}{prod}"


def payload(fmt: str, outcome: str, text: str, summary: str, at: str) -> Any:
    """The JSON body of `fmt` for one outcome."""
    if fmt == "slack":
        return {"text": text}
    if fmt == "alertmanager":
        return [{
            "labels": {"alertname": ALERT_NAMES[outcome], "severity": SEVERITY[outcome], "service": "uniret",
                       "outcome": outcome},
            "annotations": {"summary": text, "description": summary,
                            "runbook": "docs/runbook.md#a-blocked-nightly"},
            "startsAt": at,
        }]
    raise ValueError(f"unknown notify format {fmt!r}")


def _production(params: Params) -> str | None:
    from uniret.registry.configured import registry_root
    from uniret.registry.errors import RegistryError
    from uniret.registry.pointer import read_pointer

    try:
        pointer = read_pointer(registry_root(params))
    except (RegistryError, OSError):
        return None
    return pointer["version"] if pointer else None


def _where(url: str) -> str:
    """The URL without its path and query: a Slack webhook's path is its secret, kept out of logs."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/..."


def post_json(url: str, body: Any, timeout_s: float) -> NotifyResult:
    """POST `body` as JSON; a failure of any kind is returned, never raised."""
    where = _where(url)
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return NotifyResult("sent", f"POST {where}: HTTP {resp.status}")
    except urllib.error.HTTPError as exc:
        reply = exc.read().decode(errors="replace")[:BODY_PREVIEW]
        return NotifyResult("failed", f"POST {where}: HTTP {exc.code} {reply}".strip())
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        return NotifyResult("failed", f"POST {where}: {getattr(exc, 'reason', exc)}")


def notify_outcome(params: Params, outcome: Any) -> NotifyResult:
    """Send the notification of `outcome` (a NightlyOutcome: .code, .summary) when params ask for it."""
    cfg: NotifyConfig = params.section("notify")
    name = outcome_name(outcome.code)
    url = webhook_url(cfg)
    if url is None:
        return NotifyResult("skipped", f"no notify.url (nor ${cfg.url_env}): notifications off")
    if name is None or name not in cfg.outcomes:
        return NotifyResult("skipped", f"outcome {name or 'lock held'} is not in notify.outcomes ({', '.join(cfg.outcomes)})")
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = message_text(name, outcome.summary, outcome.code, socket.gethostname(), _production(params))
    result = post_json(url, payload(cfg.format, name, text, outcome.summary, at), cfg.timeout_s)
    if result.status == "sent":
        log.info("nightly: notified %s", result.detail)
    else:
        log.warning("nightly: notification failed (the run's outcome stands): %s", result.detail)
    return result
