"""Config of the notification a nightly run sends when it ends blocked or failed (`notify` section)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# what a nightly run ends with (uniret.registry.nightly_status records them): ok (promoted, or the
# candidate already was production), blocked (by the gate), failed, paused (promotion paused by a person)
NIGHTLY_OUTCOMES = ("ok", "blocked", "failed", "paused")


@dataclass
class NotifyConfig:
    """Where and in which JSON shape a nightly's outcome is POSTed (uniret.ops.nightly_notify)."""

    # the webhook; None: no notification. The env var named by url_env takes precedence (a Slack
    # webhook URL is a secret: keep it in the environment / a Kubernetes Secret, not in params.yaml)
    url: str | None = None
    url_env: str = "UNIRET_NOTIFY_URL"
    # slack: {"text": ...} (Slack incoming webhooks; Mattermost, Rocket.Chat and Google Chat take it too);
    # alertmanager: a one-alert list for Alertmanager's POST /api/v2/alerts
    format: Literal["slack", "alertmanager"] = "slack"
    outcomes: list[str] = field(default_factory=lambda: ["blocked", "failed"])  # outcomes that notify
    timeout_s: float = 10.0

    def validate(self) -> None:
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        unknown = sorted(set(self.outcomes) - set(NIGHTLY_OUTCOMES))
        if unknown:
            raise ValueError(f"outcomes: unknown outcome(s) {', '.join(unknown)}; known: {', '.join(NIGHTLY_OUTCOMES)}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if not self.url_env:
            raise ValueError("url_env must name an environment variable")
