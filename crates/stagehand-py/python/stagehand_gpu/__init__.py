"""stagehand from Python: GPU memory that doesn't leak, uploads that don't
stall the frame, a clear view of everything on the device, and a player
that drops into a Qt widget.

    >>> import stagehand_gpu as sh
    >>> gpu = sh.Gpu.open()
    >>> buf = gpu.create_buffer(784, "vertex|copy_dst")
    >>> gpu.report().get_dict()["object_counts"]["Buffer"]["resource_mem"]
    784

``stagehand_gpu.qt.PlayerWidget`` shows a ``Player`` in a PySide6 (or
PyQt6) layout.
"""

from ._errors import (
    ClosedError,
    GpuError,
    InvalidArgumentError,
    LeakError,
    NoAdapterError,
    NoDisplayError,
    OutOfMemoryError,
    PlayerError,
    SourceError,
    StagehandError,
    UploadCancelledError,
    UploadFailedError,
    WouldBlockError,
)
from ._native import (
    Buffer,
    BufferPool,
    Gpu,
    LeakCheck,
    NativeView,
    Player,
    PooledBuffer,
    Report,
    StreamedTexture,
    Texture,
    Upload,
    UploadEngine,
)

__all__ = [
    "Buffer",
    "BufferPool",
    "ClosedError",
    "Gpu",
    "GpuError",
    "InvalidArgumentError",
    "LeakCheck",
    "LeakError",
    "NativeView",
    "NoAdapterError",
    "NoDisplayError",
    "OutOfMemoryError",
    "Player",
    "PlayerError",
    "PooledBuffer",
    "Report",
    "SourceError",
    "StagehandError",
    "StreamedTexture",
    "Texture",
    "Upload",
    "UploadCancelledError",
    "UploadEngine",
    "UploadFailedError",
    "WouldBlockError",
]
