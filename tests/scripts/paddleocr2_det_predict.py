"""Run paddleocr 2.x's TextDetector (tools/infer/predict_det.py), or with REC_ARGS_JSON its TextSystem
(tools/infer/predict_system.py: det + rec, no angle classifier, drop_score 0), on images; print one JSON line
{"results": [[box, ...], ...]} (TextSystem: [{"boxes": [...], "texts": [...]}, ...]) in input order.

Runs inside a venv with paddleocr 2.x (e.g. paddleocr==2.10.0 paddlepaddle==3.3.1), not the project's python:
    python tests/scripts/paddleocr2_det_predict.py MODEL_DIR ARGS_JSON [--system REC_ARGS_JSON] IMG...
ARGS_JSON: predict_det command-line options as a JSON list (the det export report's "paddleocr2_predict_det_args");
REC_ARGS_JSON: the recognizer's (--rec_model_dir, --rec_char_dict_path, --rec_image_shape).
"""
import json
import sys


def main(argv):
    model_dir, extra, images = argv[0], json.loads(argv[1]), argv[2:]
    rec = json.loads(images[1]) if images[0] == "--system" else None
    images = images[2:] if rec is not None else images
    import cv2
    from paddleocr.tools.infer import utility

    def as_list(boxes):
        return [[[int(round(v)) for v in p] for p in box] for box in boxes]

    args = utility.init_args().parse_args([f"--det_model_dir={model_dir}", "--use_gpu=False", *extra, *(rec or [])])
    out = []
    if rec is None:
        from paddleocr.tools.infer.predict_det import TextDetector

        det = TextDetector(args)
        for f in images:
            out.append(as_list(det(cv2.imread(f))[0]))
    else:
        from paddleocr.tools.infer.predict_system import TextSystem

        args.use_angle_cls, args.drop_score, args.rec_algorithm = False, 0.0, "CRNN"
        system = TextSystem(args)
        for f in images:
            boxes, texts, _ = system(cv2.imread(f), cls=False)
            out.append({"boxes": as_list(boxes), "texts": [t for t, _ in texts]})
    print(json.dumps({"results": out}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
