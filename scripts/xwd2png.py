#!/usr/bin/env python3
"""Turns an X window dump (xwd, 24-bit TrueColor, 32 bits per pixel) into a PNG.

Usage: xwd2png.py IN.xwd OUT.png. Standard library only.
"""
import struct
import sys
import zlib


def read_xwd(data):
    fields = struct.unpack(">25I", data[:100])
    header, version, fmt = fields[0], fields[1], fields[2]
    if version != 7 or fmt != 2 or fields[11] != 32:
        raise SystemExit("xwd2png: only 32-bit ZPixmap dumps (version 7) are read")
    width, height = fields[4], fields[5]
    little = fields[7] == 0
    bytes_per_line = fields[12]
    masks = fields[14:17]
    start = header + fields[19] * 12
    shifts = [(m & -m).bit_length() - 1 for m in masks]
    order = "<I" if little else ">I"
    rows = []
    for y in range(height):
        row = bytearray()
        at = start + y * bytes_per_line
        for x in range(width):
            (v,) = struct.unpack_from(order, data, at + 4 * x)
            row += bytes(((v & m) >> s) & 0xFF for m, s in zip(masks, shifts))
        rows.append(bytes(row))
    return width, height, rows


def write_png(path, width, height, rows):
    def chunk(kind, body):
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + r for r in rows)
    with open(path, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n")
        out.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        out.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        out.write(chunk(b"IEND", b""))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: xwd2png.py IN.xwd OUT.png")
    with open(sys.argv[1], "rb") as f:
        w, h, rows = read_xwd(f.read())
    write_png(sys.argv[2], w, h, rows)
