"""What the binding adds to an upload call: 4K RGBA8 numpy frames handed
to ``try_upload`` at 60 fps from Python, the call alone timed on the
calling (render) thread, beside the same loop in Rust (``stagehand bench
upload``'s 60 fps "stagehand, whole frame" row, whose "call p99" is the
upload call alone). Same engine set-up on both sides: two workers below
the caller's priority, a ring of three staging buffers, a frame the ring
cannot take yet skipped.

    .venv/bin/python crates/stagehand-py/bench/upload_call.py \
        --frames 120 --stagehand target/release/stagehand
"""

import argparse
import subprocess
import time

import numpy as np

import stagehand_gpu as sh

W, H = 3840, 2160
WARM_UP = 5  # the first frames map and fault fresh staging, as in the Rust bench


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def python_row(frames, fps):
    gpu = sh.Gpu.open()
    rng = np.random.default_rng(7)
    sources = [rng.integers(0, 256, (H, W, 4), dtype=np.uint8) for _ in range(4)]
    with sh.UploadEngine(gpu, workers=2, priority="low") as engine:
        texture = engine.create_texture(W, H, "rgba8unorm", staging="ring:3")
        calls, last = [], None
        start = time.perf_counter()
        for i in range(frames):
            due = start + i / fps
            while time.perf_counter() < due:
                time.sleep(max(0.0, min(0.001, due - time.perf_counter())))
            t = time.perf_counter()
            try:
                last = texture.try_upload(sources[i % len(sources)])
            except sh.WouldBlockError:
                pass
            calls.append((time.perf_counter() - t) * 1e3)
        if last is not None:
            last.result(timeout=60)
        landed = engine.stats()["completed"]
        texture.release()
    steady = calls[WARM_UP:]
    return percentile(steady, 50), percentile(steady, 99), max(steady), landed


def rust_row(stagehand, frames):
    out = subprocess.run(
        [stagehand, "bench", "upload", "--frames", str(frames), "--rounds", "1"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    paced = out.split("60 fps", 1)[1]
    for line in paced.splitlines():
        if line.strip().startswith("stagehand, whole frame"):
            cells = line.split()
            # name (3 words), p50, p99, max, call p99, first max, landed, GB/s
            return float(cells[6]), int(cells[8])
    raise SystemExit("the Rust bench printed no 60 fps 'stagehand, whole frame' row:\n" + out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--fps", type=float, default=60.0)
    parser.add_argument("--stagehand", help="the stagehand binary, for the Rust row")
    args = parser.parse_args()
    p50, p99, worst, landed = python_row(args.frames, args.fps)
    print(f"4K RGBA8 frames at {args.fps:g} fps, {args.frames} frames; the upload call alone, after the first {WARM_UP}; ms")
    print(f"{'caller':>34} {'call p50':>9} {'call p99':>9} {'max':>8} {'landed':>7}")
    print(f"{'Python, try_upload(numpy)':>34} {p50:9.3f} {p99:9.3f} {worst:8.3f} {landed:7d}")
    if args.stagehand:
        rust_p99, rust_landed = rust_row(args.stagehand, args.frames)
        print(f"{'Rust, try_upload(Bytes)':>34} {'':>9} {rust_p99:9.3f} {'':>8} {rust_landed:7d}")


if __name__ == "__main__":
    main()
