"""``stagehand_gpu.qt.PlayerWidget`` in a real Qt window on the test's X
server: the pixels the server shows at the widget are the frame's, after
a step and after a resize, presented natively (the player draws into the
widget's X11 window) and through a QImage."""

from __future__ import annotations

import os
import time

import pytest

QtWidgets = pytest.importorskip(
    "PySide6.QtWidgets", reason="PySide6 is not installed: the Qt widget is not tested"
)
if not os.environ.get("DISPLAY"):
    pytest.skip("no DISPLAY: the Qt widget needs an X server (run under scripts/with-xvfb)", allow_module_level=True)

from PySide6 import QtCore, QtGui  # noqa: E402

import stagehand_gpu  # noqa: E402
from conftest import FRAME_SIZE, LINEAR_GREY, srgb  # noqa: E402

TIMEOUT = 10.0  # seconds any one wait may take


@pytest.fixture(scope="module")
def app():
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(["stagehand-tests"])
    if app.platformName() != "xcb":
        pytest.skip(f"Qt runs on {app.platformName()!r}, not xcb: the X server's pixels cannot be read")
    return app


def process_until(app, predicate, timeout=TIMEOUT):
    """Processes Qt's events until predicate() holds (bounded); whether it did."""
    deadline = time.monotonic() + timeout
    while True:
        app.processEvents()
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def server_pixel(point):
    """The X server's pixel at global point, read from the root window
    (what is really on screen, natively presented pixels included)."""
    image = QtGui.QGuiApplication.primaryScreen().grabWindow(0).toImage()
    colour = image.pixelColor(point)
    return (colour.red(), colour.green(), colour.blue())


def close(got, expected, tolerance=2):
    return all(abs(g - e) <= tolerance for g, e in zip(got, expected))


def expect_on_screen(app, widget, where, expected, what):
    """Waits (bounded) until the server shows expected at the widget's
    point where (fractions of its size), then asserts it."""
    seen = []

    def shows():
        x = min(widget.width() - 1, int(widget.width() * where[0]))
        y = min(widget.height() - 1, int(widget.height() * where[1]))
        seen.append(server_pixel(widget.mapToGlobal(QtCore.QPoint(x, y))))
        return close(seen[-1], expected)

    process_until(app, shows)
    assert close(seen[-1], expected), (
        f"{what}: the X server shows {seen[-1]} at the widget's point {where}, expected {expected} (±2)"
    )


CENTRE = (0.5, 0.5)
# Inside the letterboxed picture at 400x260, outside the window at 320x200.
GROWN_CORNER = (0.9, 0.9)


@pytest.mark.parametrize("native", [True, False], ids=["native", "qimage"])
def test_player_widget_shows_the_frame_after_a_step_and_a_resize(app, gpu, sequence, frame_colours, native):
    from stagehand_gpu.qt import PlayerWidget

    player = stagehand_gpu.Player(sequence, fps=24, size=FRAME_SIZE, gpu=gpu)
    window = QtWidgets.QWidget()
    window.setWindowTitle(f"stagehand test ({'native' if native else 'qimage'})")
    layout = QtWidgets.QVBoxLayout(window)
    layout.setContentsMargins(0, 0, 0, 0)
    widget = PlayerWidget(player, native=native)
    layout.addWidget(widget)
    changed = []
    widget.frameChanged.connect(changed.append)
    window.resize(320, 200)
    window.show()
    try:
        assert widget.player is player
        assert process_until(app, lambda: widget.isVisible() and widget.size() == QtCore.QSize(320, 200))
        expect_on_screen(app, widget, CENTRE, frame_colours[0], "the paused frame 0")
        assert widget.native is native
        assert widget.fallback_reason is None

        player.step(1)
        assert player.wait(frame=1, timeout=TIMEOUT)
        assert process_until(app, lambda: 1 in changed), f"frameChanged emitted {changed}"
        expect_on_screen(app, widget, CENTRE, frame_colours[1], "frame 1 after step(1)")

        window.resize(400, 260)
        assert process_until(app, lambda: widget.size() == QtCore.QSize(400, 260))
        expect_on_screen(app, widget, CENTRE, frame_colours[1], "frame 1 at 400x260")
        expect_on_screen(app, widget, GROWN_CORNER, frame_colours[1], "frame 1 where the window grew")
        assert widget.native is native, f"fell back: {widget.fallback_reason}"
        assert widget.fallback_reason is None
        assert changed[-1] == 1
    finally:
        window.close()
        process_until(app, lambda: not window.isVisible(), timeout=2)
        window.deleteLater()
        app.processEvents()
        player.close()


@pytest.mark.parametrize("native", [True, False], ids=["native", "qimage"])
def test_player_widget_redraws_a_paused_frame_when_its_display_transfer_changes(
    app, gpu, linear_sequence, native
):
    from stagehand_gpu.qt import PlayerWidget

    player = stagehand_gpu.Player(linear_sequence, fps=24, size=FRAME_SIZE, gpu=gpu)
    widget = PlayerWidget(player, native=native)
    widget.resize(320, 200)
    widget.show()
    try:
        assert process_until(app, widget.isVisible)
        grey = srgb(LINEAR_GREY)
        expect_on_screen(app, widget, CENTRE, (grey, grey, grey), "the paused frame through sRGB")
        player.transfer = "linear"
        linear = round(LINEAR_GREY * 255)
        expect_on_screen(app, widget, CENTRE, (linear, linear, linear), "the same frame, linear")
    finally:
        widget.close()
        process_until(app, lambda: not widget.isVisible(), timeout=2)
        widget.deleteLater()
        app.processEvents()
        player.close()
