"""The exceptions stagehand raises. Each is a ``StagehandError``; where
Python has a built-in of the same meaning, it is that too, so ordinary
``except MemoryError`` or ``except ValueError`` code catches it."""

import concurrent.futures


class StagehandError(Exception):
    """Anything stagehand raises; the message is the library's."""


class GpuError(StagehandError):
    """The device refused or failed (validation, a lost device)."""


class OutOfMemoryError(GpuError, MemoryError):
    """The device, or a pool, ran out of memory: free some or ask for less."""


class NoAdapterError(GpuError):
    """No GPU adapter (the message says which package gives a software one)."""


class InvalidArgumentError(StagehandError, ValueError):
    """An argument out of range: a format, a usage, a size, an option."""


class SourceError(StagehandError, OSError):
    """A file or folder that cannot be played: missing, unreadable, unsupported."""


class NoDisplayError(StagehandError):
    """A window was asked for where none can be had."""


class PlayerError(StagehandError):
    """The player failed (a thread could not start, a stage failed)."""


class ClosedError(StagehandError):
    """The engine, texture or player was closed or released."""


class WouldBlockError(StagehandError, BlockingIOError):
    """``try_upload``: the texture's staging is all in use; try again later."""


class UploadCancelledError(StagehandError, concurrent.futures.CancelledError):
    """The upload was cancelled, or superseded by a newer one to the same texture."""


class UploadFailedError(StagehandError):
    """The upload failed; nothing was written."""


class LeakError(StagehandError, AssertionError):
    """``check_leaks``: GPU objects made inside the block are still alive."""


__all__ = [name for name in dir() if name.endswith("Error")]
