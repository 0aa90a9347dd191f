"""Run paddleocr 3.x TextDetection on images; print one JSON line {"results": [{"boxes": ..., "scores": ...}, ...]}.

Runs inside the side venv made by .ci/setup_paddleocr_venv.sh (not the project's python):
    .venv-paddleocr/bin/python tests/scripts/paddleocr_det_predict.py MODEL_DIR MODEL_NAME KWARGS_JSON IMG...
KWARGS_JSON: extra TextDetection(...) arguments, e.g. '{}' or '{"limit_type": "min"}'. One result per image, in order.
"""
import json
import os
import sys

os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")  # no network look-up of model hosters


def main(argv):
    model_dir, model_name, kwargs, images = argv[0], argv[1], json.loads(argv[2]), argv[3:]
    from paddleocr import TextDetection

    det = TextDetection(model_name=model_name, model_dir=model_dir, device="cpu", **kwargs)
    out = []
    for res in det.predict(images, batch_size=1):
        out.append({"boxes": [[[int(v) for v in p] for p in box] for box in res["dt_polys"]],
                    "scores": [float(s) for s in res["dt_scores"]]})
    print(json.dumps({"results": out}))


if __name__ == "__main__":
    main(sys.argv[1:])
