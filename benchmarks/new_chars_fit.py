"""Fits of the new characters' rows (issue 50 item 3) compared side by side on cached features: the released
PP-OCRv4 rec with the extended dict of `finetune_forgetting.py prep --domain new_chars` (rows follow characters), its
backbone's outputs computed once per line and kept (<root>/feats/), then each fit (harness.new_chars.fit_new_rows)
runs on them in minutes and is scored on them too: no fit here changes the backbone.

    python benchmarks/new_chars_fit.py fit NAME --root /tmp/nc2 [--rows 200] [--head 0] [--neg lookalike,tune,replay]
    python benchmarks/new_chars_fit.py report --root /tmp/nc2

Fit lines: the first --fit-lines weak train lines (CTC on their labels); negatives (`--neg`, kept as the released
model reads them: KL to its per-frame distribution): `general` (--num-neg general train lines of the same look),
`lookalike` (--num-neg lines whose new characters are replaced by look-alikes of the released dict: `ml`, `kW`,
`坤`, Latin words), `tune` (the tune part of datasets/make_general_crops.py's real crops, --general), `replay`
(the replay pool's real crops, --replay).
Scores (greedy CTC decoding of the fitted model on the cached features; each line at 48 x 320 as the recipe's eval
feeds it): new-character val lines exact and per character, the general val lines, tests/fixtures/real_crops and
the held-out part of the general crops (agreement with the released model's readings of the same features, per
source). `finetune_forgetting.py run NAME --steps 0 --init-weights <root>/fits/NAME.pdparams` scores the saved
weights through the recipe's `--mode predict` instead (every crop at its own width). One JSON line per fit in
<root>/fits.jsonl. No timing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import paddle

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.finetune_forgetting import new_chars_of, released_files, released_model_ext  # noqa: E402
from benchmarks.harness.new_chars import fit_new_rows, head_inputs, make_new_char_split, new_char_scores  # noqa: E402
from benchmarks.harness.real_crops import REAL_CROPS, read_label_file  # noqa: E402

SHAPE = (3, 48, 320)
SCORED = ("weak_val", "real", "tune", "heldout")  # the general val lines: finetune_forgetting.py run --init-weights


def set_lines(a, root: Path, name: str) -> list:
    """[(image path, text)] of the named set."""
    _, keys = released_files()
    general = Path(a.general)
    return {"weak": lambda: read_label_file(root / "weak/train")[:a.fit_lines],
            "general": lambda: read_label_file(root / "general/train")[:a.num_neg],
            "lookalike": lambda: read_label_file(make_new_char_split(root / "lookalike/train", keys, new_chars_of(root),
                                                                     a.num_neg, 31, lookalike=True)),
            "tune": lambda: read_label_file(general / "tune"), "heldout": lambda: read_label_file(general / "heldout"),
            "replay": lambda: read_label_file(Path(a.replay))[::a.replay_every], "weak_val": lambda: read_label_file(root / "weak/val"),
            "general_val": lambda: read_label_file(root / "general/val"), "real": lambda: read_label_file(REAL_CROPS),
            }[name]()


def cached(a, root: Path, model, name: str):
    """(features [N, C, 1, T], lines) of a set, computed once into <root>/feats/."""
    lines = set_lines(a, root, name)
    path = root / "feats" / f"{name}.npy"
    meta = root / "feats" / f"{name}.json"
    record = [[str(p), t] for p, t in lines]
    if path.exists() and json.loads(meta.read_text(encoding="utf-8")) == record:
        return paddle.to_tensor(np.load(path)), lines
    t0 = time.time()
    feats = head_inputs(model, lines, SHAPE)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, feats.numpy())
    meta.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    print(f"features of {name}: {len(lines)} lines, {time.time() - t0:.0f} s", flush=True)
    return feats, lines


def read(model, feats, chars) -> list:
    """Greedy CTC readings of the head on cached backbone features."""
    model.set_eval_output("logits")
    out = []
    with paddle.no_grad():
        for i in range(0, feats.shape[0], 64):
            for path in model.head(feats[i:i + 64]).numpy().argmax(-1):
                keep = [int(p) for j, p in enumerate(path) if p and (j == 0 or p != path[j - 1])]
                out.append("".join(chars[p - 1] for p in keep))
    model.set_eval_output("probs")
    return out


def sources(general: Path) -> dict:
    rows = (general / "sources.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return {(r.split("\t")[1], r.split("\t")[0]): r.split("\t")[2] for r in rows}


def scores(a, root: Path, model, chars, base: dict) -> dict:
    """Per scored set: exact / agreement with the released readings `base` (same features), per source for the
    general crops; the new characters' scores on weak_val."""
    new = new_chars_of(root)
    src = sources(Path(a.general))
    res = {}
    for name in SCORED:
        feats, lines = cached(a, root, model, name)
        reads = dict(zip([p.name for p, _ in lines], read(model, feats, chars)))
        truth = {p.name: t for p, t in lines}
        agree = {k: reads[k] == base[name][k] for k in truth}
        row = {"lines": len(truth), "exact": round(sum(reads[k] == t for k, t in truth.items()) / len(truth), 4),
               "agree": round(sum(agree.values()) / len(truth), 4),
               "changed": {k: [base[name][k], reads[k]] for k in truth if not agree[k]}}
        if name in ("tune", "heldout"):
            groups = {}
            for k in truth:
                groups.setdefault(src[(name, k)], []).append(agree[k])
            row["per_source"] = {s: [round(sum(v) / len(v), 4), len(v)] for s, v in sorted(groups.items())}
        if name == "weak_val":
            row |= new_char_scores(truth, reads, new)
        res[name] = row
    return res


