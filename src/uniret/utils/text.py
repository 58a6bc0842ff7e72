"""Bounded quoting of untrusted values in messages: a 50 MB record yields a short excerpt."""

from __future__ import annotations

from typing import Any

# Characters of a value quoted in an error message (the rest is summarised by its length).
EXCERPT_CHARS = 120


def excerpt(value: Any, limit: int = EXCERPT_CHARS, quote: bool = True) -> str:
    """repr() of `value` (str() with quote=False) cut to about `limit` characters, saying how long
    the whole was."""
    text = value if isinstance(value, str) else None
    if text is not None and len(text) > limit:
        cut = text[:limit]
        return f"{cut!r}... ({len(text)} chars)" if quote else f"{cut}... ({len(text)} chars)"
    shown = repr(value) if quote else str(value)
    if len(shown) > limit:
        return f"{shown[:limit]}... ({len(shown)} chars)"
    return shown
