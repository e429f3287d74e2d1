#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Compares the GUI tests' screenshots of two builds, pixel by pixel.

    scripts/screenshot_compare.py OLD_DIR NEW_DIR

OLD_DIR and NEW_DIR hold the PNGs the GUI tests save (build/tests/ui/artifacts after
`ctest -L gui`). For each name in both: identical pixels, a different size, or the share of pixels
that differ and their bounding box. Screenshots of live training runs differ from run to run (the
loss curve, the timings); read those by eye. Needs only the standard library (8-bit RGB/RGBA PNGs,
as Qt writes them).
"""
import os
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            channels = {2: 3, 6: 4, 0: 1, 4: 2}.get(color)
            if depth != 8 or channels is None or interlace:
                raise ValueError(f"{path}: only 8-bit non-interlaced RGB(A)/grey PNGs")
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def compare(old, new):
    if open(old, "rb").read() == open(new, "rb").read():
        return "identical"
    w1, h1, c1, a = read_png(old)
    w2, h2, c2, b = read_png(new)
    if (w1, h1) != (w2, h2):
        return f"size {w1}x{h1} -> {w2}x{h2}"
    if c1 != c2:
        return f"channels {c1} -> {c2}"
    differing, box = 0, None
    for y in range(h1):
        if a[y] == b[y]:
            continue
        for x in range(w1):
            if a[y][x * c1:(x + 1) * c1] != b[y][x * c1:(x + 1) * c1]:
                differing += 1
                box = (min(box[0], x), min(box[1], y), max(box[2], x), max(box[3], y)) if box \
                    else (x, y, x, y)
    if not differing:
        return "identical"
    return (f"{100.0 * differing / (w1 * h1):.2f}% of pixels differ, in x {box[0]}..{box[2]}, "
            f"y {box[1]}..{box[3]}")


def main(old_dir, new_dir):
    names = sorted(n for n in os.listdir(old_dir) if n.endswith(".png"))
    same = 0
    for name in names:
        new = os.path.join(new_dir, name)
        if not os.path.exists(new):
            print(f"{name}: missing in {new_dir}")
            continue
        verdict = compare(os.path.join(old_dir, name), new)
        if verdict == "identical":
            same += 1
        else:
            print(f"{name}: {verdict}")
    print(f"{same} of {len(names)} screenshots identical")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
