"""Fixtures for stagehand_gpu's tests.

Run them (from the repository root) under an X server of their own, on
each software adapter:

    XDG_RUNTIME_DIR=$(mktemp -d) WGPU_BACKEND=vulkan QT_QPA_PLATFORM=xcb \
        scripts/with-xvfb .venv/bin/python -m pytest -q crates/stagehand-py/tests

``WGPU_BACKEND=gl`` runs them on the GL adapter instead. Everything is
small (frames of 64x48 to 320x200) because the adapters draw on the CPU.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

import stagehand_gpu

# The sequence's frames: frame i (0-based) is a solid picture of colour i.
# Far enough apart in some channel that a ±2 tolerance never mixes two up.
FRAME_COLOURS = [
    (0xC0, 0x30, 0x20),
    (0x20, 0xA0, 0x40),
    (0x30, 0x40, 0xD0),
    (0xE0, 0xC0, 0x20),
    (0x80, 0x20, 0xA0),
    (0x20, 0xC0, 0xC0),
    (0xF0, 0x80, 0x60),
    (0x60, 0x60, 0x60),
    (0xA0, 0xE0, 0x80),
    (0x40, 0x20, 0x10),
    (0xD0, 0xD0, 0xF0),
    (0x10, 0x60, 0x90),
]
FRAME_SIZE = (96, 64)  # (width, height)


@pytest.fixture(scope="session")
def gpu():
    """The GPU every test shares (``WGPU_BACKEND`` picks the adapter)."""
    return stagehand_gpu.Gpu.open()


@pytest.fixture
def engine(gpu):
    """An upload engine with two workers, closed after the test."""
    engine = stagehand_gpu.UploadEngine(gpu, workers=2)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def frame_colours():
    """The (r, g, b) of each frame of ``sequence``, frame 0 first."""
    return list(FRAME_COLOURS)


@pytest.fixture(scope="session")
def sequence(tmp_path_factory, frame_colours):
    """A folder of 12 PNG frames, frame_0001.png to frame_0012.png, 96x64,
    each a solid colour of ``frame_colours`` (written by ffmpeg)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("ffmpeg is not installed: the sequence fixture writes its PNG frames with it")
    folder = tmp_path_factory.mktemp("sequence")
    width, height = FRAME_SIZE
    for number, (r, g, b) in enumerate(frame_colours, start=1):
        path = folder / f"frame_{number:04d}.png"
        # format=rgb24 keeps the colour exact (the colour source's own
        # format is YUV, which would round it).
        source = f"color=c=0x{r:02X}{g:02X}{b:02X}:s={width}x{height},format=rgb24"
        subprocess.run(
            [ffmpeg, "-v", "error", "-y", "-f", "lavfi", "-i", source, "-frames:v", "1", str(path)],
            check=True,
            timeout=60,
        )
    return folder


def assert_colour(pixel, expected, tolerance=2, what="pixel"):
    """Asserts pixel's first three channels are within tolerance of expected."""
    got = tuple(int(c) for c in pixel[:3])
    assert all(abs(g - e) <= tolerance for g, e in zip(got, expected)), (
        f"{what} is {got}, expected {tuple(expected)} (±{tolerance})"
    )


# The grey of the scene-linear fixture: ffmpeg writes 0x80 as 128/255.
LINEAR_GREY = 128 / 255


@pytest.fixture(scope="session")
def linear_sequence(tmp_path_factory):
    """Three scene-linear frames, grey_0001.exr to grey_0003.exr, 96x64,
    every sample LINEAR_GREY as 32-bit float (written by ffmpeg's EXR
    encoder)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("ffmpeg is not installed: the EXR fixture is written with it")
    folder = tmp_path_factory.mktemp("linear")
    width, height = FRAME_SIZE
    subprocess.run(
        [ffmpeg, "-loglevel", "error", "-f", "lavfi", "-i",
         f"color=c=0x808080:s={width}x{height},format=gbrpf32le",
         "-frames:v", "3", "-c:v", "exr", str(folder / "grey_%04d.exr")],
        check=True,
    )
    return folder


def srgb(linear):
    """A linear value through the sRGB curve, as an 8-bit code."""
    v = 12.92 * linear if linear <= 0.0031308 else 1.055 * linear ** (1 / 2.4) - 0.055
    return round(v * 255)
