"""General lines labelled by the init weights, kept in a fine-tune (``Global.general_lines``, card
docs/cards/general_lines.md; issue 50 item 2).

A fine-tune on a narrow domain (meter readings, one form) forgets what that domain never shows: spaces between words,
Latin words, full-width punctuation. Before training, rank 0 renders ``Global.general_lines`` synthetic general lines
with this project's generator (tasks.ocr_rec.synth: the installed fonts, the characters of the weights' dict, mixed
hanzi + Latin + digits + punctuation with spaces, GENERAL_SYNTH below) and reads them with the init weights exactly as
``--mode predict`` with those weights would (Recipe.load_inference_weights, eval mode, fused, recognize_files at
Predict.batch_size). Those readings are the labels: the released model's own greedy CTC output (learning without
forgetting by pseudo-labels; no human label, nothing from any photo). Lines it reads as empty are dropped. The label
file (absolute image paths) is appended to Train.dataset.label_file_list with ``Global.general_lines_ratio`` as its
ratio_list entry (the other files keep theirs; 1.0 each when ratio_list was empty), so each epoch draws
round(kept * ratio) of them. Cached under <Global.output_dir>/general_lines, rebuilt when the weights file, its
size / mtime, the dict, the count or the seed change.
"""
from __future__ import annotations

import dataclasses
import json
import os

import cv2
import numpy as np
from pathlib import Path
from typing import List, Sequence, Tuple

from ...config import ConfigError
from ...runtime.distributed import unwrap
from ...nn.reparam import fuse_in_place
from ...weights.policy import require_init_weights
from .charset import CharDict
from .evaluate import recognize_files
from .synth import LineRenderer, SynthConfig, is_up_to_date, write_split

# the generator's settings for general lines: mostly mixed lines (Latin words, numbers, units, full-width pairs) with
# a space at most word / number boundaries, horizontal, a few small renders, backgrounds and degradations on
GENERAL_SYNTH = dict(min_len=4, max_len=20, mixed_prob=0.85, space_prob=0.6, vertical_prob=0.0, small_prob=0.05,
                     freq_mix=0.8, aug=True)
LABEL_FILE = "general_pseudo.txt"
ENGLISH_SHARE, FORM_SHARE = 0.3, 0.2  # of the general lines; the rest: the generator's mixed lines


# common English words (lines of words with spaces: the released model reads "chances of the" with its spaces)
ENGLISH = ("the of and to in is for on with as by at from this that be are was it or an not have all new more "
           "one can will your our about time date total amount price name number page data text model line table "
           "service bank card account address phone email office room floor north south east west road street city "
           "open close hours daily free sale store market hotel airport flight gate seat boarding ticket passenger "
           "check in out exit entrance left right please thank you welcome information customer order item quantity "
           "unit paid cash change receipt invoice tax net weight size color type code value level report result "
           "chances power water light system control start stop speed energy temperature pressure volume area use "
           "read write image photo paper book chapter section figure see also first second last next back home "
           "training learning deep network input output layer train test set mean error rate best high low").split()
FORM_KEYS = ("姓名", "日期", "金额", "地址", "电话", "证件号码", "账号", "单价", "数量", "合计", "备注", "规格", "型号",
             "开户银行", "收款人", "编号", "时间", "负责人", "签字")


def english_line(rng: np.random.Generator, max_len: int = GENERAL_SYNTH["max_len"]) -> str:
    """2-6 common words with spaces (at most ``max_len`` characters, at least one word), some capitalized, a number
    or a trailing mark sometimes."""
    words: List[str] = []
    for _ in range(int(rng.integers(2, 7))):
        word = ENGLISH[int(rng.integers(len(ENGLISH)))]
        if words and len(" ".join(words + [word])) > max_len - 6:  # room for a number and a mark
            break
        words.append(word)
    r = rng.random()
    if r < 0.25:
        words = [w.capitalize() for w in words]
    elif r < 0.35:
        words = [w.upper() for w in words]
    elif rng.random() < 0.5:
        words[0] = words[0].capitalize()
    if rng.random() < 0.3:
        words.insert(int(rng.integers(len(words) + 1)), str(int(rng.integers(1, 10 ** int(rng.integers(1, 5))))))
    return " ".join(words) + (".,:;?!"[int(rng.integers(6))] if rng.random() < 0.3 else "")


def form_line(rng: np.random.Generator, hanzi: str) -> str:
    """A form / label line: key：value, a bracketed note, a size with ×, Chinese with Latin and digits."""
    key = FORM_KEYS[int(rng.integers(len(FORM_KEYS)))]
    num = str(int(rng.integers(0, 10 ** int(rng.integers(1, 7)))))
    kind = int(rng.integers(5))
    if kind == 0:
        return f"{key}：{num}"
    if kind == 1:
        return f"{key}（{hanzi}）"
    if kind == 2:
        return f"{num} × {int(rng.integers(1, 100))}" if rng.random() < 0.5 else f"{num}×{int(rng.integers(1, 100))}mm"
    if kind == 3:
        word = ENGLISH[int(rng.integers(len(ENGLISH)))].capitalize()
        return f"{hanzi} {word} {num}"
    return f"{key}：{hanzi} {ENGLISH[int(rng.integers(len(ENGLISH)))]}"


def general_synth(seed: int) -> SynthConfig:
    return SynthConfig(seed=seed, **GENERAL_SYNTH)


