"""The Python examples run, as a user would run them, and say what they did."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "python"


def run_example(*args, timeout=120):
    """Runs python with args from the repository root, in this environment."""
    done = subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


def test_report_example_prints_three_buffers_of_784_bytes():
    out = run_example(EXAMPLES / "report.py")
    assert "object_counts" in out
    line = next((l for l in out.splitlines() if l.startswith("Buffer {")), None)
    assert line is not None, out
    assert "'count': 3" in line
    assert "'resource_mem': 784" in line
    texture = next(l for l in out.splitlines() if l.startswith("Texture {"))
    assert "'resource_mem': 65536" in texture


def test_stream_frames_example_lands_every_frame_it_streams():
    out = run_example(EXAMPLES / "stream_frames.py", "--size", "160x90", "--frames", "12", "--fps", "48")
    match = re.search(r"streamed 12 frames of 160x90: (\d+) landed, (\d+) superseded or cancelled, 0 failed", out)
    assert match, out
    landed, cancelled = map(int, match.groups())
    assert landed + cancelled == 12
    assert landed >= 1
    assert "awaited the last 4 uploads" in out
    assert "stats: {" in out


def test_qt_player_example_opens_and_quits(sequence):
    pytest.importorskip("PySide6", reason="PySide6 is not installed: the Qt example is not run")
    if not os.environ.get("DISPLAY"):
        pytest.skip("no DISPLAY: the Qt example needs an X server (run under scripts/with-xvfb)")
    # Scrubs the example's slider to frame 3 once its window is up, says
    # where the player went, then quits its event loop.
    driver = (
        "import runpy, sys\n"
        "from PySide6 import QtCore, QtWidgets\n"
        "from stagehand_gpu.qt import PlayerWidget\n"
        "run = QtWidgets.QApplication.exec\n"
        "def windows():\n"
        "    return [w for w in QtWidgets.QApplication.topLevelWidgets() if w.findChild(PlayerWidget)]\n"
        "def scrub():\n"
        "    (window,) = windows()\n"
        "    window.findChild(QtWidgets.QSlider).setValue(3)\n"
        "    player = window.findChild(PlayerWidget).player\n"
        "    print('scrubbed to 3:', player.wait(frame=3, timeout=10), flush=True)\n"
        "    QtWidgets.QApplication.quit()\n"
        "def exec_(*_):\n"
        "    QtCore.QTimer.singleShot(300, scrub)\n"
        "    return run()\n"
        "QtWidgets.QApplication.exec = exec_\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    out = run_example("-c", driver, EXAMPLES / "qt_player.py", sequence)
    lines = out.splitlines()
    assert "scrubbed to 3: True" in lines, out
    assert lines[-1].startswith("{") and "'frames'" in lines[-1], out  # the player's summary
