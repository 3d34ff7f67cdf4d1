"""Streams numpy frames into a GPU texture at a steady rate with the
upload engine, waiting on the uploads' futures three ways: a done
callback on every upload, a blocking ``result()`` now and then, and
``await`` for the last few in asyncio. Prints the engine's numbers.

Run it from the repository root (after scripts/setup built the module):

    .venv/bin/python examples/python/stream_frames.py
    .venv/bin/python examples/python/stream_frames.py --size 320x180 --frames 12

Defaults: 48 frames of 1920x1080 at 24 fps (``--size 3840x2160`` for 4K).
WGPU_BACKEND=vulkan or WGPU_BACKEND=gl picks the backend.
"""

import argparse
import asyncio
import threading
import time

import numpy as np

import stagehand_gpu as sh


def size(text):
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def make_frame(i, count, width, height):
    """Frame i of count, RGBA: a bar moving across a gradient."""
    ramp = np.linspace(0, 255, width, dtype=np.float32).astype(np.uint8)
    frame = np.empty((height, width, 4), dtype=np.uint8)
    frame[..., 0] = ramp
    frame[..., 1] = (i * 255) // max(1, count - 1)
    frame[..., 2] = ramp[::-1]
    frame[..., 3] = 255
    x = (i * width) // count
    frame[:, x : x + max(1, width // 32), :3] = 255
    return frame


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=size, default=(1920, 1080), help="WIDTHxHEIGHT (default 1920x1080)")
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--fps", type=float, default=24.0)
    args = parser.parse_args()
    width, height = args.size

    gpu = sh.Gpu.open()
    print(f"adapter: {gpu.adapter}")
    count = args.frames
    ended = {"done": 0, "cancelled": 0, "failed": 0}
    lock = threading.Lock()
    all_ended = threading.Event()

    def on_done(upload):  # runs on stagehand's Python thread
        with lock:
            key = {"done": "done", "failed": "failed"}.get(upload.status, "cancelled")
            ended[key] += 1
            if sum(ended.values()) == count:
                all_ended.set()

    with sh.UploadEngine(gpu, workers=2) as engine:
        texture = engine.create_texture(width, height, "rgba8unorm", staging="ring:3", label="stream")
        uploads = []
        start = time.monotonic()
        for i in range(count):
            frame = make_frame(i, count, width, height)
            # The frame's moment on the clock: upload no earlier.
            delay = start + i / args.fps - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            # The upload reads the array in place and holds it until it has
            # ended: the frame must not be written to meanwhile.
            upload = texture.upload(frame)
            upload.add_done_callback(on_done)
            uploads.append(upload)
            if i % 8 == 7:
                try:
                    latency = upload.result(timeout=10)
                    print(f"frame {i}: landed, {1000 * (latency or 0):.1f} ms after it was queued")
                except sh.UploadCancelledError:
                    print(f"frame {i}: superseded by a newer frame")

        async def await_last(last):
            outcomes = await asyncio.gather(*last, return_exceptions=True)
            return sum(not isinstance(o, BaseException) for o in outcomes)

        last = uploads[-4:]
        landed = asyncio.run(await_last(last))
        print(f"awaited the last {len(last)} uploads: {landed} landed")
        if not all_ended.wait(10):
            raise SystemExit("not every upload ended within 10 s")
        if texture.read() != frame.tobytes():
            raise SystemExit("the texture does not hold the last frame")
        stats = engine.stats()
        texture.release()

    print(
        f"streamed {count} frames of {width}x{height}: "
        f"{ended['done']} landed, {ended['cancelled']} superseded or cancelled, {ended['failed']} failed"
    )
    print("stats:", stats)


if __name__ == "__main__":
    main()