def render_general_lines(out_dir: str | os.PathLike, chars: Sequence[str], num: int, seed: int = 0) -> List[str]:
    """Render ``num`` general lines into out_dir/images/ (label_file format; label.txt holds the drawn text, not
    what the model reads): ENGLISH_SHARE English word lines, FORM_SHARE form lines, the rest the generator's own
    mixed lines; sample i is a function of (seed, i). Returns the image paths in order."""
    cfg = general_synth(seed)
    renderer = LineRenderer(cfg, chars, "train")
    allowed = set(renderer.chars)
    samples = []
    for i in range(num):
        rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 50, i]))
        k = int(rng.integers(len(renderer.fonts)))
        sampler = renderer.samplers[k]
        r = rng.random()
        text = (english_line(rng) if r < ENGLISH_SHARE else
                form_line(rng, "".join(sampler._main(rng, int(rng.integers(2, 6))))) if r < ENGLISH_SHARE + FORM_SHARE
                else "")
        if not text or not all(c in allowed for c in text):
            text = sampler.sample(rng, int(rng.integers(cfg.min_len, cfg.max_len + 1)))
        img = renderer.render(text, rng, k)
        ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 90])
        samples.append((buf.tobytes(), text))
    write_split(out_dir, samples, fmt="label_file")
    return [str(Path(out_dir) / "images" / f"{i:08d}.jpg") for i in range(len(samples))]


def pseudo_label(model, files: Sequence[str], charset: CharDict, image_shape, batch_size: int) -> List[Tuple[str, str]]:
    """(path, text) of the model's readings of ``files``, as predict mode reads them (recognize_files); an
    unreadable file or an empty reading is left out."""
    results, _ = recognize_files(unwrap(model), list(files), charset, image_shape, batch_size)
    return [(f, text) for f, text, _ in results if text.strip()]


def write_label_file(path: str | os.PathLike, reads: Sequence[Tuple[str, str]]) -> Path:
    path = Path(path)
    path.write_text("".join(f"{os.path.abspath(f)}\t{t}\n" for f, t in reads), encoding="utf-8")
    return path


def with_general_lines(dataset, label_file: str, ratio: float):
    """A copy of DatasetConfig ``dataset`` that also reads ``label_file`` at ratio ``ratio``."""
    files = list(dataset.label_file_list)
    ratios = list(dataset.ratio_list) or [1.0] * len(files)
    return dataclasses.replace(dataset, label_file_list=files + [str(label_file)], ratio_list=ratios + [float(ratio)])


def check_general_lines(dataset, init_source: str) -> None:
    """ConfigError (one line) unless the switch can run: init weights to label with, label files to add to (the
    count and the ratio are checked by RecGlobal)."""
    require_init_weights("general_lines", init_source, "to label the lines (e.g. the released model)")
    if dataset.format != "label_file" or not dataset.data_dir:
        raise ConfigError("Global.general_lines adds a label file: it needs Train.dataset.format=label_file with "
                          "Train.dataset.data_dir set (your data)")


class KeepGeneralLines:
    """Recipe mixin (before Recipe in the bases): with Global.general_lines > 0, training also reads the general
    lines labelled by the init weights (module doc)."""
    _general_added: bool = False  # the label file is appended to Train.dataset once

    def general_chars(self) -> List[str]:
        """The run's characters the init weights know (all of them when the weights carry no dict)."""
        chars = [c for c in self.charset.chars if c != " "] + [" "] * (" " in self.charset.chars)
        cmap = self.class_map(self.init_weights_source())
        return chars if cmap is None else [c for c in chars if c in set(cmap.source_chars) | {" "}]

    def general_label_file(self) -> Path:
        g = self.cfg.Global
        root = Path(g.output_dir) / "general_lines"
        source = self.init_weights_source()
        stat = [os.path.getsize(p) + int(os.path.getmtime(p)) for p in [source] if os.path.isfile(p)]
        chars = self.general_chars()
        fingerprint = {"general_lines": g.general_lines, "seed": g.seed, "weights": os.path.abspath(source),
                       "stat": stat, "chars": "".join(chars), "synth": GENERAL_SYNTH,
                       "shares": [ENGLISH_SHARE, FORM_SHARE],
                       "batch_size": self.cfg.Predict.batch_size, "fuse": g.fuse_for_inference}

        def build():
            if is_up_to_date(root, fingerprint) and (root / LABEL_FILE).exists():
                return
            files = render_general_lines(root, chars, g.general_lines, g.seed)
            model = self.build_model()
            self.load_inference_weights(model, source)
            model.eval()
            if g.fuse_for_inference:  # as load_for_inference (predict mode) does
                fuse_in_place(unwrap(model))
            reads = pseudo_label(model, files, self.charset, g.image_shape, self.cfg.Predict.batch_size)
            write_label_file(root / LABEL_FILE, reads)
            (root / "meta.json").write_text(json.dumps(fingerprint, sort_keys=True), encoding="utf-8")
            self.log.info("Global.general_lines: %d general lines rendered, %d labelled by %s (%d with a space) -> %s",
                          len(files), len(reads), source, sum(" " in t for _, t in reads), root / LABEL_FILE)

        self.prepare_data(root, fingerprint, build)
        return root / LABEL_FILE

    def train(self):
        """Train mode: the general lines are made (or found cached) and added to Train.dataset before any data is
        read; eval / predict / export never see them."""
        g = self.cfg.Global
        if g.general_lines and not self._general_added:
            check_general_lines(self.cfg.Train.dataset, self.init_weights_source())
            self._general_added = True
            self.cfg.Train.dataset = with_general_lines(self.cfg.Train.dataset, str(self.general_label_file()),
                                                        g.general_lines_ratio)
        return super().train()
