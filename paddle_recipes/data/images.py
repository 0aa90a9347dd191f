"""The one image reader of every mode (train, eval, predict of rec, det, cls and the OCR system).

``read_image(path_or_bytes, max_pixels, max_bytes)`` -> BGR uint8 HWC (PaddleOCR's ``DecodeImage img_mode: BGR``),
or ``ImageError`` (a ``DataError``: one line naming the file; ``.reason`` is the skip-count key):

* ``missing_image``: no such file, or it cannot be opened;
* ``not_a_file``: a FIFO, device (``/dev/zero``), socket or folder, also behind a symlink: refused from ``os.stat``
  before any open, and the file is opened with ``O_NONBLOCK`` and checked again, so a FIFO never blocks;
* ``file_too_large``: more than ``max_bytes`` bytes (default ``MAX_IMAGE_BYTES``, 256 MiB; 0 = no limit); at most
  ``max_bytes + 1`` bytes are ever read, even from a file that grows;
* ``too_large``: width x height, read from the format's own header, above ``max_pixels`` (default
  ``MAX_IMAGE_PIXELS``, 8e7; 0 = no limit): never decoded;
* ``corrupt_image``: no header of a format we can size (``header_size``: every format this OpenCV build decodes),
  or the decoder fails. A format whose size cannot be read is never handed to the decoder.

``image_size(data)`` -> (format, width, height) from the header alone. ``list_images`` lists a folder's images.
"""
from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path
from typing import Tuple

import numpy as np

from .files import file_kind
from .loader import DataError

__all__ = ["IMAGE_EXTS", "list_images", "MAX_IMAGE_PIXELS", "MAX_IMAGE_BYTES", "ImageError", "check_file", "read_file",
           "image_size", "image_file_size", "image_pixels", "decode", "read_image"]

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
MAX_IMAGE_PIXELS = 80_000_000  # default pixel cap: ~8e7 pixels (e.g. 10000 x 8000), ~240 MB decoded as BGR
MAX_IMAGE_BYTES = 256 * 2 ** 20  # default byte cap: 256 MiB (a BGR bitmap at the pixel cap is ~240 MB)


class ImageError(DataError):
    """An image refused or unreadable: ``str()`` is one line naming the file; ``reason`` is the skip-count key."""

    def __init__(self, reason: str, name: str, detail: str):
        super().__init__(f"{name}: {detail}")
        self.reason, self.name, self.detail = reason, str(name), detail


def list_images(path: str | os.PathLike) -> list[str]:
    """An image file -> [it]; a folder -> its image files (IMAGE_EXTS, sorted). Missing path -> FileNotFoundError."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such image or folder: {p}")
    if p.is_dir():
        return sorted(str(f) for f in p.iterdir() if f.suffix.lower() in IMAGE_EXTS)
    return [str(p)]


# ----------------------------------------------------------------------------- bytes
def check_file(path: str | os.PathLike, max_bytes: int = MAX_IMAGE_BYTES) -> None:
    """From ``os.stat`` alone (nothing opened): ImageError unless ``path`` is a regular file of at most ``max_bytes``
    bytes (0 = any size). Datasets call it for every listed image when they are built."""
    try:
        st = os.stat(path)  # follows symlinks: a link to /dev/zero is a character device here
    except OSError as exc:
        raise ImageError("missing_image", path, f"cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ImageError("not_a_file", path, f"a {file_kind(st.st_mode)}, not a regular file: not read")
    if max_bytes and st.st_size > max_bytes:
        raise ImageError("file_too_large", path, f"{st.st_size} bytes > max_image_bytes {max_bytes}: not read")


def _open_regular(path: str | os.PathLike, max_bytes: int):
    """An open binary file, after checking it is a regular file of at most max_bytes (0 = any size)."""
    check_file(path, max_bytes)
    try:  # O_NONBLOCK: should the path have become a FIFO since the stat, open() does not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ImageError("missing_image", path, f"cannot open ({exc.strerror or exc})") from None
    f = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        f.close()
        raise ImageError("not_a_file", path, f"a {file_kind(mode)}, not a regular file: not read")
    return f


def read_file(path: str | os.PathLike, max_bytes: int = MAX_IMAGE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes (0 = no limit); else ImageError (module doc)."""
    with _open_regular(path, max_bytes) as f:
        data = f.read(max_bytes + 1) if max_bytes else f.read()
    if max_bytes and len(data) > max_bytes:  # it grew since the stat
        raise ImageError("file_too_large", path, f"more than max_image_bytes {max_bytes} bytes: not read")
    return data


# ----------------------------------------------------------------------------- headers
def _u16(d, o, e=">"):
    return struct.unpack_from(e + "H", d, o)[0]


def _u32(d, o, e=">"):
    return struct.unpack_from(e + "I", d, o)[0]


