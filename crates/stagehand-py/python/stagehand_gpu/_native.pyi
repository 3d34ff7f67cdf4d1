"""Type stubs of stagehand_gpu's native classes (re-exported by the package)."""

from __future__ import annotations

import os
from collections.abc import Buffer as _Buffer, Callable, Generator
from typing import Any, Literal, TypedDict

class ObjectCount(TypedDict):
    count: int
    resource_mem: int

class Gpu:
    """A GPU: an adapter, its device and queue, and the tracker that counts every object made through it."""

    @classmethod
    def open(cls, backend: str | None = None, adapter: str | None = None) -> Gpu:
        """Opens the best adapter on ``backend`` ("vulkan", "gl", ...; None reads WGPU_BACKEND)."""
    @property
    def adapter(self) -> str:
        """The adapter's name, with its backend."""
    @property
    def backend(self) -> str:
        """"vulkan", "gl", "metal" or "dx12"."""
    def report(self) -> Report:
        """The diagnostics report now."""
    def print_report(self) -> None:
        """Prints the report's tables."""
    def check_leaks(self) -> LeakCheck:
        """A context manager raising LeakError if objects made inside are left alive."""
    def create_buffer(self, size: int, usage: str, label: str | None = None) -> Buffer:
        """A counted buffer; usage as wgpu's flag names joined by "|" ("vertex|copy_dst")."""
    def create_texture(
        self,
        width: int,
        height: int,
        format: str,
        label: str | None = None,
        layers: int = 1,
        mip_level_count: int = 1,
        usage: str = "texture_binding|copy_dst",
    ) -> Texture:
        """A counted 2D texture; format as WebGPU names it ("rgba8unorm")."""

class Buffer:
    """A counted GPU buffer."""

    @property
    def size(self) -> int: ...
    @property
    def label(self) -> str | None: ...
    @property
    def destroyed(self) -> bool: ...
    def destroy(self) -> None:
        """Frees it now."""

class Texture:
    """A counted GPU texture."""

    @property
    def size(self) -> tuple[int, int, int]:
        """(width, height, layers)."""
    @property
    def format(self) -> str: ...
    @property
    def label(self) -> str | None: ...
    @property
    def nbytes(self) -> int:
        """The bytes it is counted with, over all mips and layers."""
    @property
    def destroyed(self) -> bool: ...
    def destroy(self) -> None:
        """Frees it now."""

class Report:
    """The diagnostics report at one moment."""

    def get_dict(self) -> dict[str, Any]:
        """The sections as dicts; ``object_counts`` maps kind -> {'count', 'resource_mem'}
        (wgpu-py's shape), ``object_peaks`` kind -> {'count', 'resource_mem', 'created'}."""
    def names(self) -> list[str]:
        """The section names, in order."""
    def to_json(self) -> str:
        """The whole report as JSON text."""
    def __str__(self) -> str:
        """The report's tables as text."""

class LeakCheck:
    """``with gpu.check_leaks():``: raises LeakError naming what the block left alive."""

    def __enter__(self) -> LeakCheck: ...
    def __exit__(self, kind: Any = None, value: Any = None, traceback: Any = None) -> bool: ...

class BufferPool:
    """A caching pool of device buffers: size classes, free lists, a budget."""

    def __init__(self, gpu: Gpu, budget: int | None = None, name: str = "pool") -> None: ...
    def take(self, size: int, usage: str) -> PooledBuffer:
        """A buffer of at least size bytes; OutOfMemoryError past the budget or the device's memory."""
    def trim(self) -> None:
        """Gives every idle buffer back to the device."""
    def end_batch(self) -> None:
        """Size classes no request touched in the batch are given back."""
    def set_budget(self, budget: int | None) -> None: ...
    def stats(self) -> dict[str, Any]:
        """held, peak_held, in_use, idle, budget, hits, misses, allocations, frees, trims, ..."""

