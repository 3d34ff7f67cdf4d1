"""``PlayerWidget``: a ``stagehand_gpu.Player`` in a Qt layout.

PySide6 is used where it is installed, else PyQt6. On X11 (Qt's ``xcb``
platform with a ``DISPLAY``) the widget is a native window that the player
presents into by its ``winId()``; elsewhere (Wayland, a platform without a
native window for it), or if presenting natively fails, the frame is drawn
as a ``QImage``. A ``QTimer`` asks the player what is on screen; the
player's clock picks the frame, and the widget draws only when the frame,
its size, the display transform or an expose changed.
"""

from __future__ import annotations

import os

try:
    from PySide6 import QtCore, QtGui, QtWidgets

    Signal = QtCore.Signal
except ImportError:  # PyQt6 names the signal class differently
    from PyQt6 import QtCore, QtGui, QtWidgets  # type: ignore[no-redef]

    Signal = QtCore.pyqtSignal  # type: ignore[attr-defined]

from ._errors import ClosedError, StagehandError

__all__ = ["PlayerWidget"]


def native_possible() -> bool:
    """Whether this Qt can hand the player an X11 window to present into."""
    app = QtGui.QGuiApplication.instance()
    platform = app.platformName() if app is not None else ""
    return platform == "xcb" and bool(os.environ.get("DISPLAY"))


class PlayerWidget(QtWidgets.QWidget):
    """Shows ``player``. ``native``: ``True`` presents into the widget's
    native window (X11 only), ``False`` draws a ``QImage``, ``None`` (the
    default) chooses. ``interval_ms``: how often the timer asks the player
    what is on screen (default 10 ms, so a 48 fps source is never missed).
    ``frameChanged(int)`` is emitted on the widget's thread when the frame
    on screen changes. Keys, the timeline and the transport are the host
    application's: it drives ``player`` directly."""

    frameChanged = Signal(int)

    def __init__(self, player, parent=None, native=None, interval_ms=10):
        super().__init__(parent)
        self._player = player
        self._native = native_possible() if native is None else bool(native)
        if self._native and not native_possible():
            self._native = False
            self.fallback_reason = "no X11 display for a native window"
        else:
            self.fallback_reason = None
        self._view = None
        self._drawn = None  # (frame, size, look) last presented
        self._frame = None  # last frame reported
        self._image = None
        self.setMinimumSize(32, 18)
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        if self._native:
            self.setAttribute(QtCore.Qt.WidgetAttribute.WA_NativeWindow, True)
            self.setAttribute(QtCore.Qt.WidgetAttribute.WA_PaintOnScreen, True)
            self.setAttribute(QtCore.Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self._timer = QtCore.QTimer(self)
        self._timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
        self._timer.setInterval(max(1, int(interval_ms)))
        self._timer.timeout.connect(self._tick)
        self._timer.start()

    @property
    def player(self):
        """The player shown."""
        return self._player

    @property
    def native(self) -> bool:
        """Whether the player presents into the widget's native window."""
        return self._native

    def sizeHint(self):  # noqa: N802 (Qt's name)
        return QtCore.QSize(640, 360)

    def paintEngine(self):  # noqa: N802 (Qt's name)
        # The player draws a native widget's pixels, not Qt's painter.
        return None if self._native else super().paintEngine()

    def _physical_size(self):
        ratio = self.devicePixelRatioF()
        return (max(1, round(self.width() * ratio)), max(1, round(self.height() * ratio)))

    def _tick(self):
        try:
            frame = self._player.frame
        except ClosedError:
            self._timer.stop()
            self._drop_view()
            return
        if frame is not None and frame != self._frame:
            self._frame = frame
            self.frameChanged.emit(frame)
        if self._key() != self._drawn and self.isVisible():
            self._draw()

    def _key(self):
        """What the picture shows: the frame, at the widget's size, through
        the display transform (a paused frame changes when it does)."""
        try:
            look = (self._player.transfer, self._player.exposure)
        except ClosedError:
            look = None
        return (self._frame, self._physical_size(), look)

    def _draw(self):
        size = self._physical_size()
        key = self._key()
        if self._native:
            try:
                if self._view is None:
                    self._view = self._player.attach_window(int(self.winId()))
                self._view.present(*size)
                self._drawn = key
                return
            except ClosedError:
                return
            except StagehandError as e:
                self._fall_back(str(e))
        try:
            pixels = self._player.frame_bytes(*size)
        except ClosedError:
            return
        image = QtGui.QImage(pixels, size[0], size[1], size[0] * 4, QtGui.QImage.Format.Format_RGBA8888)
        image.setDevicePixelRatio(self.devicePixelRatioF())
        self._image = image.copy()
        self._drawn = key
        self.update()

    def _fall_back(self, reason):
        """Draws through the image from now on, saying why."""
        self.fallback_reason = reason
        self._drop_view()
        self._native = False
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_PaintOnScreen, False)

    def _drop_view(self):
        if self._view is not None:
            self._view.close()
            self._view = None

    def paintEvent(self, event):  # noqa: N802 (Qt's name)
        if self._native:
            # An expose: the server lost the window's pixels.
            self._drawn = None
            self._draw()
            return
        painter = QtGui.QPainter(self)
        if self._image is None:
            painter.fillRect(self.rect(), QtGui.QColor("black"))
        else:
            painter.drawImage(self.rect(), self._image)
        painter.end()

    def resizeEvent(self, event):  # noqa: N802 (Qt's name)
        self._drawn = None
        super().resizeEvent(event)

    def event(self, event):
        if event.type() == QtCore.QEvent.Type.WinIdChange:
            self._drop_view()
            self._drawn = None
        return super().event(event)

    def hideEvent(self, event):  # noqa: N802 (Qt's name)
        self._drop_view()
        super().hideEvent(event)

    def closeEvent(self, event):  # noqa: N802 (Qt's name)
        self._timer.stop()
        self._drop_view()
        super().closeEvent(event)
