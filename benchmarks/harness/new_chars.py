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

import copy
import json
from pathlib import Path
from typing import Dict, List, Sequence

import cv2
import numpy as np
import paddle
import paddle.nn.functional as F

from paddle_recipes.tasks.ocr_rec.charset import CharDict
from paddle_recipes.tasks.ocr_rec.synth import LineRenderer, SynthConfig, write_split
from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_pad

# 20 characters ppocr_keys_v1.txt lacks, all drawn by the train fonts (checked by check_new_chars)
UNITS = "㎜㎝㎞㏄㎎㎖℉㎾"          # unit signs: after a number
SYMBOLS = "∵∴∠≌㈱"                # symbols: before a letter or a number
RARE_HANZI = "赟翀珅旻镕堉燊"        # rare hanzi of names (朱镕基, 王赟 ...)
NEW_CHARS = UNITS + SYMBOLS + RARE_HANZI
# what each may be confused with, in the released dict (look-alike lines: where no new character may win)
LOOKALIKES = {"㎜": ("mm", "m"), "㎝": ("cm", "c"), "㎞": ("km", "k"), "㏄": ("cc", "c"), "㎎": ("mg", "m"),
              "㎖": ("ml", "mL"), "℉": ("°F", "F"), "㎾": ("kW", "W"), "∵": (":", "…"), "∴": ("…", ":"),
              "∠": ("<", "L"), "≌": ("≈", "="), "㈱": ("(株)", "株"), "赟": ("赞", "斌"), "翀": ("翔", "羽"),
              "珅": ("坤", "绅"), "旻": ("昊", "旭"), "镕": ("熔", "镛"), "堉": ("培", "育"), "燊": ("桑", "焱")}
LATIN_WORDS = ("Bank", "com", "pmol/L", "Web", "kcal", "Mock", "WiFi", "cm2", "km/h", "mg/dL", "10W", "CMYK")


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


def _lookalike(c: str, rng: np.random.Generator) -> str:
    """A token like c's (`_token`), c replaced by one of its LOOKALIKES, or (0.3) a Latin word of LATIN_WORDS."""
    if rng.random() < 0.3:
        return LATIN_WORDS[int(rng.integers(len(LATIN_WORDS)))]
    alike = LOOKALIKES[c][int(rng.integers(len(LOOKALIKES[c])))]
    return "".join(alike if t == c else t for t in _token(c, rng))


def new_char_text(renderer: LineRenderer, k: int, new: Sequence[str], rng: np.random.Generator,
                  lookalike: bool = False) -> str:
    """A line of font k's sampler (2-8 characters) with 1-2 tokens of new characters (drawn uniformly) inserted;
    `lookalike`: the tokens' look-alikes in the released dict instead (`_lookalike`)."""
    base = list(renderer.samplers[k].sample(rng, int(rng.integers(2, 9))).strip() or "的")
    for _ in range(1 + int(rng.random() < 0.4)):
        at = int(rng.integers(0, len(base) + 1))
        c = new[int(rng.integers(len(new)))]
        base[at:at] = list(_lookalike(c, rng) if lookalike else _token(c, rng))
    return "".join(base)


def make_new_char_split(out: Path, keys_file: str | Path, new: Sequence[str], num: int, seed: int,
                        aug: bool = False, plain: bool = False, lookalike: bool = False) -> Path:
    """`num` lines to out/label.txt + out/images/ (cached by out/made.json); `plain`: the generator's lines without
    new characters (the control / general lines of the same look); `lookalike`: the new characters' tokens replaced
    by look-alikes of the released dict (`ml`, `kW`, `坤`, Latin words: lines where no new character may win)."""
    record = {"num": num, "seed": seed, "aug": aug, "plain": plain, "new": "".join(new), "version": 1} | (
        {"lookalike": True} if lookalike else {})
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
            new_char_text(renderer, k, new, rng, lookalike)
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


def head_inputs(model, lines: Sequence[tuple], shape) -> paddle.Tensor:
    """The frozen network's features at model.head's input (the backbone's output) for each line, [N, C, 1, T]."""
    feats = []
    hook = model.head.register_forward_pre_hook(lambda _, inputs: feats.append(inputs[0].detach()))
    with paddle.no_grad():
        for i in range(0, len(lines), 32):
            x = np.stack([resize_norm_pad(cv2.imread(str(p)), shape)[0] for p, _ in lines[i:i + 32]])
            model(paddle.to_tensor(x))
    hook.remove()
    return paddle.concat(feats)