class PooledBuffer:
    """A buffer taken from a pool; given back when released or collected."""

    @property
    def size(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> PooledBuffer: ...
    def __exit__(self, *args: Any) -> bool: ...

class UploadStats(TypedDict):
    workers: int
    priority: str
    queued: int
    active: int
    completed: int
    cancelled: int
    superseded: int
    failed: int
    bytes_uploaded: int
    bandwidth: float
    staging_held: int
    callback_panics: int

class UploadEngine:
    """Transfer workers that copy uploads into staging and submit them."""

    def __init__(self, gpu: Gpu, workers: int = 2, priority: Literal["low", "normal", "high"] = "low") -> None: ...
    def create_texture(
        self,
        width: int,
        height: int,
        format: str = "rgba8unorm",
        staging: str = "ring:3",
        label: str | None = None,
    ) -> StreamedTexture:
        """A texture uploads stream into; staging "ring:N", "per-upload:N" or "sync"."""
    def stats(self) -> UploadStats:
        """The engine's numbers now."""
    def close(self) -> None:
        """Cancels queued uploads, lets started ones land, joins the threads."""
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> UploadEngine: ...
    def __exit__(self, *args: Any) -> bool: ...

class StreamedTexture:
    """A texture that shows its previous contents until an upload has landed."""

    def upload(self, data: _Buffer) -> Upload:
        """Uploads a whole frame, read in place (C-contiguous, the format's dtype); waits while staging is full."""
    def try_upload(self, data: _Buffer) -> Upload:
        """Like upload, but raises WouldBlockError instead of waiting."""
    def read(self) -> bytes:
        """The texels now, read back, tightly packed."""
    def stats(self) -> dict[str, int | bool]:
        """in_flight, queued, staging_capacity, ring_free, released."""
    def release(self) -> None:
        """Cancels queued uploads, waits for those in flight, gives back staging."""
    @property
    def size(self) -> tuple[int, int]: ...
    @property
    def format(self) -> str: ...
    @property
    def dtype(self) -> str:
        """The numpy dtype uploads take ("uint8", "float16", "uint16", "float32", ...)."""

class Upload:
    """An upload's future."""

    def done(self) -> bool:
        """Whether it has ended."""
    @property
    def status(self) -> Literal["queued", "started", "submitted", "done", "cancelled", "superseded", "failed"]: ...
    def result(self, timeout: float | None = None) -> float | None:
        """Waits; its latency in seconds. Raises UploadCancelledError, UploadFailedError, TimeoutError."""
    def add_done_callback(self, fn: Callable[[Upload], object]) -> None:
        """Calls fn(upload) on stagehand's Python thread once it has ended."""
    def cancel(self) -> bool:
        """Cancels it unless it was submitted; whether it will end cancelled."""
    def __await__(self) -> Generator[Any, None, float | None]: ...

class CacheInfo(TypedDict):
    budget: int
    bytes: int
    frames: int
    ahead: int
    behind: int
    ram: list[tuple[int, int]]
    device: list[tuple[int, int]]

class Player:
    """Playback a program drives: commands return at once; the clock is the player's."""

    def __init__(
        self,
        source: str | os.PathLike[str],
        fps: float | None = None,
        audio: str | os.PathLike[str] | None = None,
        cache: int | str | None = None,
        mode: Literal["realtime", "every-frame"] = "realtime",
        *,
        gpu: Gpu | None = None,
        size: tuple[int, int] | None = None,
        looped: bool = False,
        paused: bool = True,
        range: tuple[int, int] | None = None,
        threads: int | None = None,
        mute: bool = False,
        gpu_cache: int | str | None = None,
    ) -> None: ...
    def play(self) -> None: ...
    def pause(self) -> None: ...
    def seek(self, frame: int) -> None:
        """Shows ``frame`` (0 is the range's first) and pauses."""
    def step(self, n: int = 1) -> None:
        """Steps n frames (back when negative) and pauses."""
    def expose(self, stops: float) -> None: ...
    def resize(self, width: int, height: int) -> None: ...
    @property
    def frame(self) -> int | None:
        """The frame on screen, 0 the range's first."""
    @property
    def frame_number(self) -> int | None:
        """The frame on screen's own number (a sequence's file number, a movie's position)."""
    @property
    def timecode(self) -> str | None:
        """The frame on screen's timecode, "hh:mm:ss:ff" from the range's first frame."""
    @property
    def playing(self) -> bool: ...
    @property
    def looped(self) -> bool: ...
    @looped.setter
    def looped(self, on: bool) -> None: ...
    @property
    def range(self) -> tuple[int, int]:
        """The positions played, (first, last): the in and out points, else (0, len - 1)."""
    def set_range(self, first: int, last: int) -> None:
        """Plays only positions first to last (in and out points, both played)."""
    def clear_range(self) -> None:
        """Plays the whole range again."""
    def mark_in(self) -> None:
        """Makes the frame on screen the in point."""
    def mark_out(self) -> None:
        """Makes the frame on screen the out point."""
    @property
    def rate(self) -> float:
        """Play time per wall time (1/16 to 16); sound plays at 1 only."""
    @rate.setter
    def rate(self, rate: float) -> None: ...
    @property
    def transfer(self) -> str | None:
        """"srgb", "rec709" or "linear" for scene-linear sources; None for display-referred ones."""
    @transfer.setter
    def transfer(self, name: str) -> None: ...
    @property
    def exposure(self) -> float | None:
        """Stops of exposure of scene-linear sources; None for display-referred ones."""
    @exposure.setter
    def exposure(self, stops: float) -> None: ...
    @property
    def ended(self) -> bool: ...
    @property
    def events_lost(self) -> int:
        """Events let go because 1,024 waited unforwarded; 0 while handlers keep up."""
        ...
    def __len__(self) -> int: ...
    def wait(self, frame: int | None = None, playing: bool | None = None, timeout: float = 10.0) -> bool:
        """Waits until the frame on screen and/or playing are as given; whether they came."""
    def on(
        self,
        event: Literal["frame-changed", "play-start", "play-stop", "cache-changed", "ended", "error"],
        fn: Callable[..., object],
    ) -> None:
        """Calls fn on each event (frame-changed: fn(frame); error: fn(message))."""
    def cache_info(self) -> CacheInfo | None: ...
    def frame_array(self) -> Any:
        """The picture on screen: numpy uint8 (height, width, 4)."""
    def frame_bytes(self, width: int, height: int) -> bytes:
        """The picture drawn at width x height, letterboxed, RGBA rows."""
    def attach_window(self, window_id: int, display: str | None = None) -> NativeView:
        """Presents into the X11 window window_id."""
    def run_window(
        self, seconds: float | None = None, paused: bool = False, size: tuple[int, int] = (1280, 720)
    ) -> dict[str, Any]:
        """Plays the source in stagehand's own window (keys, timeline) until closed or seconds; blocks."""
    def close(self) -> dict[str, Any]:
        """Ends playback; the summary."""
    def summary(self) -> dict[str, Any]:
        """The whole summary once closed; while open, the summary so far (frames, ticks, bandwidth, frame, playing, cache)."""
    def __enter__(self) -> Player: ...
    def __exit__(self, *args: Any) -> bool: ...

class NativeView:
    """A player presented into another toolkit's native window."""

    def present(self, width: int | None = None, height: int | None = None) -> tuple[int, int]:
        """Draws the frame on screen into the window; the size drawn."""
    def close(self) -> None:
        """Lets go of the window."""
