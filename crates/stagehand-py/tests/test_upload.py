"""The upload engine: frames land and read back, every way of waiting on
an upload's future works, the engine's numbers add up, and bad input is
refused with the right exception."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import numpy as np
import pytest

import stagehand_gpu

WIDTH, HEIGHT = 64, 48


def frames(count, seed, shape=(HEIGHT, WIDTH, 4)):
    """count distinct uint8 frames of random contents, seeded."""
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, size=shape, dtype=np.uint8) for _ in range(count)]
    assert len({f.tobytes() for f in out}) == count
    return out


def check_latency(latency):
    assert latency is None or (isinstance(latency, float) and latency >= 0.0)


def test_texture_has_the_asked_size_format_and_dtype(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    assert tex.size == (WIDTH, HEIGHT)
    assert tex.format == "rgba8unorm"
    assert tex.dtype == "uint8"
    stats = tex.stats()
    assert stats["staging_capacity"] >= WIDTH * HEIGHT * 4  # bytes each staging buffer holds
    assert stats["ring_free"] == 3  # ring:3, nothing in flight
    assert stats["in_flight"] == stats["queued"] == 0
    assert stats["released"] is False


def test_twenty_frames_land_and_read_back_by_result_callback_and_await(engine):
    tex = engine.create_texture(WIDTH, HEIGHT, "rgba8unorm", staging="ring:3")
    callback_threads = []

    def by_result(upload):
        check_latency(upload.result(timeout=10))

    def by_callback(upload):
        landed = threading.Event()
        seen = []

        def done(u):
            seen.append(u)
            callback_threads.append(threading.get_ident())
            landed.set()

        upload.add_done_callback(done)
        assert landed.wait(10), "the done callback was not called within 10 s"
        assert len(seen) == 1 and seen[0] is upload
        assert seen[0].done()
        check_latency(seen[0].result(0))

    def by_await(upload):
        async def main():
            return await upload

        check_latency(asyncio.run(main()))

    ways = [by_result, by_callback, by_await]
    for i, frame in enumerate(frames(20, seed=20)):
        upload = tex.upload(frame)
        ways[i % len(ways)](upload)
        assert upload.done()
        assert upload.status == "done"
        assert tex.read() == frame.tobytes(), f"frame {i} read back differently"
    assert callback_threads, "no upload was resolved by callback"
    assert threading.get_ident() not in callback_threads


def test_a_callback_added_after_landing_is_still_called(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    (frame,) = frames(1, seed=3)
    upload = tex.upload(frame)
    upload.result(timeout=10)
    called = threading.Event()
    upload.add_done_callback(lambda u: called.set())
    assert called.wait(10)


def test_engine_stats_add_up_after_40_uploads_to_4_textures(gpu):
    with stagehand_gpu.UploadEngine(gpu, workers=2) as engine:
        textures = [engine.create_texture(WIDTH, HEIGHT) for _ in range(4)]
        before = engine.stats()
        data = frames(40, seed=40)
        uploads = [textures[i % 4].upload(frame) for i, frame in enumerate(data)]
        outcomes = {"done": 0, "cancelled": 0}
        for upload in uploads:
            try:
                check_latency(upload.result(timeout=10))
                outcomes["done"] += 1
            except stagehand_gpu.UploadCancelledError:
                outcomes["cancelled"] += 1  # superseded by a newer frame
        after = engine.stats()
        ended = ("completed", "cancelled", "superseded", "failed")
        assert sum(after[k] - before[k] for k in ended) == 40
        assert after["completed"] - before["completed"] == outcomes["done"]
        assert after["failed"] == before["failed"]
        assert outcomes["done"] >= 4  # the last upload to each texture lands
        assert after["queued"] == 0
        assert after["active"] == 0
        frame_bytes = WIDTH * HEIGHT * 4
        assert after["bytes_uploaded"] - before["bytes_uploaded"] == outcomes["done"] * frame_bytes
        assert after["workers"] == 2
        assert after["priority"].lower() == "low"  # the engine reports "Low"
        for tex, last in zip(textures, data[-4:]):
            assert tex.read() == last.tobytes()


def test_bytes_and_memoryview_sources_read_back_equal(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    first, second = frames(2, seed=7)
    tex.upload(first.tobytes()).result(timeout=10)
    assert tex.read() == first.tobytes()
    tex.upload(memoryview(second)).result(timeout=10)
    assert tex.read() == second.tobytes()


def test_float16_frames_into_an_rgba16float_texture_read_back_equal(engine):
    tex = engine.create_texture(WIDTH, HEIGHT, "rgba16float")
    assert tex.dtype == "float16"
    rng = np.random.default_rng(16)
    frame = rng.uniform(-4.0, 4.0, size=(HEIGHT, WIDTH, 4)).astype(np.float16)
    tex.upload(frame).result(timeout=10)
    back = np.frombuffer(tex.read(), dtype=np.float16).reshape(HEIGHT, WIDTH, 4)
    assert np.array_equal(back, frame)


def test_a_wrong_size_array_is_an_invalid_argument(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    (small,) = frames(1, seed=1, shape=(HEIGHT // 2, WIDTH // 2, 4))
    with pytest.raises(stagehand_gpu.InvalidArgumentError):
        tex.upload(small)


def test_a_float32_array_into_rgba8_is_an_invalid_argument_naming_uint8(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        tex.upload(np.zeros((HEIGHT, WIDTH, 4), dtype=np.float32))
    assert isinstance(raised.value, ValueError)
    assert "uint8" in str(raised.value)


def test_a_strided_array_is_an_invalid_argument_asking_for_c_contiguous(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    (wide,) = frames(1, seed=2, shape=(HEIGHT, WIDTH * 2, 4))
    strided = wide[:, ::2]
    assert strided.shape == (HEIGHT, WIDTH, 4)
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        tex.upload(strided)
    assert "C-contiguous" in str(raised.value)
    # The same pixels, made contiguous, go in.
    tex.upload(np.ascontiguousarray(strided)).result(timeout=10)
    assert tex.read() == strided.tobytes()


def test_a_list_is_a_type_error(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    with pytest.raises(TypeError):
        tex.upload([0] * (WIDTH * HEIGHT * 4))


@pytest.mark.parametrize("staging", ["ring:0", "bogus", "ring:99"])
def test_an_unknown_staging_is_an_invalid_argument(engine, staging):
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        engine.create_texture(WIDTH, HEIGHT, staging=staging)
    assert staging in str(raised.value)


@pytest.mark.parametrize("seed, staging", list(enumerate(["ring:1", "per-upload:2", "sync"])))
def test_each_staging_policy_lands_a_frame(engine, seed, staging):
    tex = engine.create_texture(WIDTH, HEIGHT, staging=staging)
    (frame,) = frames(1, seed=seed)
    tex.upload(frame).result(timeout=10)
    assert tex.read() == frame.tobytes()


def test_an_unknown_priority_is_an_invalid_argument(gpu):
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        stagehand_gpu.UploadEngine(gpu, priority="urgent")
    assert "urgent" in str(raised.value)


def test_a_closed_engine_makes_no_textures(gpu):
    engine = stagehand_gpu.UploadEngine(gpu, workers=1)
    assert engine.closed is False
    engine.close()
    assert engine.closed is True
    with pytest.raises(stagehand_gpu.ClosedError):
        engine.create_texture(WIDTH, HEIGHT)
    with pytest.raises(stagehand_gpu.ClosedError):
        engine.stats()


def test_a_released_texture_takes_no_uploads(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    (frame,) = frames(1, seed=5)
    tex.release()
    with pytest.raises(stagehand_gpu.ClosedError):
        tex.upload(frame)
    with pytest.raises(stagehand_gpu.ClosedError):
        tex.read()


def test_a_cancelled_upload_raises_upload_cancelled_error(engine):
    tex = engine.create_texture(WIDTH, HEIGHT, staging="ring:3")
    data = frames(6, seed=6)
    uploads = [tex.upload(frame) for frame in data]
    last = uploads[-1]
    cancelled = last.cancel()
    if cancelled:
        with pytest.raises(stagehand_gpu.UploadCancelledError) as raised:
            last.result(timeout=10)
        assert isinstance(raised.value, concurrent.futures.CancelledError)
        assert last.status == "cancelled"
    else:
        # It had gone too far to cancel: it lands.
        check_latency(last.result(timeout=10))
        assert last.status == "done"
        assert tex.read() == data[-1].tobytes()
    assert last.done()


def test_result_with_a_negative_timeout_is_an_invalid_argument(engine):
    tex = engine.create_texture(WIDTH, HEIGHT)
    (frame,) = frames(1, seed=9)
    upload = tex.upload(frame)
    with pytest.raises(stagehand_gpu.InvalidArgumentError):
        upload.result(timeout=-1)
    upload.result(timeout=10)


def test_a_texture_of_no_area_is_an_invalid_argument_from_the_engine_as_from_the_gpu(gpu, engine):
    with pytest.raises(stagehand_gpu.InvalidArgumentError, match="0x0"):
        engine.create_texture(0, 0)
    with pytest.raises(stagehand_gpu.InvalidArgumentError):
        gpu.create_texture(0, 0, "rgba8unorm")
    with pytest.raises(stagehand_gpu.InvalidArgumentError, match="1 to"):
        engine.create_texture(1 << 20, 4)


def test_stats_name_the_priority_as_the_constructor_takes_it(gpu):
    for priority in ("low", "normal"):
        with stagehand_gpu.UploadEngine(gpu, workers=1, priority=priority) as engine:
            assert engine.stats()["priority"].startswith(priority), engine.stats()["priority"]
