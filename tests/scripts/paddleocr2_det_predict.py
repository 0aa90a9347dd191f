"""Run paddleocr 2.x's TextDetector (tools/infer/predict_det.py) on images; print one JSON line
{"results": [[box, ...], ...]} in input order.

Runs inside a venv with paddleocr 2.x (e.g. paddleocr==2.10.0 paddlepaddle==3.3.1), not the project's python:
    python tests/scripts/paddleocr2_det_predict.py MODEL_DIR ARGS_JSON IMG...
ARGS_JSON: predict_det command-line options as a JSON list (the det export report's "paddleocr2_predict_det_args").
"""
import json
import sys


def main(argv):
    model_dir, extra, images = argv[0], json.loads(argv[1]), argv[2:]
    import cv2
    from paddleocr.tools.infer import utility
    from paddleocr.tools.infer.predict_det import TextDetector

    args = utility.init_args().parse_args([f"--det_model_dir={model_dir}", "--use_gpu=False", *extra])
    det = TextDetector(args)
    out = []
    for f in images:
        boxes, _ = det(cv2.imread(f))
        out.append([[[int(round(v)) for v in p] for p in box] for box in boxes])
    print(json.dumps({"results": out}))


if __name__ == "__main__":
    main(sys.argv[1:])
