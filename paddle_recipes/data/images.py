"""Image files and headers: list the images of a folder, read an image's size without decoding it."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["IMAGE_EXTS", "list_images", "MAX_IMAGE_PIXELS", "image_pixels"]

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


def list_images(path: str | os.PathLike) -> list[str]:
    """An image file -> [it]; a folder -> its image files (IMAGE_EXTS, sorted). Missing path -> FileNotFoundError."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such image or folder: {p}")
    if p.is_dir():
        return sorted(str(f) for f in p.iterdir() if f.suffix.lower() in IMAGE_EXTS)
    return [str(p)]


MAX_IMAGE_PIXELS = 80_000_000  # default guard: ~8e7 pixels (e.g. 10000 x 8000), ~240 MB decoded as RGB


def image_pixels(data: bytes | str | os.PathLike) -> int | None:
    """Width x height read from the image header (encoded bytes or a path), without decoding the
    pixels; None when the header is unreadable (the decoder will then report the file as corrupt)."""
    import io

    from PIL import Image

    try:
        src = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else str(data)
        # No warnings.catch_warnings() here: it runs per sample, and entering it resets Python's
        # once-per-location registry (every warning of the process would show again, e.g. paddle's BatchNorm
        # one on every step). PIL's DecompressionBombWarning is filtered once at start-up (cli.quiet_known_warnings).
        with Image.open(src) as im:  # lazy: reads only the header
            w, h = im.size
        return int(w) * int(h)
    except Image.DecompressionBombError as exc:  # beyond PIL's own hard limit: its message has the size
        import re

        found = re.search(r"\((\d+) pixels\)", str(exc))
        return int(found.group(1)) if found else 1 << 62
    except Exception:  # noqa: BLE001 - unknown/corrupt header: let the decoder decide
        return None
