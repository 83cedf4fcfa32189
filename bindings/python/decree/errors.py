"""Exceptions carrying libdecree's error code and message.

Every failing call raises a subclass of :class:`DecreeError` chosen by the
library's return code (``decree_error_code`` in include/decree/common.h);
``code`` is that negative number, ``name`` its symbolic name and
``message`` the library's one-line message (``decree_error_last()``).
"""

from __future__ import annotations

from typing import Dict, Type


class DecreeError(Exception):
    """A libdecree call failed.  ``code`` is the negative error code."""

    code: int = -1
    name: str = "DECREE_ERROR"

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.name = _NAMES.get(code, "DECREE_ERROR")

    def __str__(self) -> str:
        return self.message


class NotFoundError(DecreeError):
    """DECREE_ENOTFOUND: checkpoint, object, path or session not found."""


class ExistsError(DecreeError):
    """DECREE_EEXISTS: something that must not exist does."""


class LockedError(DecreeError):
    """DECREE_ELOCKED: the store is locked by a live process."""


class ConflictError(DecreeError):
    """DECREE_ECONFLICT: a patch or restore conflicts with the tree."""


class CorruptError(DecreeError):
    """DECREE_ECORRUPT: a damaged object, record or log."""


class ApplyError(DecreeError):
    """DECREE_EAPPLY: a patch does not apply."""


class InvalidError(DecreeError, ValueError):
    """DECREE_EINVALID: bad input (argument, path, format)."""


class AmbiguousError(DecreeError):
    """DECREE_EAMBIGUOUS: a reference matches several checkpoints."""


class VerifyError(DecreeError):
    """DECREE_EVERIFY: written bytes do not hash as expected."""


class ExecError(DecreeError):
    """DECREE_EEXEC: a command decree ran failed (apply --exec)."""


class UnfinishedError(DecreeError):
    """DECREE_EUNFINISHED: a transaction could be neither completed nor
    rolled back; :meth:`decree.Store.recover` finishes it."""


class CancelledError(DecreeError):
    """DECREE_ECANCELLED: the cancel flag stopped the call; nothing
    changed."""


class LogDamagedError(DecreeError):
    """DECREE_ELOGDAMAGED: an interrupted transaction's log is damaged;
    ``Store.recover(rollback=True)`` rolls back what it still names."""


class DecreeWarning(UserWarning):
    """A call succeeded but left something for later (the library's
    ``decree_warning_last()``); also kept in ``Store.last_warning``."""


_BY_CODE: Dict[int, Type[DecreeError]] = {
    -1: DecreeError,
    -3: NotFoundError,
    -4: ExistsError,
    -5: LockedError,
    -6: ConflictError,
    -7: CorruptError,
    -8: ApplyError,
    -9: InvalidError,
    -10: AmbiguousError,
    -11: VerifyError,
    -12: ExecError,
    -13: UnfinishedError,
    -14: CancelledError,
    -15: LogDamagedError,
}

_NAMES: Dict[int, str] = {
    -1: "DECREE_ERROR",
    -3: "DECREE_ENOTFOUND",
    -4: "DECREE_EEXISTS",
    -5: "DECREE_ELOCKED",
    -6: "DECREE_ECONFLICT",
    -7: "DECREE_ECORRUPT",
    -8: "DECREE_EAPPLY",
    -9: "DECREE_EINVALID",
    -10: "DECREE_EAMBIGUOUS",
    -11: "DECREE_EVERIFY",
    -12: "DECREE_EEXEC",
    -13: "DECREE_EUNFINISHED",
    -14: "DECREE_ECANCELLED",
    -15: "DECREE_ELOGDAMAGED",
}


def error_for(code: int, message: str) -> DecreeError:
    """The exception for a library return code."""
    return _BY_CODE.get(code, DecreeError)(message, code)
