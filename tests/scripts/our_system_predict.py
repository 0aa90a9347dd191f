"""Run OUR OCR system pipeline (tasks/ocr_system: det -> crops -> rec, what OcrSystem.pipeline builds) on images
in whatever python runs this file: used inside the paddleocr 3.x side venv, so that our crops and PaddleOCR's are
made by the same OpenCV (paddlex pins opencv-contrib 4.10, whose cubic warp differs from 5.x's on some pixels).

    python tests/scripts/our_system_predict.py SPEC_JSON IMG...
SPEC_JSON (or @FILE holding it): {"det_arch", "det_weights", "transform" (DBEvalTransform kwargs), "post" (DBPostProcess kwargs),
"rec_arch", "rec_weights", "chars", "image_shape", "rec_batch_num", "crops" (crop modes)}. Prints one JSON line
{"results": {crop mode: [{"boxes": [...], "texts": [...]}, ...]}}: every line (drop_score 0) in reading order,
per image.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo's package, not an installed copy


def main(spec, images):
    import cv2
    import paddle

    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model
    from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess
    from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform
    from paddle_recipes.tasks.ocr_system.pipeline import OcrPipeline, det_fn, rec_fn

    det = build_ppocr_det_model(spec["det_arch"])
    det.set_state_dict(paddle.load(spec["det_weights"]))
    rec = build_rec_model(spec["rec_arch"], len(spec["chars"]) + 1)
    rec.set_state_dict(paddle.load(spec["rec_weights"]))
    detect = det_fn(det, DBEvalTransform(**spec["transform"]), DBPostProcess(**spec["post"]))
    recognize = rec_fn(rec, CharDict(spec["chars"]), spec["image_shape"], spec["rec_batch_num"])
    out = {}
    for crop in spec["crops"]:
        pipe = OcrPipeline(detect, recognize, drop_score=0.0, crop=crop)
        out[crop] = [{"boxes": [[[int(v) for v in p] for p in ln["points"]] for ln in lines],
                      "texts": [ln["transcription"] for ln in lines]} for lines in map(pipe, map(cv2.imread, images))]
    print(json.dumps({"results": out}, ensure_ascii=False))


if __name__ == "__main__":
    spec = sys.argv[1]  # the JSON, or @file holding it (a dict of 18k characters is too long for argv)
    main(json.loads(Path(spec[1:]).read_text(encoding="utf-8") if spec.startswith("@") else spec), sys.argv[2:])