def _jpeg(d):
    i = 2
    while i + 4 <= len(d):
        if d[i] != 0xFF:  # stray bytes before a marker: skipped, as libjpeg does (with a warning)
            i = d.find(b"\xff", i)
            if i < 0:
                return None
            continue
        m = d[i + 1]
        if m in (0xFF, 0x00):  # a fill byte, or a stuffed 0xFF (not a marker)
            i += 1
            continue
        if m in (0x01, *range(0xD0, 0xD8)):  # standalone markers
            i += 2
            continue
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):  # SOFn: precision, height, width
            return _u16(d, i + 7), _u16(d, i + 5)
        if m in (0xD9, 0xDA):  # EOI / SOS before any frame header
            return None
        i += 2 + _u16(d, i + 2)
    return None


def _png(d):
    return (_u32(d, 16), _u32(d, 20)) if d[12:16] == b"IHDR" else None


def _bmp(d):
    if _u32(d, 14, "<") == 12:  # OS/2 BITMAPCOREHEADER
        return _u16(d, 18, "<"), _u16(d, 20, "<")
    w, h = struct.unpack_from("<ii", d, 18)
    return abs(w), abs(h)


def _gif(d):
    w, h, flags = _u16(d, 6, "<"), _u16(d, 8, "<"), d[10]
    i = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    while i < len(d):  # extensions up to the first image descriptor (the frame cv2 decodes)
        if d[i] == 0x2C:
            left, top, fw, fh = struct.unpack_from("<HHHH", d, i + 1)
            return max(w, left + fw), max(h, top + fh)
        if d[i] != 0x21:
            break
        i += 2
        while i < len(d) and d[i]:
            i += d[i] + 1
        i += 1
    return w, h


def _webp(d):
    kind = d[12:16]
    if kind == b"VP8 ":
        return _u16(d, 26, "<") & 0x3FFF, _u16(d, 28, "<") & 0x3FFF
    if kind == b"VP8L":
        bits = _u32(d, 21, "<")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        return int.from_bytes(d[24:27], "little") + 1, int.from_bytes(d[27:30], "little") + 1
    return None


def _tiff(d):
    e = "<" if d[:2] == b"II" else ">"
    big = _u16(d, 2, e) == 43
    off = struct.unpack_from(e + "Q", d, 8)[0] if big else _u32(d, 4, e)
    count = struct.unpack_from(e + "Q", d, off)[0] if big else _u16(d, off, e)
    size, first = (20, off + 8) if big else (12, off + 2)
    found = {}
    for k in range(min(count, 4096)):  # the first IFD: the page cv2 decodes
        o = first + k * size
        tag, typ = struct.unpack_from(e + "HH", d, o)
        if tag in (256, 257):
            val = o + (12 if big else 8)
            found[tag] = _u16(d, val, e) if typ == 3 else (_u32(d, val, e) if typ == 4 else
                                                           struct.unpack_from(e + "Q", d, val)[0])
    return (found[256], found[257]) if len(found) == 2 else None


