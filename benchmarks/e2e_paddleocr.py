"""End to end through PaddleOCR's own pipeline: our trained det and rec, exported, read pages in paddleocr 3.x.

    python benchmarks/e2e_paddleocr.py                     # the default det + page-crop rec runs, held-out pages
    python benchmarks/e2e_paddleocr.py --det-weights output/ocr_det/checkpoints/best \\
        --rec-config recipes/configs/ocr_rec_pages.yml --rec-weights output/ocr_rec_pages/checkpoints/best --pages D

Steps: `recipes/ocr_det.py --mode export` and `recipes/ocr_rec.py --mode export` (PaddleOCR inference folders),
then `PaddleOCR(text_detection_model_dir=<det>, text_recognition_model_dir=<rec>, use_doc_orientation_classify=False,
use_doc_unwarping=False, use_textline_orientation=False, **det report["paddleocr_pipeline_kwargs"],
text_rec_score_thresh=<the system's Global.drop_score>)` (the system config's Det.opt, e.g. its unclip_ratio, is
applied to the det export, so both sides cut the same boxes) in the paddleocr 3.x side venv (.ci/setup_paddleocr_venv.sh;
tests/scripts/paddleocr_system_predict.py) on the pages of a PaddleOCR det label file (default: the det config's
synthetic held-out pages, eval fonts only). Its rec_polys / rec_texts are scored by our end-to-end metric
(tasks/ocr_system/metric.E2EMetric: IoU >= 0.5 one-to-one matching, exact text), the same code as
`recipes/ocr_system.py --mode eval`, whose figures on the same pages are computed alongside (`--no-ours` skips).
Writes --out/report.json. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paddle_recipes.tasks.ocr_det.dataset import DetDataset  # noqa: E402
from paddle_recipes.tasks.ocr_system.pipeline import score_pages  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--det-config", default="recipes/configs/ocr_det.yml")
    p.add_argument("--det-weights", default="", help='"" = the det config\'s output_dir/checkpoints')
    p.add_argument("--rec-config", default="recipes/configs/ocr_rec_pages.yml")
    p.add_argument("--rec-weights", default="")
    p.add_argument("--pages", default="", help="folder with label.txt (PaddleOCR det labels with transcriptions); "
                                               "\"\" = datasets/cache/ocr_det/heldout")
    p.add_argument("--system-config", default="recipes/configs/ocr_system.yml",
                   help="its Det.opt (e.g. PostProcess.unclip_ratio) and Global.drop_score apply to both sides")
    p.add_argument("--venv", default=os.environ.get("PADDLEOCR_VENV", str(REPO / ".venv-paddleocr")))
    p.add_argument("--no-ours", action="store_true", help="skip our own system's eval on the same pages")
    p.add_argument("--out", default="benchmarks/results/cpu_e2e_paddleocr")
    return p.parse_args(argv)


def run(cmd: list, log: Path) -> str:
    """Run a command from the repo root; its stdout (the last line is the JSON of the scripts used here)."""
    t0 = time.time()
    res = subprocess.run([str(c) for c in cmd], cwd=REPO, capture_output=True, text=True)
    log.write_text(res.stdout + res.stderr, encoding="utf-8")
    if res.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd[:4]))} ... failed (exit {res.returncode}); see {log}")
    print(f"  {Path(str(cmd[1])).name} done in {time.time() - t0:.0f} s", flush=True)
    return res.stdout


def export(recipe: str, config: str, weights: str, out: Path, log: Path, opt=()) -> dict:
    """Export ``weights`` ("" = the config's own output_dir/checkpoints) into out/inference."""
    if not weights:
        weights = str(REPO / yaml.safe_load((REPO / config).read_text(encoding="utf-8"))["Global"]["output_dir"]
                      / Path("checkpoints"))
    opts = [*opt, f"Global.output_dir={out}", f"Global.weights={weights}"]
    run([sys.executable, recipe, "-c", config, "--mode", "export", "-o", *opts], log)
    return json.loads((out / "inference" / "export_report.json").read_text(encoding="utf-8"))


def main(argv=None) -> dict:
    a = parse_args(argv)
    out = (REPO / a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    venv_py = Path(a.venv) / "bin" / "python"
    if not venv_py.exists():
        raise SystemExit(f"no paddleocr 3.x venv at {a.venv}: run .ci/setup_paddleocr_venv.sh (or pass --venv)")
    pages = Path(a.pages or REPO / "datasets/cache/ocr_det/heldout")
    ds = DetDataset(pages / "label.txt", pages, strict=True, name="e2e pages")  # the pages as the system's eval reads them
    images = [str(pages / path) for path, _, _ in ds.items]
    print(f"exporting det ({a.det_config}) and rec ({a.rec_config}) ...", flush=True)
    system = yaml.safe_load((REPO / a.system_config).read_text(encoding="utf-8"))
    det_opt, drop_score = list(system.get("Det", {}).get("opt", [])), float(system["Global"]["drop_score"])
    det = export("recipes/ocr_det.py", a.det_config, a.det_weights, out / "det", out / "det_export.log", det_opt)
    rec = export("recipes/ocr_rec.py", a.rec_config, a.rec_weights, out / "rec", out / "rec_export.log")
    kwargs = {**det.get("paddleocr_pipeline_kwargs", {}), "text_rec_score_thresh": drop_score}
    print(f"PaddleOCR pipeline on {len(images)} pages ({venv_py}) ...", flush=True)
    t0 = time.time()
    stdout = run([venv_py, REPO / "tests/scripts/paddleocr_system_predict.py", out / "det/inference", det["model_name"],
                  out / "rec/inference", rec["model_name"], json.dumps(kwargs), *images], out / "paddleocr.log")
    seconds = time.time() - t0
    results = json.loads(stdout.strip().splitlines()[-1])["results"]
    # rec_polys: the boxes kept with a text; scored by the same loop as recipes/ocr_system.py --mode eval
    scores = score_pages(ds, lambda i, _: list(zip(results[i]["rec_boxes"], results[i]["texts"])))
    report = {"pages": str(pages), "images": len(images), "paddleocr_pipeline": scores,
              "paddleocr_pipeline_seconds": round(seconds, 1), "pipeline_kwargs": kwargs, "det_opt": det_opt,
              "det_model_name": det["model_name"], "rec_model_name": rec["model_name"],
              "det_weights": a.det_weights or "(det config's checkpoints)",
              "rec_weights": a.rec_weights or "(rec config's checkpoints)"}
    if not a.no_ours:
        opts = [f"Det.config={a.det_config}", f"Rec.config={a.rec_config}", f"Global.output_dir={out / 'ours'}",
                f"Eval.dataset.data_dir={pages}",
                f"Eval.dataset.label_file_list=[{pages / 'label.txt'}]",
                *([f"Det.weights={a.det_weights}"] if a.det_weights else []),
                *([f"Rec.weights={a.rec_weights}"] if a.rec_weights else [])]
        ours = run([sys.executable, "recipes/ocr_system.py", "--mode", "eval", "-c", a.system_config, "-o", *opts],
                   out / "ours.log")
        report["ours_recipes_ocr_system"] = json.loads(ours.strip().splitlines()[-1])
    (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "pipeline_kwargs"}, ensure_ascii=False))
    return report


if __name__ == "__main__":
    main()
