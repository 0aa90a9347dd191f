"""Run paddleocr 2.x's own OCR system (tools/infer/predict_system.py's TextSystem: det -> sorted boxes -> rotate crop
-> angle classifier -> rec, lines below drop_score left out) on images, as its main() does: cv2.imread (BGR).
Prints one JSON line {"results": [{"boxes": [...], "texts": [...], "scores": [...], "angles": [...]}, ...]} in input
order; "angles": the orientation classifier's [label, score] of each kept line (["0", 1.0] without that stage): its
crop was read turned by 180 degrees when the label is "180" and the score above --cls_thresh.

Runs inside a venv with paddleocr 2.x (e.g. paddleocr==2.10.0 paddlepaddle==3.3.1), not the project's python:
    python tests/scripts/paddleocr2_system_predict.py ARGS_JSON IMG...
ARGS_JSON: predict_system command-line options as a JSON list, e.g. ["--det_model_dir=D", "--rec_model_dir=R",
"--cls_model_dir=C", "--use_angle_cls=True", "--rec_char_dict_path=K", "--det_limit_side_len=960", ...].
With paddle 3.3.1, 2.10's create_predictor fails on a PIR model (inference.json) on CPU: "Not find predictor_id 0 and
pass_name memory_optimize_pass". For such folders this script turns that memory optimisation off (no effect on the
results) before building the TextSystem.
"""
import json
import os
import sys


def main(argv):
    extra, images = json.loads(argv[0]), argv[1:]
    import cv2
    from paddleocr.tools.infer import utility
    from paddleocr.tools.infer.predict_system import TextSystem

    args = utility.init_args().parse_args(["--use_gpu=False", *extra])
    dirs = [args.det_model_dir, args.rec_model_dir, args.cls_model_dir]
    if any(d and os.path.exists(os.path.join(d, "inference.json")) for d in dirs):
        from paddle import inference

        inference.Config.enable_memory_optim = lambda self, *a, **k: None
    system = TextSystem(args)
    calls = {}  # the last call's output of the classifier ("cls") and of the recognizer ("rec")

    def recording(name, stage):
        def run(crops):
            calls[name] = stage(crops)
            return calls[name]
        return run

    if args.use_angle_cls:
        system.text_classifier = recording("cls", system.text_classifier)
    system.text_recognizer = recording("rec", system.text_recognizer)
    out = []
    for f in images:
        calls.clear()
        boxes, res, _ = system(cv2.imread(f), cls=args.use_angle_cls)
        boxes, res = boxes or [], res or []
        read = calls["rec"][0] if "rec" in calls else []
        angles = calls["cls"][1] if "cls" in calls else [["0", 1.0]] * len(read)
        kept = [a for a, (_, s) in zip(angles, read) if s >= system.drop_score]  # TextSystem's own filter
        out.append({"boxes": [[[round(float(v), 2) for v in p] for p in b] for b in boxes],
                    "texts": [t for t, _ in res], "scores": [round(float(s), 5) for _, s in res],
                    "angles": [[str(a), round(float(s), 5)] for a, s in kept]})
    print(json.dumps({"results": out}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
