"""The exit codes of `uniret nightly` and the outcome each names (what nightly.json records and the
webhook says): one table the nightly, its recorder and its notifier read."""

from __future__ import annotations

EXIT_PROMOTED = 0
EXIT_FAILED = 1
EXIT_BLOCKED = 3
EXIT_PAUSED = 4  # promotion paused (`uniret registry pause`, or params nightly.promote: false): nothing promoted
EXIT_LOCKED = 75  # EX_TEMPFAIL (sysexits.h): try again later

# exit code -> recorded outcome; None: a run that did not take place (the lock was held)
OUTCOMES: dict[int, str | None] = {EXIT_PROMOTED: "ok", EXIT_BLOCKED: "blocked", EXIT_PAUSED: "paused",
                                   EXIT_LOCKED: None}


def outcome_name(code: int) -> str | None:
    """The recorded outcome of a nightly exit code ("failed" for any code not named in OUTCOMES)."""
    return OUTCOMES.get(code, "failed")
