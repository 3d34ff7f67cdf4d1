"""A small Qt review player: the picture, a play/pause button, and a
slider that scrubs (seek) and follows playback (frameChanged).

Run it from the repository root (after scripts/setup built the module),
with a folder of frames, a ``shot.####.exr`` pattern or a movie:

    .venv/bin/python examples/python/qt_player.py path/to/frames
"""

import sys

from PySide6 import QtCore, QtWidgets

import stagehand_gpu as sh
from stagehand_gpu.qt import PlayerWidget

if len(sys.argv) != 2:
    sys.exit(f"usage: {sys.argv[0]} SOURCE")
app = QtWidgets.QApplication(sys.argv)
player = sh.Player(sys.argv[1], size=(1280, 720))
window = QtWidgets.QWidget()
window.setWindowTitle(f"stagehand: {sys.argv[1]}")
view = PlayerWidget(player)
button = QtWidgets.QPushButton("Play")
slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
slider.setRange(*player.range)
bar = QtWidgets.QHBoxLayout()
bar.addWidget(button)
bar.addWidget(slider)
layout = QtWidgets.QVBoxLayout(window)
layout.addWidget(view, 1)
layout.addLayout(bar)


def toggle():
    if player.playing:
        player.pause()
        button.setText("Play")
    else:
        player.play()
        button.setText("Pause")


def follow(frame):
    with QtCore.QSignalBlocker(slider):  # following is not scrubbing
        slider.setValue(frame)


button.clicked.connect(toggle)
slider.valueChanged.connect(player.seek)
view.frameChanged.connect(follow)
window.resize(960, 600)
window.show()
code = app.exec()
print(player.close())
sys.exit(code)