def fit(a, root: Path):
    model, chars = released_model_ext(root)
    base_file = root / "fits_released.json"
    if not base_file.exists():  # the released model's readings of the cached features (new rows far below)
        base = {}
        for name in SCORED:
            feats, lines = cached(a, root, model, name)
            base[name] = dict(zip([p.name for p, _ in lines], read(model, feats, chars)))
        base_file.write_text(json.dumps(base, ensure_ascii=False), encoding="utf-8")
    base = json.loads(base_file.read_text(encoding="utf-8"))
    pos, lines = cached(a, root, model, "weak")
    feats, negatives = [pos], []
    for name in [n for n in a.neg.split(",") if n]:
        f, ls = cached(a, root, model, name)
        feats.append(f)
        negatives += ls
    t0 = time.time()
    paddle.seed(0)
    record = fit_new_rows(model, chars, new_chars_of(root), lines, steps=a.rows, lr=a.lr, batch=a.batch,
                          negatives=negatives, head_steps=a.head, head_lr=a.head_lr, distill_weight=a.distill,
                          feats=paddle.concat(feats))
    record["wall_s"] = round(time.time() - t0, 1)
    out = root / "fits" / f"{a.name}.pdparams"
    out.parent.mkdir(parents=True, exist_ok=True)
    paddle.save(model.state_dict(), str(out))
    row = {"name": a.name, "neg": a.neg, "fit": record, "scores": scores(a, root, model, chars, base),
           "loadavg": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M")}
    with open(root / "fits.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
    s = row["scores"]
    print(json.dumps({"name": a.name, "new_exact": s["weak_val"]["new_exact"], **{
        k: s[k]["agree"] for k in SCORED[1:]}, "fit": record}, ensure_ascii=False))


def report(a, root: Path):
    rows = [json.loads(ln) for ln in (root / "fits.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    srcs = list(rows[0]["scores"]["heldout"]["per_source"])
    print("| fit | negatives (KL) | rows steps | head steps | fit wall | new-char lines exact | "
          "real crops agree | tune agree | held-out agree | " + " | ".join(f"held-out {s}" for s in srcs) + " |")
    print("|---|---|---|---|---|---|---|---|---|" + "---|" * len(srcs))
    for r in rows:
        s, f = r["scores"], r["fit"]
        per = s["heldout"]["per_source"]
        print(f"| {r['name']} | {r['neg'] or '-'} | {f['rows']['steps']} | {f.get('head', {}).get('steps', 0)} | "
              f"{f['wall_s'] / 60:.1f} min | {s['weak_val']['new_exact']:.3f} | "
              f"{s['real']['agree']:.3f} | {s['tune']['agree']:.3f} | {s['heldout']['agree']:.3f} | "
              + " | ".join(f"{per[x][0]:.3f} ({per[x][1]})" for x in srcs) + " |")
    for r in rows:
        per = r["scores"]["weak_val"]["per_char"]
        print(f"\n{r['name']}, per new character (exact / recall, lines):\n")
        print("| " + " | ".join(per) + " |\n|" + "---|" * len(per))
        print("| " + " | ".join(f"{v['exact']:.2f} / {v['recall']:.2f} ({v['lines']})" for v in per.values()) + " |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["fit", "report"])
    p.add_argument("name", nargs="?", default="fit")
    p.add_argument("--root", default="/tmp/nc2", help="a finetune_forgetting.py prep --domain new_chars root")
    p.add_argument("--general", default="/tmp/forget/general", help="datasets/make_general_crops.py's folder")
    p.add_argument("--replay", default="/tmp/forget/real_replay", help="the replay pool (label.txt + images/)")
    p.add_argument("--fit-lines", type=int, default=400)
    p.add_argument("--replay-every", type=int, default=3, help="every k-th line of the replay pool")
    p.add_argument("--num-neg", type=int, default=200, help="general / lookalike lines among the negatives")
    p.add_argument("--neg", default="", help="comma-separated negative sets: general, lookalike, tune, replay")
    p.add_argument("--rows", type=int, default=200, help="Adam steps of the new rows alone")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--head", type=int, default=0, help="then Adam steps of the whole CTC head")
    p.add_argument("--head-lr", type=float, default=3e-4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--distill", type=float, default=1.0)
    a = p.parse_args(argv)
    root = Path(a.root)
    {"fit": fit, "report": report}[a.what](a, root)


if __name__ == "__main__":
    main()
