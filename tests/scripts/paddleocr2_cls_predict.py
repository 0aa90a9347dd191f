"""Run paddleocr 2.x's TextClassifier (tools/infer/predict_cls.py) on images; print one JSON line
{"results": [[label, score], ...]} in input order (inside a venv with paddleocr 2.x, not the project's python):

    python tests/scripts/paddleocr2_cls_predict.py MODEL_DIR C,H,W LABEL,LABEL IMG...
"""
import json
import sys


def main(argv):
    model_dir, shape, labels, images = argv[0], argv[1], argv[2].split(","), argv[3:]
    import cv2
    from paddleocr.tools.infer import utility
    from paddleocr.tools.infer.predict_cls import TextClassifier

    args = utility.init_args().parse_args([])
    args.cls_model_dir, args.cls_image_shape, args.label_list, args.use_gpu = model_dir, shape, labels, False
    args.cls_batch_num, args.cls_thresh = 6, 0.9
    cls = TextClassifier(args)
    _, results, _ = cls([cv2.imread(f) for f in images])
    print(json.dumps({"results": [[lab, float(s)] for lab, s in results]}))


if __name__ == "__main__":
    main(sys.argv[1:])
