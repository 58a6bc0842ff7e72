"""Record a finished nightly run in the registry (<registry>/nightly.json), where serving exports it.

`uniret nightly` calls `record_outcome` once per run, after the lock is released; a run refused
because another holds the lock is not a night of its own and is not recorded. Recording never
changes the run's exit code: a registry that cannot be written is logged.
"""

from __future__ import annotations

import logging
from typing import Any

from uniret.config.params import Params
from uniret.ops.nightly_codes import outcome_name
from uniret.registry.configured import registry_root
from uniret.registry.nightly_status import record_outcome as record_in_registry

log = logging.getLogger("uniret.ops")


def record_outcome(params: Params, outcome: Any) -> dict[str, Any] | None:
    """Add `outcome` (a NightlyOutcome: .code, .summary) to the registry's nightly.json; the new status,
    or None when not recorded (lock held, or the registry not writable: logged)."""
    name = outcome_name(outcome.code)
    if name is None:
        return None
    root = registry_root(params)
    try:
        return record_in_registry(root, name, outcome.code, outcome.summary, getattr(outcome, "refresh", None))
    except OSError as exc:
        log.warning("nightly: could not record the outcome in %s (the run's exit code stands): %s", root, exc)
        return None
