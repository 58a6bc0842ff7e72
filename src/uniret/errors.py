"""Which exceptions are the user's (bad data, bad params, missing inputs) and how to print them."""

from __future__ import annotations

from uniret.config.loader import ConfigError
from uniret.data.errors import DataError, FetchError


class StageFailed(RuntimeError):
    """A stage ran and decided the run must stop (failed expectations, broken parity, ...)."""


USER_ERRORS: tuple[type[BaseException], ...] = (ConfigError, DataError, FetchError, StageFailed, FileNotFoundError)


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, USER_ERRORS)


def format_error(exc: BaseException) -> str:
    text = str(exc)
    return ("\n  " + text.replace("\n", "\n  ")) if "\n" in text else text