def _siz(d, i):
    """JPEG 2000 codestream SIZ at d[i:] (after SOC): image size times ceil(components / 3)."""
    xs, ys, xo, yo = struct.unpack_from(">IIII", d, i + 6)
    comps = _u16(d, i + 38)
    return max(0, xs - xo) * -(-comps // 3), max(0, ys - yo)


def _jp2(d):
    if d[:4] == b"\xff\x4f\xff\x51":
        return _siz(d, 2)
    sizes = [(_u32(d, i + 8), _u32(d, i + 4)) for i in (m.start() for m in re.finditer(b"ihdr", d[:1 << 16]))]
    cs = d.find(b"\xff\x4f\xff\x51")
    if cs >= 0:
        sizes.append(_siz(d, cs + 2))
    return max(sizes, key=lambda s: s[0] * s[1]) if sizes else None


def _tokens(d, n):
    """The first n whitespace-separated tokens of a PNM header (comments skipped) after the magic."""
    text = re.sub(rb"#[^\n]*", b" ", d[2:4096])
    toks = text.split()[:n]
    return [int(t) for t in toks] if len(toks) == n and all(t.isdigit() for t in toks) else None


def _pxm(d):
    if d[1:2] == b"7":  # PAM
        head = d[:4096].split(b"ENDHDR")[0]
        w, h = re.search(rb"\bWIDTH\s+(\d+)", head), re.search(rb"\bHEIGHT\s+(\d+)", head)
        return (int(w.group(1)), int(h.group(1))) if w and h else None
    size = _tokens(d, 2)
    return tuple(size) if size else None


def _hdr(d):
    found = re.search(rb"\n\s*\n([-+][XY])\s+(\d+)\s+([-+][XY])\s+(\d+)", d[:65536])
    if not found:
        return None
    a, b = int(found.group(2)), int(found.group(4))
    return (b, a) if found.group(1).endswith(b"Y") else (a, b)


def _sunras(d):
    return _u32(d, 4), _u32(d, 8)


def _avif(d):
    sizes = [(_u32(d, i + 8), _u32(d, i + 12)) for i in (m.start() for m in re.finditer(b"ispe", d))]
    return max(sizes, key=lambda s: s[0] * s[1]) if sizes else None


# (name, signature test, size reader): every decoder of this OpenCV build (BMP, JPEG, PNG, GIF, WebP, TIFF,
# JPEG 2000, PxM / PAM / PFM, Radiance HDR, Sun raster, AVIF); OpenEXR and GDAL are not built in.
_FORMATS = (
    ("JPEG", lambda d: d[:3] == b"\xff\xd8\xff", _jpeg),
    ("PNG", lambda d: d[:8] == b"\x89PNG\r\n\x1a\n", _png),
    ("BMP", lambda d: d[:2] == b"BM", _bmp),
    ("GIF", lambda d: d[:3] == b"GIF", _gif),
    ("WebP", lambda d: d[:4] == b"RIFF" and d[8:12] == b"WEBP", _webp),
    ("TIFF", lambda d: d[:4] in (b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"), _tiff),
    ("JPEG 2000", lambda d: d[:12] == b"\0\0\0\x0cjP  \r\n\x87\n" or d[:4] == b"\xff\x4f\xff\x51", _jp2),
    ("PNM", lambda d: re.match(rb"P[1-7]\s", d[:3]) is not None, _pxm),
    ("PFM", lambda d: re.match(rb"P[Ff]\s", d[:3]) is not None, _pxm),
    ("Radiance HDR", lambda d: d[:6] == b"#?RGBE" or d[:10] == b"#?RADIANCE", _hdr),
    ("Sun raster", lambda d: d[:4] == b"\x59\xa6\x6a\x95", _sunras),
    ("AVIF", lambda d: d[4:8] == b"ftyp" and (b"avif" in d[8:64] or b"avis" in d[8:64]), _avif),
)


def image_size(data: bytes) -> Tuple[str, int, int] | None:
    """(format, width, height) read from the header of encoded image bytes, without decoding; None when no
    format's header is found or one cannot be read (truncated, size 0). Bytes that look like several formats
    get the largest size (whichever decoder OpenCV picks, it allocates no more)."""
    best = None
    for name, is_it, size in _FORMATS:
        if not is_it(data):
            continue
        try:
            wh = size(data)
        except (struct.error, IndexError, ValueError, OverflowError):
            wh = None
        if not wh or wh[0] <= 0 or wh[1] <= 0:
            return None
        if best is None or wh[0] * wh[1] > best[1] * best[2]:
            best = (name, int(wh[0]), int(wh[1]))
    return best


def image_file_size(path: str | os.PathLike, max_bytes: int = MAX_IMAGE_BYTES) -> Tuple[str, int, int] | None:
    """image_size of a file's header: its first 1 MiB, else (a header further in) the whole file, at most
    ``max_bytes``; ImageError for a FIFO / device / missing or too long file (read_file)."""
    with _open_regular(path, max_bytes) as f:
        found = image_size(f.read(1 << 20))
    return found if found is not None else image_size(read_file(path, max_bytes))


def image_pixels(data: bytes | str | os.PathLike) -> int | None:
    """Width x height from the header of encoded bytes or of a regular file; None if unknown or unreadable."""
    try:
        found = image_size(bytes(data)) if isinstance(data, (bytes, bytearray, memoryview)) else image_file_size(data)
    except ImageError:
        return None
    return found[1] * found[2] if found else None


# ----------------------------------------------------------------------------- decode
def decode(data: bytes, max_pixels: int = MAX_IMAGE_PIXELS, name: str = "image") -> np.ndarray:
    """Encoded bytes -> BGR uint8 HWC, checked from the header first (module doc); ``name`` is used in messages."""
    import cv2

    found = image_size(data) if data else None
    if found is None:
        raise ImageError("corrupt_image", name, "not an image whose size its header gives (empty, truncated or "
                                          "an unsupported format): not decoded")
    fmt, w, h = found
    if max_pixels and w * h > max_pixels:
        raise ImageError("too_large", name, f"{fmt} of {w}x{h} = {w * h} pixels > max_image_pixels {max_pixels}: "
                                      f"not decoded")
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise ImageError("corrupt_image", name, f"corrupt {fmt} (cannot decode)")
    return img


def read_image(src: str | os.PathLike | bytes, max_pixels: int = MAX_IMAGE_PIXELS, max_bytes: int = MAX_IMAGE_BYTES,
               name: str = "") -> np.ndarray:
    """A path (regular file, at most ``max_bytes`` bytes) or encoded bytes -> BGR uint8 HWC; else ImageError."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
        if max_bytes and len(data) > max_bytes:
            raise ImageError("file_too_large", name or "image", f"{len(data)} bytes > max_image_bytes {max_bytes}")
        return decode(data, max_pixels, name or "image")
    return decode(read_file(src, max_bytes), max_pixels, name or str(src))
