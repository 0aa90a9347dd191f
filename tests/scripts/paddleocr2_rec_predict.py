"""Run paddleocr 2.x's TextRecognizer (tools/infer/predict_rec.py) on images; print one JSON line
{"results": [[text, score], ...]} in input order.

Runs inside a venv with paddleocr 2.x (e.g. paddleocr==2.10.0 paddlepaddle==3.3.1), not the project's python:
    python tests/scripts/paddleocr2_rec_predict.py MODEL_DIR DICT_PATH C,H,W BATCH IMG...
"""
import json
import sys


def main(argv):
    model_dir, dict_path, shape, batch, images = argv[0], argv[1], argv[2], int(argv[3]), argv[4:]
    import cv2
    from paddleocr.tools.infer import utility
    from paddleocr.tools.infer.predict_rec import TextRecognizer

    args = utility.init_args().parse_args([])
    args.rec_model_dir, args.rec_char_dict_path, args.rec_image_shape = model_dir, dict_path, shape
    args.rec_batch_num, args.use_gpu, args.rec_algorithm = batch, False, "CRNN"
    rec = TextRecognizer(args)
    out = rec([cv2.imread(f) for f in images])
    results = out[0] if isinstance(out, tuple) else out
    print(json.dumps({"results": [[t, float(s)] for t, s in results]}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
