"""Config of the bundle registry, promotion and the serving notification."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RegistryConfig:
    """Where bundles are published and which server to tell about a new production bundle."""

    root: str = "registry"  # relative to the params file's folder
    serve_url: str | None = None  # e.g. http://127.0.0.1:8000; None: no reload call
    # env var whose value, when set, is the server to reload instead of serve_url (the cluster's
    # ConfigMap sets it for the nightly CronJob and the Kubeflow tasks)
    serve_url_env: str = "UNIRET_SERVE_URL"
    token_env: str = "UNIRET_ADMIN_TOKEN"  # env var holding the serving admin bearer token
    notify_timeout_s: float = 10.0
    dvc_push: bool = True  # `dvc push` the registry after a change, when a DVC remote is configured
    # retention: after each promotion keep production and this many bundles of its rollback history,
    # delete the rest (uniret.registry.retention); None keeps every bundle
    keep_history: int | None = None

    def validate(self) -> None:
        if not self.root:
            raise ValueError("root must be a non-empty path")
        if not self.serve_url_env or not self.token_env:
            raise ValueError("serve_url_env and token_env must name environment variables")
        if self.keep_history is not None and self.keep_history < 0:
            raise ValueError(f"keep_history must be >= 0 or null, got {self.keep_history}")
        if self.notify_timeout_s <= 0:
            raise ValueError(f"notify_timeout_s must be positive, got {self.notify_timeout_s}")
        if self.serve_url is not None and not is_http_url(self.serve_url):
            raise ValueError(f"serve_url must start with http:// or https://, got {self.serve_url!r}")


def is_http_url(value: str) -> bool:
    """A server address the reload call can use (http:// or https://)."""
    return value.startswith(("http://", "https://"))
