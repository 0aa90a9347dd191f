"""Synthetic Chinese text-line generator (no download: the font comes from the
``noto-cjk-sans-otc`` PyPI package).

Each line is a random string from a character dict (length uniform in
[min_len, max_len]) rendered with PIL in Noto Sans CJK SC, then augmented with
albumentations (blur, perspective, noise, contrast). Sample ``i`` of a split is
generated from its own seed derived from (seed, split, i), so the output is
identical whatever the number of worker processes.

Writes both PaddleOCR formats for each split::

    <out_dir>/<split>/images/00000000.jpg
    <out_dir>/<split>/label.txt        # "images/00000000.jpg<TAB>label", paths relative to <split>/
    <out_dir>/<split>/lmdb/            # num-samples, image-%09d, label-%09d (via paddle_recipes.data.write_lmdb)
"""
from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import List, Sequence, Tuple

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

logger = logging.getLogger(__name__)

FONT_FACES = (2, 7)  # Noto Sans CJK SC and Noto Sans Mono CJK SC inside the .ttc
SPLIT_IDS = {"train": 0, "val": 1, "test": 2}


@dataclass
class SynthConfig:
    """Generator settings.

    height: rendered line height in px (default 48, the model input height).
    min_len / max_len: characters per line (inclusive).
    font_size: (min, max) font size in px, drawn per line.
    aug: apply albumentations (blur, perspective, noise, contrast).
    jpeg_quality: quality of the stored JPEGs.
    """

    min_len: int = 2
    max_len: int = 10
    height: int = 48
    font_size: Tuple[int, int] = (30, 40)
    aug: bool = True
    jpeg_quality: int = 92
    seed: int = 0

    def __post_init__(self):
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")


@dataclass
class SyntheticSetConfig(SynthConfig):
    """A recipe's `Synthetic:` section: the generator settings (SynthConfig) plus where and how much.

    root: output folder (generated on first use, cached by a fingerprint of the generator settings).
    num_train / num_val: lines per split. workers: generator processes (not part of the fingerprint).
    format: which written format the recipe reads, "lmdb" or "label_file" (both are always written).
    """

    root: str = "datasets/cache/ocr_rec"
    num_train: int = 20000
    num_val: int = 1000
    workers: int = 2
    format: str = "lmdb"

    def __post_init__(self):
        super().__post_init__()
        if self.format not in ("lmdb", "label_file"):
            raise ValueError(f"Synthetic.format must be 'lmdb' or 'label_file', got {self.format!r}")

    def split_dataset(self, split: str):
        """The DatasetConfig that reads split "train" or "val" of the generated set (in `format`)."""
        from .dataset import DatasetConfig

        root = Path(self.root) / split
        if self.format == "lmdb":
            return DatasetConfig(format="lmdb", data_dir=str(root / "lmdb"))
        return DatasetConfig(format="label_file", data_dir=str(root), label_file_list=[str(root / "label.txt")])


def font_path() -> str:
    from noto_cjk_sans_otc import FONT_PATH

    return str(FONT_PATH)


def build_augment():
    """albumentations pipeline: blur, perspective, noise, contrast/brightness (each with a probability)."""
    import albumentations as A

    return A.Compose([
        A.Perspective(scale=(0.01, 0.04), keep_size=True, fit_output=True, border_mode=cv2.BORDER_REPLICATE, p=0.5),
        A.OneOf([A.GaussianBlur(blur_limit=(3, 5), sigma_limit=(0.3, 1.0)),
                 A.MotionBlur(blur_limit=(3, 5))], p=0.4),
        A.GaussNoise(std_range=(0.01, 0.06), p=0.4),
        A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=(-0.4, 0.2), p=0.6),
    ])


class LineRenderer:
    """Renders one text line to an RGB uint8 image of height ``cfg.height``."""

    def __init__(self, cfg: SynthConfig):
        self.cfg = cfg
        self._fonts = {}
        self._aug = build_augment() if cfg.aug else None

    def _font(self, size: int, face: int):
        key = (size, face)
        if key not in self._fonts:
            self._fonts[key] = ImageFont.truetype(font_path(), size, index=face)
        return self._fonts[key]

    def render(self, text: str, rng: np.random.Generator) -> np.ndarray:
        cfg = self.cfg
        size = int(rng.integers(cfg.font_size[0], cfg.font_size[1] + 1))
        font = self._font(size, FONT_FACES[int(rng.integers(len(FONT_FACES)))])
        x0, y0, x1, y1 = font.getbbox(text)
        tw, th = max(1, x1 - x0), max(1, y1 - y0)
        margin_x = int(rng.integers(2, 10))
        margin_y = int(rng.integers(2, 8))
        bg = int(rng.integers(170, 256))
        fg = int(rng.integers(0, max(1, bg - 110)))
        bg_rgb = tuple(int(np.clip(bg + rng.integers(-15, 16), 0, 255)) for _ in range(3))
        fg_rgb = tuple(int(np.clip(fg + rng.integers(-20, 21), 0, 255)) for _ in range(3))
        img = Image.new("RGB", (tw + 2 * margin_x, th + 2 * margin_y), bg_rgb)
        ImageDraw.Draw(img).text((margin_x - x0, margin_y - y0), text, font=font, fill=fg_rgb)
        arr = np.asarray(img)
        if self._aug is not None:
            self._aug.set_random_seed(int(rng.integers(2**31 - 1)))
            arr = self._aug(image=arr)["image"]
        h, w = arr.shape[:2]
        new_w = max(1, int(round(w * cfg.height / float(h))))
        return cv2.resize(arr, (new_w, cfg.height), interpolation=cv2.INTER_AREA)


