"""Run paddleocr 3.x TextRecognition on images; print one JSON line {"results": [[text, score], ...]}.

Runs inside the side venv made by .ci/setup_paddleocr_venv.sh (not the project's python):
    .venv-paddleocr/bin/python tests/scripts/paddleocr_rec_predict.py MODEL_DIR MODEL_NAME BATCH IMG...
Images are passed in order; results come back in the same order.
"""
import json
import os
import sys

os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")  # no network look-up of model hosters


def main(argv):
    model_dir, model_name, batch_size, images = argv[0], argv[1], int(argv[2]), argv[3:]
    from paddleocr import TextRecognition

    rec = TextRecognition(model_name=model_name, model_dir=model_dir, device="cpu")
    out = []
    for res in rec.predict(images, batch_size=batch_size):
        out.append([res["rec_text"], float(res["rec_score"])])
    print(json.dumps({"results": out}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
