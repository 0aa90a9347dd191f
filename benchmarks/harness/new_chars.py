"""A weak domain of characters the released dict lacks (issue 50 item 3): lines of the synthetic generator with
unit signs, symbols and rare hanzi inserted, for fine-tuning the released PP-OCRv4 rec with an extended dict.

    chars = check_new_chars(NEW_CHARS, released_keys)          # absent from the dict AND drawable, else ValueError
    write_extended_dict(released_keys, chars, root / "dict_ext.txt")
    make_new_char_split(root / "weak/val", keys, chars, 200, seed=11)     # label.txt + images/, 1-2 new chars a line
    scores = new_char_scores(truth, reads, chars)              # exact on the lines, per character
    info = fit_new_rows(model, chars_of_run, new, label_lines, steps=300)   # the new rows alone, on frozen features

A line: a text of the released dict drawn by the generator (textgen.TextSampler over the train fonts, real-usage
frequencies), 2-8 characters, with one or two "tokens" inserted at random places: a unit sign after a number
(``12.5㎜``), a symbol before a letter or a digit (``∠A``, ``∵3``), a rare hanzi as it is. Every new character is drawn
equally often. Rendered by synth.LineRenderer (train fonts; clean: dark ink on a flat light background unless
`aug`); a new character is drawn with a train font that has it (font_for_char: in this checkout only the two Noto
Sans CJK faces of the PyPI package do).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Sequence

import cv2
import numpy as np
import paddle

from paddle_recipes.tasks.ocr_rec.charset import CharDict
from paddle_recipes.tasks.ocr_rec.synth import LineRenderer, SynthConfig, write_split
from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_pad

# 20 characters ppocr_keys_v1.txt lacks, all drawn by the train fonts (checked by check_new_chars)
UNITS = "㎜㎝㎞㏄㎎㎖℉㎾"          # unit signs: after a number
SYMBOLS = "∵∴∠≌㈱"                # symbols: before a letter or a number
RARE_HANZI = "赟翀珅旻镕堉燊"        # rare hanzi of names (朱镕基, 王赟 ...)
NEW_CHARS = UNITS + SYMBOLS + RARE_HANZI


def check_new_chars(chars: Sequence[str], keys_file: str | Path, cfg: SynthConfig | None = None) -> List[str]:
    """`chars` if each is absent from the dict `keys_file` and drawn by a train font; ValueError (one line) naming
    the others."""
    known = set(CharDict.from_file(str(keys_file)).chars)
    present = [c for c in chars if c in known]
    renderer = LineRenderer(cfg or SynthConfig(aug=False), list(chars), "train")
    undrawable = [c for c in chars if c not in renderer.chars]
    if present or undrawable or len(set(chars)) != len(chars):
        raise ValueError(f"new characters: already in {Path(keys_file).name}: {''.join(present) or '-'}; no train "
                         f"font draws: {''.join(undrawable) or '-'}; repeated: {len(chars) - len(set(chars))}")
    return list(chars)


def write_extended_dict(keys_file: str | Path, new: Sequence[str], out: Path) -> Path:
    """The released dict's lines, then the new characters, one a line (the run's Global.character_dict_path)."""
    lines = Path(keys_file).read_text(encoding="utf-8").splitlines()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines + list(new)) + "\n", encoding="utf-8")
    return out


def _token(c: str, rng: np.random.Generator) -> str:
    if c in UNITS:
        n = str(int(rng.integers(1, 1000)))
        return (n + "." + str(int(rng.integers(0, 10))) if rng.random() < 0.3 else n) + c
    if c in SYMBOLS:
        return c + ("ABCDEFMN"[int(rng.integers(8))] if rng.random() < 0.5 else str(int(rng.integers(1, 10))))
    return c


def new_char_text(renderer: LineRenderer, k: int, new: Sequence[str], rng: np.random.Generator) -> str:
    """A line of font k's sampler (2-8 characters) with 1-2 tokens of new characters (drawn uniformly) inserted."""
    base = list(renderer.samplers[k].sample(rng, int(rng.integers(2, 9))).strip() or "的")
    for _ in range(1 + int(rng.random() < 0.4)):
        at = int(rng.integers(0, len(base) + 1))
        base[at:at] = list(_token(new[int(rng.integers(len(new)))], rng))
    return "".join(base)


def make_new_char_split(out: Path, keys_file: str | Path, new: Sequence[str], num: int, seed: int,
                        aug: bool = False, plain: bool = False) -> Path:
    """`num` lines to out/label.txt + out/images/ (cached by out/made.json); `plain`: the generator's lines without
    new characters (the control / general lines of the same look)."""
    record = {"num": num, "seed": seed, "aug": aug, "plain": plain, "new": "".join(new), "version": 1}
    made = out / "made.json"
    if made.exists() and json.loads(made.read_text(encoding="utf-8")) == record:
        return out
    known = CharDict.from_file(str(keys_file), use_space_char=True).chars
    cfg = SynthConfig(aug=aug, seed=seed, freq_mix=1.0)
    renderer = LineRenderer(cfg, list(known) + list(new), "train")
    renderer.samplers = LineRenderer(cfg, known, "train").samplers  # base texts: the released dict only
    samples = []
    for i in range(num):
        rng = np.random.default_rng([seed, 7, i])
        k = int(rng.integers(len(renderer.fonts)))
        text = renderer.samplers[k].sample(rng, int(rng.integers(2, 11))) if plain else \
            new_char_text(renderer, k, new, rng)
        img = renderer.render(text, rng, k)
        ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 92])
        samples.append((buf.tobytes(), text, renderer.fonts[k].name))
    write_split(out, samples, fmt="label_file")
    made.write_text(json.dumps(record), encoding="utf-8")
    return out