def _kl(teacher_logits, student_logits):
    """KL(teacher || student) of the per-frame class distributions, averaged over frames and lines."""
    p = F.softmax(teacher_logits, axis=-1)
    return (p * (F.log_softmax(teacher_logits, axis=-1) - F.log_softmax(student_logits, axis=-1))).sum(-1).mean()


def fit_new_rows(model, chars: Sequence[str], new: Sequence[str], lines: Sequence[tuple], steps: int = 300,
                 lr: float = 1e-2, batch: int = 64, seed: int = 0, shape=(3, 48, 320), negatives: Sequence[tuple] = (),
                 head_steps: int = 0, head_lr: float = 3e-4, distill_weight: float = 1.0,
                 feats: paddle.Tensor | None = None) -> dict:
    """Fit the CTC class rows of the `new` characters alone (weight columns and biases of the class layer; every
    other row and every other tensor unchanged, so the released readings of lines without new characters stay
    exactly the same unless a new row wins) with Adam(`lr`) on the CTC loss of `lines` [(image path, text)], on the
    features the frozen network computes for them (eval mode: one forward per line, then `steps` cheap steps of
    `batch` lines). `chars`: the run's dict (class k + 1 = chars[k]). Written into `model` in place.

    `negatives` [(image path, text)]: lines whose per-frame class distribution as the model gives it now (the
    released one, new rows far below) is kept: each step adds `distill_weight` x KL(now || fitted) on `batch` of them
    (look-alike and real lines: where no new character may win; their texts are not used).
    `head_steps`: then `head_steps` Adam(`head_lr`) steps of the whole CTC head (model.head: the SVTR neck and the
    class layer) on the same two losses, on the cached backbone features (the backbone unchanged).
    `feats`: the lines' and then the negatives' features at model.head's input when already computed
    (`head_inputs`). Returns the fit's record."""
    layer_name = model.ctc_head.class_layer
    cols = [list(chars).index(c) + 1 for c in new]
    if cols != list(range(cols[0], cols[0] + len(cols))):
        raise ValueError("fit_new_rows: the new characters must be consecutive in the dict")
    lo, hi = cols[0], cols[-1] + 1
    model.eval()
    model.set_eval_output("logits")
    lines, negatives = list(lines), list(negatives)
    if feats is None:
        feats = head_inputs(model, lines + negatives, shape)  # [N, C, 1, T]
    pos_feats, neg_feats = feats[:len(lines)], feats[len(lines):]
    print(f"fit_new_rows: features of {len(lines)} lines + {len(negatives)} negatives", flush=True)
    teacher = copy.deepcopy(model.head)  # the model as given: the anchor of the negatives
    for prm in teacher.parameters():
        prm.stop_gradient = True
    t_layer = getattr(teacher.ctc_head, layer_name)
    index = {c: k + 1 for k, c in enumerate(chars)}
    width = max(len(t) for _, t in lines)
    labels = paddle.to_tensor([[index[c] for c in t] + [0] * (width - len(t)) for _, t in lines], dtype="int32")
    lengths = paddle.to_tensor([len(t) for _, t in lines], dtype="int64")
    rng = np.random.default_rng(seed)

    def pick(n):
        return paddle.to_tensor(rng.choice(n, size=min(batch, n), replace=False))

    def ctc(logits, at):
        return F.ctc_loss(logits.transpose([1, 0, 2]), paddle.gather(labels, at),
                          paddle.full([len(at)], logits.shape[1], "int64"), paddle.gather(lengths, at),
                          blank=0, reduction="mean")

    weight = paddle.create_parameter(t_layer.weight[:, lo:hi].shape, "float32")
    bias = paddle.create_parameter([hi - lo], "float32")
    weight.set_value(t_layer.weight[:, lo:hi])
    bias.set_value(t_layer.bias[lo:hi])

    with paddle.no_grad():  # the (fixed) neck's output of every line: the rows stage's input
        enc = paddle.concat([teacher.ctc_encoder(feats[i:i + 64]) for i in range(0, feats.shape[0], 64)])
        lse_known, t_new = [], []  # per frame: log-sum-exp of the other columns; the new columns as given
        for i in range(0, enc.shape[0], 64):
            full = t_layer(enc[i:i + 64])
            t_new.append(full[..., lo:hi])
            lse_known.append(paddle.logsumexp(paddle.concat([full[..., :lo], full[..., hi:]], axis=-1), axis=-1))
        lse_known, t_new = paddle.concat(lse_known), paddle.concat(t_new)
    n_pos = len(lines)
    label_np, length_np = labels.numpy(), lengths.numpy()
    w_t, b_t = t_layer.weight, t_layer.bias

    def rows_ctc(at):
        """The CTC loss of lines `at` with the new columns from (weight, bias), exactly, on a reduced vocabulary:
        the blank and the known classes of these labels, the new columns, and one column for all other classes
        (their log-sum-exp): the loss only needs the label classes' and the blank's log-probabilities."""
        idx = at.numpy()
        rows = [label_np[k][:length_np[k]] for k in idx]
        known = sorted({0} | {int(c) for r in rows for c in r if not lo <= c < hi})
        where = {c: n for n, c in enumerate(known)} | {c: len(known) + c - lo for c in range(lo, hi)}
        e = paddle.gather(enc[:n_pos], at)
        cols = paddle.to_tensor(known)
        with paddle.no_grad():
            fixed = paddle.matmul(e, paddle.gather(w_t, cols, axis=1)) + paddle.gather(b_t, cols)
            lse = paddle.gather(lse_known[:n_pos], at)
            share = paddle.exp(fixed - lse.unsqueeze(-1)).sum(-1)
            rest = lse + paddle.log(paddle.clip(1 - share, min=1e-12))
        logits = paddle.concat([fixed, paddle.matmul(e, weight) + bias, rest.unsqueeze(-1)], axis=-1)
        width = max(len(r) for r in rows)
        lab = paddle.to_tensor([[where[int(c)] for c in r] + [0] * (width - len(r)) for r in rows], dtype="int32")
        return F.ctc_loss(logits.transpose([1, 0, 2]), lab, paddle.full([len(idx)], logits.shape[1], "int64"),
                          paddle.to_tensor([len(r) for r in rows], dtype="int64"), blank=0, reduction="mean")

    def rows_kl(neg):
        """KL(as given || fitted) of negatives `neg` when only the new columns differ: LSE_s - LSE_t +
        sum over new columns of p_t (t - s)."""
        e = paddle.gather(enc[n_pos:], neg)
        lse, t = paddle.gather(lse_known[n_pos:], neg).unsqueeze(-1), paddle.gather(t_new[n_pos:], neg)
        s_new = paddle.matmul(e, weight) + bias
        lse_t = paddle.logsumexp(paddle.concat([lse, t], axis=-1), axis=-1)
        lse_s = paddle.logsumexp(paddle.concat([lse, s_new], axis=-1), axis=-1)
        return (lse_s - lse_t + (paddle.exp(t - lse_t.unsqueeze(-1)) * (t - s_new)).sum(-1)).mean()

    def write_rows():  # the fitted new columns into the model's class layer
        layer = getattr(model.ctc_head, layer_name)
        with paddle.no_grad():
            w, b = layer.weight.numpy(), layer.bias.numpy()
            w[:, lo:hi], b[lo:hi] = weight.numpy(), bias.numpy()
            layer.weight.set_value(w)
            layer.bias.set_value(b)

    def head_ctc(at):
        return ctc(model.head(paddle.gather(pos_feats, at)), at)

    def head_kl(neg):
        with paddle.no_grad():
            target = t_layer(paddle.gather(enc[n_pos:], neg))  # the model as given
        return _kl(target, model.head(paddle.gather(neg_feats, neg)))

    record = {"lines": len(lines), "negatives": len(negatives), "steps": steps, "lr": lr, "batch": batch,
              "distill_weight": distill_weight}
    stages = [("rows", steps, [weight, bias], rows_ctc, rows_kl, lr)]
    if head_steps:
        stages.append(("head", head_steps, None, head_ctc, head_kl, head_lr))
    for name, n_steps, params, pos_loss, neg_loss, stage_lr in stages:
        if params is None:  # the head stage starts from the fitted rows
            write_rows()
            params = [prm for prm in model.head.parameters() if not prm.stop_gradient]
        opt = paddle.optimizer.Adam(learning_rate=stage_lr, parameters=params)
        losses, kls = [], []
        for _ in range(n_steps):
            loss = pos_loss(pick(len(lines)))
            if negatives:
                kl = neg_loss(pick(len(negatives)))
                loss = loss + distill_weight * kl
                kls.append(float(kl))
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        record[name] = {"steps": n_steps, "lr": stage_lr, "loss_first": round(losses[0], 3) if losses else None,
                        "loss_last": round(float(np.mean(losses[-10:])), 3) if losses else None,
                        **({"kl_last": round(float(np.mean(kls[-10:])), 4)} if kls else {})}
    if not head_steps:
        write_rows()
    model.set_eval_output("probs")
    record["loss_first"], record["loss_last"] = record["rows"]["loss_first"], record["rows"]["loss_last"]
    return record