def sample_text(chars: Sequence[str], rng: np.random.Generator, min_len: int, max_len: int) -> str:
    n = int(rng.integers(min_len, max_len + 1))
    return "".join(chars[i] for i in rng.integers(0, len(chars), size=n))


def _sample_seed(seed: int, split: str, i: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed & 0xFFFFFFFF, SPLIT_IDS.get(split, 9), i])


_WORKER: dict = {}


def _init_worker(cfg: SynthConfig, chars: List[str]) -> None:
    _WORKER["renderer"] = LineRenderer(cfg)
    _WORKER["chars"] = chars
    _WORKER["cfg"] = cfg


def _make_sample(args) -> Tuple[bytes, str]:
    split, i = args
    cfg, chars, renderer = _WORKER["cfg"], _WORKER["chars"], _WORKER["renderer"]
    rng = np.random.default_rng(_sample_seed(cfg.seed, split, i))
    text = sample_text(chars, rng, cfg.min_len, cfg.max_len)
    img = renderer.render(text, rng)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, cfg.jpeg_quality])
    if not ok:  # pragma: no cover - cv2 always encodes uint8 RGB
        raise RuntimeError(f"JPEG encoding failed for sample {split}/{i}")
    return buf.tobytes(), text


def generate_samples(cfg: SynthConfig, chars: Sequence[str], split: str, num: int,
                     workers: int = 1) -> List[Tuple[bytes, str]]:
    """Render ``num`` samples of ``split``; returns [(jpeg_bytes, label)] in index order."""
    chars = list(chars)
    jobs = [(split, i) for i in range(num)]
    if workers <= 1 or num < 64:
        _init_worker(cfg, chars)
        return [_make_sample(j) for j in jobs]
    ctx = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
    with ctx.Pool(workers, initializer=_init_worker, initargs=(cfg, chars)) as pool:
        return pool.map(_make_sample, jobs, chunksize=max(16, num // (workers * 8)))


def write_split(out_dir: str | os.PathLike, samples: Sequence[Tuple[bytes, str]], fmt: str = "both") -> Path:
    """Write samples as a label file + images and/or an LMDB under ``out_dir``. ``fmt``: label_file|lmdb|both."""
    from paddle_recipes.data import write_lmdb

    if fmt not in ("label_file", "lmdb", "both"):
        raise ValueError(f"format must be label_file, lmdb or both, got {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fmt in ("label_file", "both"):
        (out / "images").mkdir(exist_ok=True)
        lines = []
        for i, (data, label) in enumerate(samples):
            rel = f"images/{i:08d}.jpg"
            (out / rel).write_bytes(data)
            lines.append(f"{rel}\t{label}")
        tmp = out / "label.txt.tmp"
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, out / "label.txt")
    if fmt in ("lmdb", "both"):
        write_lmdb(out / "lmdb", samples, overwrite=True)
    return out


def dataset_fingerprint(chars: Sequence[str], splits: dict, cfg: SynthConfig, fmt: str = "both") -> dict:
    """What ``meta.json`` holds for a finished set: settings, split sizes, dict size and checksum."""
    meta = {"config": {f.name: getattr(cfg, f.name) for f in fields(SynthConfig)}, "splits": {k: int(v) for k, v in splits.items()}, "format": fmt,
            "num_chars": len(chars),
            "chars_hash": int(np.frombuffer("".join(chars).encode("utf-8"), np.uint8).astype(np.uint64).sum())}
    meta["config"]["font_size"] = list(cfg.font_size)
    return meta


def is_up_to_date(out_dir: str | os.PathLike, meta: dict) -> bool:
    path = Path(out_dir) / "meta.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")) == meta
    except (OSError, ValueError):
        return False


def wait_for_dataset(out_dir: str | os.PathLike, meta: dict, timeout_s: float = 7200, poll_s: float = 2.0) -> None:
    """Block until another process (rank 0) has finished writing the set described by ``meta``.

    Used instead of a collective barrier, which would time out (GLOO) during a long generation.
    """
    import time

    t0 = time.time()
    while not is_up_to_date(out_dir, meta):
        if time.time() - t0 > timeout_s:
            raise TimeoutError(f"waited {timeout_s:.0f} s for the synthetic set in {out_dir} (rank 0 generating it)")
        time.sleep(poll_s)


def build_dataset(out_dir: str | os.PathLike, chars: Sequence[str], splits: dict, cfg: SynthConfig,
                  fmt: str = "both", workers: int = 2, force: bool = False) -> Path:
    """Generate every split ({"train": n, "val": m}) into ``out_dir``; cached by a meta.json fingerprint.

    Returns ``out_dir``. When ``meta.json`` matches (same settings, dict, counts), nothing is redone.
    """
    out = Path(out_dir)
    meta = dataset_fingerprint(chars, splits, cfg, fmt)
    meta_path = out / "meta.json"
    if not force and is_up_to_date(out, meta):
        logger.info("synthetic set in %s is up to date", out)
        return out
    if meta_path.exists():
        meta_path.unlink()
    for split, num in splits.items():
        logger.info("rendering %d %s lines with %d workers ...", num, split, workers)
        samples = generate_samples(cfg, chars, split, int(num), workers=workers)
        write_split(out / split, samples, fmt)
    tmp = out / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, meta_path)
    return out