def new_char_scores(truth: Dict[str, str], reads: Dict[str, str], new: Sequence[str]) -> dict:
    """Exact-string accuracy of the lines with a new character; per new character: the exact accuracy of its lines
    and its recall (occurrences read: min(count in the reading, count in the label) over count in the labels)."""
    lines = {k: t for k, t in truth.items() if any(c in t for c in new)}
    per = {}
    for c in new:
        mine = {k: t for k, t in lines.items() if c in t}
        occ = sum(t.count(c) for t in mine.values())
        hit = sum(min(t.count(c), (reads.get(k) or "").count(c)) for k, t in mine.items())
        per[c] = {"lines": len(mine), "exact": round(sum(reads.get(k) == t for k, t in mine.items()) / max(len(mine), 1), 4),
                  "recall": round(hit / max(occ, 1), 4)}
    return {"new_lines": len(lines),
            "new_exact": round(sum(reads.get(k) == t for k, t in lines.items()) / max(len(lines), 1), 4),
            "per_char": per}


def fit_new_rows(model, chars: Sequence[str], new: Sequence[str], lines: Sequence[tuple], steps: int = 300,
                 lr: float = 1e-2, batch: int = 64, seed: int = 0, shape=(3, 48, 320)) -> dict:
    """Fit the CTC class rows of the `new` characters alone (weight columns and biases of the class layer; every
    other row and every other tensor unchanged, so the released readings of lines without new characters stay
    exactly the same) with Adam(`lr`) on the CTC loss of `lines` [(image path, text)], on the features the frozen
    network computes for them (eval mode: one forward per line, then `steps` cheap steps of `batch` lines).
    `chars`: the run's dict (class k + 1 = chars[k]). Written into `model` in place; returns the fit's record."""
    layer = getattr(model.ctc_head, model.ctc_head.class_layer)
    cols = [list(chars).index(c) + 1 for c in new]
    if cols != list(range(cols[0], cols[0] + len(cols))):
        raise ValueError("fit_new_rows: the new characters must be consecutive in the dict")
    lo, hi = cols[0], cols[-1] + 1
    model.eval()
    feats = []
    hook = layer.register_forward_pre_hook(lambda _, inputs: feats.append(inputs[0].detach()))
    with paddle.no_grad():
        for i in range(0, len(lines), 32):
            x = np.stack([resize_norm_pad(cv2.imread(str(p)), shape)[0] for p, _ in lines[i:i + 32]])
            model(paddle.to_tensor(x))
    hook.remove()
    feats = paddle.concat(feats)  # [N, T, C]
    print(f"fit_new_rows: features of {len(lines)} lines", flush=True)
    index = {c: k + 1 for k, c in enumerate(chars)}
    width = max(len(t) for _, t in lines)
    labels = paddle.to_tensor([[index[c] for c in t] + [0] * (width - len(t)) for _, t in lines], dtype="int32")
    lengths = paddle.to_tensor([len(t) for _, t in lines], dtype="int64")
    weight = paddle.create_parameter(layer.weight[:, lo:hi].shape, "float32")
    bias = paddle.create_parameter([hi - lo], "float32")
    weight.set_value(layer.weight[:, lo:hi])
    bias.set_value(layer.bias[lo:hi])
    opt = paddle.optimizer.Adam(learning_rate=lr, parameters=[weight, bias])
    rng = np.random.default_rng(seed)
    losses = []
    with paddle.no_grad():
        fixed = layer(feats)  # the logits of every other row, once
    for _ in range(steps):
        pick = paddle.to_tensor(rng.choice(len(lines), size=min(batch, len(lines)), replace=False))
        f = paddle.gather(feats, pick)
        logits = paddle.concat([paddle.gather(fixed, pick)[..., :lo], paddle.matmul(f, weight) + bias,
                                paddle.gather(fixed, pick)[..., hi:]], axis=-1)
        loss = paddle.nn.functional.ctc_loss(logits.transpose([1, 0, 2]), paddle.gather(labels, pick),
                                             paddle.full([len(pick)], logits.shape[1], "int64"),
                                             paddle.gather(lengths, pick), blank=0, reduction="mean")
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    with paddle.no_grad():
        w, b = layer.weight.numpy(), layer.bias.numpy()
        w[:, lo:hi], b[lo:hi] = weight.numpy(), bias.numpy()
        layer.weight.set_value(w)
        layer.bias.set_value(b)
    return {"lines": len(lines), "steps": steps, "lr": lr, "batch": batch,
            "loss_first": round(losses[0], 3), "loss_last": round(float(np.mean(losses[-10:])), 3)}
