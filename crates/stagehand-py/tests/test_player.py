"""The player driven from Python: it opens paused on the first frame, its
picture is the frame's, seek/step/play/pause move it, events arrive in
order, and bad input is refused with the right exception."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import stagehand_gpu
from conftest import FRAME_SIZE, LINEAR_GREY, assert_colour, srgb


class Events:
    """Collects a player's events from stagehand's Python thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []
        self.changed = threading.Condition(self.lock)

    def recorder(self, name):
        def record(*args):
            with self.changed:
                self.items.append((name, *args))
                self.changed.notify_all()

        return record

    def wait_for(self, predicate, timeout=10):
        """Waits (bounded) until predicate(items) holds; whether it did."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate(list(self.items)), timeout)

    def snapshot(self):
        with self.lock:
            return list(self.items)


@pytest.fixture
def player(gpu, sequence):
    player = stagehand_gpu.Player(sequence, fps=24, size=FRAME_SIZE, gpu=gpu)
    yield player
    player.close()  # closing a closed player returns its summary again


def eventually(predicate, timeout=10):
    """Polls predicate (bounded) until it holds; whether it did."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def centre(array):
    height, width = array.shape[:2]
    return array[height // 2, width // 2]


def test_player_opens_paused_on_frame_0_of_12(player):
    assert player.frame == 0
    assert player.playing is False
    assert len(player) == 12
    assert player.range == (0, 11)
    assert player.ended is False
    assert player.looped is False


def test_frame_array_is_the_first_frames_colour(player, frame_colours):
    array = player.frame_array()
    assert isinstance(array, np.ndarray)
    assert array.dtype == np.uint8
    assert array.shape == (64, 96, 4)
    assert_colour(centre(array), frame_colours[0], what="frame 0's centre")
    # A solid frame: every pixel is that colour.
    assert_colour(array[0, 0], frame_colours[0], what="frame 0's corner")
    assert_colour(array[-1, -1], frame_colours[0], what="frame 0's corner")


def test_seek_and_step_show_those_frames(player, frame_colours):
    player.seek(5)
    assert player.wait(frame=5, timeout=10)
    assert player.frame == 5
    assert player.playing is False
    assert_colour(centre(player.frame_array()), frame_colours[5], what="frame 5's centre")
    player.step(1)
    assert player.wait(frame=6, timeout=10)
    assert_colour(centre(player.frame_array()), frame_colours[6], what="frame 6's centre")
    player.step(-2)
    assert player.wait(frame=4, timeout=10)
    assert player.frame == 4
    assert_colour(centre(player.frame_array()), frame_colours[4], what="frame 4's centre")


def test_seek_past_the_end_clamps_to_the_last_frame(player, frame_colours):
    player.seek(100)
    assert player.wait(frame=11, timeout=10)
    assert_colour(centre(player.frame_array()), frame_colours[11], what="frame 11's centre")


def test_frame_changed_events_follow_the_commands(player):
    events = Events()
    player.on("frame-changed", events.recorder("frame-changed"))
    player.seek(3)
    assert player.wait(frame=3, timeout=10)
    player.step(2)
    assert player.wait(frame=5, timeout=10)
    player.step(-1)
    assert player.wait(frame=4, timeout=10)
    assert events.wait_for(lambda items: items and items[-1] == ("frame-changed", 4)), (
        f"frame-changed events: {events.snapshot()}"
    )
    frames = [args[1] for args in events.snapshot()]
    assert all(isinstance(f, int) for f in frames)
    # Each command's frame was announced, in the order they came.
    rest = iter(frames)
    assert all(wanted in rest for wanted in (3, 5, 4)), f"frame-changed frames: {frames}"
    assert player.events_lost == 0, "a handler that keeps up loses no event"


def test_play_then_pause_sends_play_start_then_play_stop(player):
    events = Events()
    player.on("play-start", events.recorder("play-start"))
    player.on("play-stop", events.recorder("play-stop"))
    player.looped = True  # keeps playing until paused, however slow the adapter
    # The setter is a command to the player's thread, like the others.
    assert eventually(lambda: player.looped is True)
    player.play()
    assert player.wait(playing=True, timeout=10)
    player.pause()
    assert player.wait(playing=False, timeout=10)
    assert player.playing is False
    assert events.wait_for(lambda items: ("play-stop",) in items), f"events: {events.snapshot()}"
    names = [item[0] for item in events.snapshot()]
    assert names.index("play-start") < names.index("play-stop")
    # Paused on a frame that is in the range, and it holds still.
    frame = player.frame
    assert 0 <= frame <= 11
    assert player.wait(frame=frame, playing=False, timeout=1)


def test_cache_info_has_the_documented_keys(player):
    info = player.cache_info()
    assert isinstance(info, dict)
    assert set(info) == {"budget", "bytes", "frames", "ahead", "behind", "ram", "device"}
    assert info["budget"] > 0
    assert info["frames"] >= 1  # the frame on screen was decoded into it
    assert isinstance(info["ram"], list)


def test_frame_bytes_draws_at_the_asked_size(player, frame_colours):
    pixels = player.frame_bytes(50, 50)
    assert isinstance(pixels, bytes)
    assert len(pixels) == 50 * 50 * 4
    array = np.frombuffer(pixels, dtype=np.uint8).reshape(50, 50, 4)
    # 96x64 letterboxed into 50x50: the centre is the picture.
    assert_colour(array[25, 25], frame_colours[0], what="frame_bytes' centre")


def test_resize_redraws_the_picture_at_the_new_size(player, frame_colours):
    player.resize(48, 32)
    assert eventually(lambda: player.frame_array().shape == (32, 48, 4)), player.frame_array().shape
    assert_colour(centre(player.frame_array()), frame_colours[0], what="the resized picture's centre")
    with pytest.raises(stagehand_gpu.InvalidArgumentError):
        player.resize(0, 32)


def test_close_returns_the_summary_and_then_commands_raise_closed_error(player):
    so_far = player.summary()
    assert so_far["frame"] == 0 and so_far["playing"] is False, so_far
    summary = player.close()
    assert isinstance(summary, dict) and summary
    assert summary["frames"]["shown"] >= 1, summary["frames"]
    assert player.summary() == summary
    assert player.close() == summary  # closing twice returns the same
    assert player.ended is True
    with pytest.raises(stagehand_gpu.ClosedError):
        player.play()
    with pytest.raises(stagehand_gpu.ClosedError):
        player.frame_array()
    with pytest.raises(stagehand_gpu.ClosedError):
        _ = player.frame


def test_the_player_is_a_context_manager(gpu, sequence):
    with stagehand_gpu.Player(sequence, fps=24, size=FRAME_SIZE, gpu=gpu) as player:
        assert player.frame == 0
    assert isinstance(player.summary(), dict)
    with pytest.raises(stagehand_gpu.ClosedError):
        player.seek(1)


def test_a_missing_path_is_a_source_error_naming_it(gpu, tmp_path):
    missing = tmp_path / "no-such-shot"
    with pytest.raises(stagehand_gpu.SourceError) as raised:
        stagehand_gpu.Player(missing, fps=24, size=FRAME_SIZE, gpu=gpu)
    assert isinstance(raised.value, OSError)
    assert str(missing) in str(raised.value)


@pytest.mark.parametrize(
    "options",
    [{"mode": "bogus"}, {"fps": -5}, {"cache": "lots"}],
    ids=["mode-bogus", "fps-negative", "cache-lots"],
)
def test_a_bad_option_is_an_invalid_argument(gpu, sequence, options):
    kwargs = {"fps": 24, "size": FRAME_SIZE, "gpu": gpu, **options}
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        stagehand_gpu.Player(sequence, **kwargs)
    assert isinstance(raised.value, ValueError)
    if "fps" in options:
        # The option is named as the keyword that set it.
        assert "fps -5: must be from 0.1 to 1000" in str(raised.value), str(raised.value)


def test_an_unknown_event_is_an_invalid_argument(player):
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        player.on("bogus-event", lambda *args: None)
    assert "bogus-event" in str(raised.value)
    with pytest.raises(TypeError):
        player.on("frame-changed", "not callable")


def test_seeking_before_the_first_frame_is_an_invalid_argument(player):
    with pytest.raises(stagehand_gpu.InvalidArgumentError):
        player.seek(-1)
    assert player.frame == 0


def test_looped_reads_back_what_was_set(player):
    assert player.looped is False
    player.looped = True
    assert player.looped is True
    player.looped = False
    assert player.looped is False


def test_in_and_out_points_move_the_frame_inside_and_keep_seeks_steps_and_loops_there(
    player, frame_colours
):
    # Frame 0 on screen is outside 3..6: the in point's frame shows.
    player.set_range(3, 6)
    assert player.range == (3, 6)
    assert player.wait(frame=3, timeout=10)
    assert_colour(centre(player.frame_array()), frame_colours[3], what="the in point")
    player.seek(10)
    assert player.wait(frame=6, timeout=10), "a seek past the out point stops there"
    player.step(1)
    time.sleep(0.2)
    assert player.frame == 6, "the out point's frame stays, not looping"
    player.looped = True
    player.step(1)
    assert player.wait(frame=3, timeout=10), "looped: a step past the out point wraps to the in point"
    player.play()
    seen = set()
    assert eventually(lambda: seen.add(player.frame) or len(seen) >= 4, timeout=10)
    player.pause()
    assert seen <= {3, 4, 5, 6}, f"played outside the in and out points: {sorted(seen)}"
    player.clear_range()
    assert player.range == (0, 11)


def test_an_inverted_or_negative_range_is_an_invalid_argument(player):
    for first, last in ((5, 2), (-1, 3)):
        with pytest.raises(stagehand_gpu.InvalidArgumentError, match="set_range"):
            player.set_range(first, last)
    assert player.range == (0, 11)


def test_mark_in_and_mark_out_set_the_range_at_the_frame_on_screen(player):
    player.seek(2)
    assert player.wait(frame=2, timeout=10)
    player.mark_in()
    assert player.range == (2, 11)
    player.seek(7)
    assert player.wait(frame=7, timeout=10)
    player.mark_out()
    assert player.range == (2, 7)
    player.seek(9)
    assert player.wait(frame=7, timeout=10), "a seek past the out point stops there"


def test_rate_reads_back_what_was_set_and_a_slow_rate_holds_the_frame(player):
    assert player.rate == 1.0
    player.rate = 1 / 16
    assert player.rate == 1 / 16
    player.play()
    time.sleep(1.0)
    # 24 fps at a sixteenth is 1.5 frames a second; at 1 all 12 would be gone.
    assert player.frame <= 3, f"frame {player.frame} after a second at 1/16"
    player.rate = 2.0
    assert player.rate == 2.0
    for bad in (0.0, -1.0, 17.0, float("nan")):
        with pytest.raises(stagehand_gpu.InvalidArgumentError, match="rate"):
            player.rate = bad


def test_a_display_referred_source_has_no_transfer_and_an_unknown_name_is_invalid(player):
    assert player.transfer is None
    assert player.exposure is None
    player.transfer = "linear"
    assert player.transfer is None
    with pytest.raises(stagehand_gpu.InvalidArgumentError, match="transfer"):
        player.transfer = "gamma 2.2"


def test_exposure_out_of_range_is_an_invalid_argument(player):
    for stops in (float("nan"), float("inf"), 33.0, -40.0):
        with pytest.raises(stagehand_gpu.InvalidArgumentError, match="stops"):
            player.expose(stops)
    player.expose(1.5)


def test_run_window_plays_the_source_in_a_window_of_its_own_for_the_seconds_asked(player):
    import os

    if not os.environ.get("DISPLAY"):
        pytest.skip("run_window needs a display (DISPLAY is not set)")
    started = time.monotonic()
    summary = player.run_window(seconds=1.0, size=(192, 128))
    elapsed = time.monotonic() - started
    # A loaded machine may drop some in realtime; none past the range's 12.
    assert 1 <= summary["frames"]["shown"] <= 12, summary["frames"]
    assert summary["frames"]["shown"] + summary["frames"]["dropped"] <= 12, summary["frames"]
    # It ends on its own, by the seconds asked, not by the end of the range.
    assert 0.9 < elapsed < 30, elapsed
    # The player it came from was paused meanwhile and still answers.
    assert player.playing is False and player.frame is not None


def test_the_summary_so_far_counts_the_frames_shown_while_playing(player):
    player.play()
    assert player.wait(frame=11, timeout=20), player.frame
    so_far = player.summary()
    assert set(so_far) >= {"frames", "ticks", "bandwidth", "frame", "playing", "cache"}, so_far
    assert so_far["frames"]["shown"] >= 1, so_far["frames"]
    assert so_far["ticks"] >= so_far["frames"]["shown"], so_far
    assert so_far["cache"]["frames"] >= 1, so_far["cache"]
    # The whole summary at close counts at least as many.
    assert player.close()["frames"]["shown"] >= so_far["frames"]["shown"]


def test_the_transfer_of_a_scene_linear_source_changes_its_picture(gpu, linear_sequence):
    with stagehand_gpu.Player(linear_sequence, fps=24, size=FRAME_SIZE, gpu=gpu) as player:
        assert player.transfer == "srgb"
        assert player.exposure == 0.0
        for name, want in (("linear", round(LINEAR_GREY * 255)), ("srgb", srgb(LINEAR_GREY))):
            player.transfer = name
            assert player.transfer == name
            assert eventually(lambda: abs(int(centre(player.frame_array())[0]) - want) <= 2), (
                f"{name}: the picture shows {centre(player.frame_array())}, expected {want}"
            )
        player.expose(1.0)
        assert eventually(lambda: player.exposure == 1.0)
        want = srgb(min(1.0, 2 * LINEAR_GREY))
        assert eventually(lambda: abs(int(centre(player.frame_array())[0]) - want) <= 2)
        player.exposure = -1.0
        assert player.exposure == -1.0
        want = srgb(LINEAR_GREY / 2)
        assert eventually(lambda: abs(int(centre(player.frame_array())[0]) - want) <= 2)
        with pytest.raises(stagehand_gpu.InvalidArgumentError, match="exposure"):
            player.exposure = float("nan")


def test_the_frame_on_screen_has_its_file_number_and_timecode(player):
    assert player.frame_number == 1, "frame_0001.png"
    assert player.timecode == "00:00:00:00"
    player.seek(11)
    assert player.wait(frame=11, timeout=10)
    assert player.frame_number == 12
    assert player.timecode == "00:00:00:11"


def test_cache_changed_events_come_while_the_cache_fills(gpu, sequence):
    # A player of its own, so the cache is still filling when the handler
    # is set (the shared fixture's may be full already).
    events = Events()
    with stagehand_gpu.Player(sequence, fps=24, size=FRAME_SIZE, gpu=gpu) as player:
        player.on("cache-changed", events.recorder("cache-changed"))
        player.seek(6)
        assert eventually(lambda: player.cache_info()["frames"] == 12)
        player.seek(0)
        assert events.wait_for(lambda items: len(items) >= 1), "no cache-changed event"
        assert all(args == ("cache-changed",) for args in events.snapshot()), events.snapshot()
