"""Seed 000 from Python: a small scene's GPU objects, then the report.

Makes three buffers of 784 bytes in all and a 128x128 RGBA texture,
prints the diagnostics report's tables, then the buffers' counts.

Run it from the repository root (after scripts/setup built the module):

    .venv/bin/python examples/python/report.py

WGPU_BACKEND=vulkan or WGPU_BACKEND=gl picks the backend.
"""

import stagehand_gpu as sh


def main():
    gpu = sh.Gpu.open()
    print(f"adapter: {gpu.adapter}")
    vertices = gpu.create_buffer(256, "vertex|copy_dst", label="vertices")
    normals = gpu.create_buffer(256, "vertex|copy_dst", label="normals")
    indices = gpu.create_buffer(272, "index|copy_dst", label="indices")
    albedo = gpu.create_texture(128, 128, "rgba8unorm", label="albedo")
    gpu.print_report()
    counts = gpu.report().get_dict()["object_counts"]
    print("Buffer", counts["Buffer"])
    print("Texture", counts["Texture"])
    for thing in (vertices, normals, indices, albedo):
        thing.destroy()


if __name__ == "__main__":
    main()
