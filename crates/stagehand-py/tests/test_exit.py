"""A program that ends with stagehand's threads still busy (a player
playing, uploads in flight with callbacks, events pending) exits cleanly:
no crash, no hang, exit status 0."""

from __future__ import annotations

import os
import subprocess
import sys

LEFT_RUNNING = """
import sys
import numpy as np
import stagehand_gpu as sh

gpu = sh.Gpu.open()
engine = sh.UploadEngine(gpu, workers=2)
texture = engine.create_texture(128, 128)
uploads = [texture.upload(np.full((128, 128, 4), i, np.uint8)) for i in range(12)]
for upload in uploads:
    upload.add_done_callback(lambda u: None)
player = sh.Player(sys.argv[1], fps=24, size=(96, 64), gpu=gpu, looped=True)
player.on("frame-changed", lambda frame: None)
player.play()
assert player.wait(playing=True, timeout=10)
print("left running", flush=True)
"""


def test_the_interpreter_exits_cleanly_with_a_player_playing_and_uploads_in_flight(sequence):
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", LEFT_RUNNING, str(sequence)],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert done.stdout.strip() == "left running"
