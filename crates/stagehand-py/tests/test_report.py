"""The diagnostics report: object counts, the text and JSON forms, and
the leak check (seed 000: three buffers of 784 bytes, a 128x128 texture)."""

from __future__ import annotations

import json

import pytest

import stagehand_gpu


def counts(gpu, kind):
    """The report's object_counts entry for kind now."""
    return gpu.report().get_dict()["object_counts"][kind]


def test_three_buffers_count_784_bytes_as_in_seed_000(gpu):
    before = counts(gpu, "Buffer")
    before_peaks = gpu.report().get_dict()["object_peaks"]["Buffer"]
    buffers = [gpu.create_buffer(size, "vertex|copy_dst") for size in (256, 256, 272)]
    try:
        after = counts(gpu, "Buffer")
        peaks = gpu.report().get_dict()["object_peaks"]["Buffer"]
        assert [b.size for b in buffers] == [256, 256, 272]
        assert after["count"] - before["count"] == 3
        assert after["resource_mem"] - before["resource_mem"] == 784
        assert peaks["created"] - before_peaks["created"] == 3
        assert peaks["count"] >= after["count"]
        assert peaks["resource_mem"] >= after["resource_mem"]
    finally:
        for b in buffers:
            b.destroy()


def test_a_128x128_rgba8_texture_counts_65536_bytes(gpu):
    before = counts(gpu, "Texture")
    texture = gpu.create_texture(128, 128, "rgba8unorm", label="seed-000")
    after = counts(gpu, "Texture")
    assert texture.nbytes == 65536
    assert texture.size == (128, 128, 1)
    assert texture.format == "rgba8unorm"
    assert texture.label == "seed-000"
    assert after["count"] - before["count"] == 1
    assert after["resource_mem"] - before["resource_mem"] == 65536
    texture.destroy()


def test_report_text_names_the_object_counts_and_buffers(gpu):
    buffer = gpu.create_buffer(256, "vertex|copy_dst")
    report = gpu.report()
    text = str(report)
    assert "object_counts" in text
    assert "Buffer" in text
    assert "object_counts" in report.names()
    buffer.destroy()


def test_report_json_parses_with_a_key_per_section(gpu):
    buffer = gpu.create_buffer(272, "vertex|copy_dst", label="json")
    report = gpu.report()
    parsed = json.loads(report.to_json())
    assert list(parsed) == report.names()  # a key per section, in order
    kinds = {o["kind"]: o for o in parsed["object_counts"]["objects"]}
    assert kinds["Buffer"]["count"] == report.get_dict()["object_counts"]["Buffer"]["count"] >= 1
    buffer.destroy()


def test_print_report_prints_the_tables(gpu, capsys):
    buffer = gpu.create_buffer(256, "vertex|copy_dst")
    gpu.print_report()
    out = capsys.readouterr().out
    assert "object_counts" in out
    assert "Buffer" in out
    buffer.destroy()


def test_destroy_lowers_the_count_and_frees_the_bytes(gpu):
    buffer = gpu.create_buffer(272, "vertex|copy_dst")
    alive = counts(gpu, "Buffer")
    assert buffer.destroyed is False
    buffer.destroy()
    gone = counts(gpu, "Buffer")
    assert buffer.destroyed is True
    assert alive["count"] - gone["count"] == 1
    assert alive["resource_mem"] - gone["resource_mem"] == 272
    buffer.destroy()  # a second destroy does nothing
    assert counts(gpu, "Buffer")["count"] == gone["count"]


def test_check_leaks_passes_when_everything_made_inside_is_destroyed(gpu):
    before = counts(gpu, "Buffer")["count"]
    with gpu.check_leaks():
        buffer = gpu.create_buffer(256, "vertex|copy_dst", label="temporary")
        texture = gpu.create_texture(16, 16, "rgba8unorm", label="temporary")
        assert counts(gpu, "Buffer")["count"] == before + 1
        buffer.destroy()
        texture.destroy()
    assert counts(gpu, "Buffer")["count"] == before


def test_check_leaks_names_a_forgotten_texture(gpu):
    with pytest.raises(stagehand_gpu.LeakError) as raised:
        with gpu.check_leaks():
            kept = gpu.create_texture(32, 32, "rgba8unorm", label="forgotten")
            freed = gpu.create_buffer(256, "vertex|copy_dst", label="freed")
            freed.destroy()
    assert isinstance(raised.value, AssertionError)
    assert isinstance(raised.value, stagehand_gpu.StagehandError)
    message = str(raised.value)
    assert "Texture" in message
    assert "forgotten" in message
    assert "freed" not in message
    kept.destroy()


def test_check_leaks_leaves_an_exception_raised_inside_alone(gpu):
    with pytest.raises(KeyError):
        with gpu.check_leaks():
            kept = gpu.create_texture(8, 8, "rgba8unorm", label="left-by-an-error")
            raise KeyError("inside")
    kept.destroy()


def test_an_unknown_format_is_an_invalid_argument_naming_it(gpu):
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        gpu.create_texture(16, 16, "rgb8")
    assert isinstance(raised.value, ValueError)
    assert "rgb8" in str(raised.value)


def test_an_unknown_usage_is_an_invalid_argument_naming_it(gpu):
    before = counts(gpu, "Buffer")["count"]
    with pytest.raises(stagehand_gpu.InvalidArgumentError) as raised:
        gpu.create_buffer(256, "vertx|copy_dst")
    assert isinstance(raised.value, ValueError)
    assert "vertx" in str(raised.value)
    assert counts(gpu, "Buffer")["count"] == before


def test_the_gpu_opens_on_the_backend_wgpu_backend_names(gpu):
    import os

    wanted = os.environ.get("WGPU_BACKEND")
    if not wanted or "," in wanted:
        pytest.skip("WGPU_BACKEND names no single backend")
    assert gpu.backend == wanted.strip().lower()
    assert gpu.backend in gpu.adapter.lower()


def test_object_counts_are_exactly_wgpu_pys_shape_and_the_peaks_sit_beside_them(gpu):
    before = gpu.report().get_dict()
    buffer = gpu.create_buffer(784, "vertex|copy_dst")
    counts = gpu.report().get_dict()
    assert set(counts["object_counts"]["Buffer"]) == {"count", "resource_mem"}
    assert counts["object_counts"]["Buffer"]["count"] == before["object_counts"]["Buffer"]["count"] + 1
    peaks = counts["object_peaks"]["Buffer"]
    assert peaks["count"] >= counts["object_counts"]["Buffer"]["count"]
    assert peaks["created"] == before["object_peaks"]["Buffer"]["created"] + 1
    buffer.destroy()


def test_a_pool_over_its_budget_raises_out_of_memory_a_memory_error(gpu):
    pool = stagehand_gpu.BufferPool(gpu, budget=1 << 20, name="test pool")
    held = pool.take(512 << 10, "storage|copy_dst")
    assert held.capacity >= 512 << 10
    with pytest.raises(stagehand_gpu.OutOfMemoryError) as caught:
        pool.take(1 << 20, "storage|copy_dst")
    assert isinstance(caught.value, MemoryError)
    assert "budget" in str(caught.value), str(caught.value)
    # Given back, the block is reused: a hit, no new allocation.
    held.release()
    allocations = pool.stats()["allocations"]
    again = pool.take(512 << 10, "storage|copy_dst")
    stats = pool.stats()
    assert stats["allocations"] == allocations and stats["hits"] >= 1, stats
    again.release()
    pool.trim()
    assert pool.stats()["held"] == 0
