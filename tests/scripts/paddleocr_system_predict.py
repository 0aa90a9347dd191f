"""Run paddleocr 3.x's full PaddleOCR pipeline with given det and rec model folders; print one JSON line
{"results": [{"boxes": [...], "texts": [...], "rec_boxes": [...]}, ...]} per image, in input order: dt_polys (every
detected box), rec_texts and rec_polys (the boxes whose text passed text_rec_score_thresh, one per text).

Runs inside the side venv made by .ci/setup_paddleocr_venv.sh (not the project's python):
    .venv-paddleocr/bin/python tests/scripts/paddleocr_system_predict.py DET_DIR DET_NAME REC_DIR REC_NAME KWARGS_JSON IMG...
KWARGS_JSON: extra PaddleOCR(...) arguments (e.g. the det export report's "paddleocr_pipeline_kwargs"; the document
orientation, unwarping and text-line orientation stages are off unless they turn them on).
"""
import json
import os
import sys

os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")  # no network look-up of model hosters


def main(argv):
    det_dir, det_name, rec_dir, rec_name, kwargs, images = argv[0], argv[1], argv[2], argv[3], json.loads(argv[4]), argv[5:]
    from paddleocr import PaddleOCR

    ocr = PaddleOCR(text_detection_model_dir=det_dir, text_detection_model_name=det_name,
                    text_recognition_model_dir=rec_dir, text_recognition_model_name=rec_name,
                    device="cpu", **{"use_doc_orientation_classify": False, "use_doc_unwarping": False,
                                     "use_textline_orientation": False, **kwargs})
    out = []
    for res in ocr.predict(images):
        out.append({"boxes": [[[int(v) for v in p] for p in box] for box in res["dt_polys"]],
                    "texts": list(res["rec_texts"]), "scores": [round(float(v), 5) for v in res["rec_scores"]],
                    "rec_boxes": [[[int(v) for v in p] for p in box] for box in res["rec_polys"]]})
    print(json.dumps({"results": out}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
