"""Which exceptions are the user's (bad data, bad params, missing inputs) and how to print them."""

from __future__ import annotations

import errno

from uniret.config.loader import ConfigError
from uniret.data.errors import DataError, FetchError


class StageFailed(RuntimeError):
    """A stage ran and decided the run must stop (failed expectations, broken parity, ...)."""


USER_ERRORS: tuple[type[BaseException], ...] = (ConfigError, DataError, FetchError, StageFailed, FileNotFoundError)


# a full disk or quota, or a file size limit: the environment's problem, told in one line
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, USER_ERRORS) or (isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS)


def format_error(exc: BaseException) -> str:
    text = str(exc)
    return ("\n  " + text.replace("\n", "\n  ")) if "\n" in text else text
