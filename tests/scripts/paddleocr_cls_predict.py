"""Run paddleocr 3.x TextLineOrientationClassification on images; print one JSON line
{"results": [[label, score], ...]} (inside the side venv, not the project's python):

    .venv-paddleocr/bin/python tests/scripts/paddleocr_cls_predict.py MODEL_DIR MODEL_NAME IMG...
"""
import json
import os
import sys

os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")  # no network look-up of model hosters


def main(argv):
    model_dir, model_name, images = argv[0], argv[1], argv[2:]
    from paddleocr import TextLineOrientationClassification

    cls = TextLineOrientationClassification(model_name=model_name, model_dir=model_dir, device="cpu")
    out = []
    for res in cls.predict(images, batch_size=1):
        out.append([res["label_names"][0], float(res["scores"][0])])
    print(json.dumps({"results": out}))


if __name__ == "__main__":
    main(sys.argv[1:])
