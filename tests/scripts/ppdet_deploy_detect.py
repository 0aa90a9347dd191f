"""Run PaddleDetection's own deploy ``Detector`` (deploy/python/infer.py of release/2.6, unchanged) on images;
print one JSON line {"boxes": [[class, score, x1, y1, x2, y2], ...], "boxes_num": [n per image]}.

deploy/python is not in the paddledet wheel: point DEPLOY_DIR at a PaddleDetection checkout's deploy/python.
    python tests/scripts/ppdet_deploy_detect.py DEPLOY_DIR MODEL_DIR IMG...
"""
import json
import os
import sys


def main(argv):
    deploy_dir, model_dir, images = argv[0], argv[1], argv[2:]
    sys.path.insert(0, os.path.abspath(deploy_dir))
    from infer import Detector  # ppdet's module names (infer, preprocess, utils) come first on the path

    det = Detector(model_dir, device="CPU", cpu_threads=1, batch_size=1)
    res = det.predict_image(images, visual=False)
    print(json.dumps({"boxes": res["boxes"].tolist(), "boxes_num": res["boxes_num"].tolist()}))


if __name__ == "__main__":
    main(sys.argv[1:])
