"""Eval-time cost, ours vs PaddleDetection's (paddledet 2.6.0), on the same images and the same weights, one run.

    python benchmarks/det_eval_vs_ppdet.py                        # PP-YOLOE-s, 80 classes, 320 px, 32 images, 3 repeats
    python benchmarks/det_eval_vs_ppdet.py --size tiny --images 4 --repeats 1 --px 160   # quick check

What is timed, per batch of preprocessed images (our DetCollate: square resize, x / 255), in one process with
--threads CPU threads, the two sides interleaved batch by batch, after one warm-up batch each:
- forward+NMS: ours = ``PPYOLOE`` forward + ``postprocess.postprocess_batch`` (numpy host NMS, what our eval and
  predict run); ppdet = its ``YOLOv3(CSPResNet, CustomCSPPAN, PPYOLOEHead)`` eval forward, which ends in its
  ``post_process`` (Paddle's C++ ``multiclass_nms3``);
- NMS alone: ``postprocess_batch`` vs ppdet's ``PPYOLOEHead.post_process`` on the same raw head outputs.
Weights: random (fan-in scaled by paddle's init), class biases drawn around -3 so that thousands of
(box, class) pairs pass the 0.01 score threshold (a crowded NMS, as early in training); our weights enter
ppdet's model under its names (``to_ppdet_state``). NMS settings: ppdet's PP-YOLOE ones (0.01, 1000, 300, 0.7).
The detections of both sides are compared (count, max |difference|) in the same run.
COCO scoring (pycocotools, the same library on both sides) is not timed. Nothing here asserts a timing.
Writes --out/report.json (raw per-batch seconds, settings, machine, load) and prints a summary.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NMS = {"score_threshold": 0.01, "nms_top_k": 1000, "keep_top_k": 300, "iou_threshold": 0.7}
MULTS = {"tiny": (0.125, 0.33), "s": (0.50, 0.33), "m": (0.75, 0.67), "l": (1.0, 1.0), "x": (1.25, 1.33)}


def build_both(size: str, num_classes: int, seed: int):
    import numpy as np
    import paddle
    from ppdet.modeling.architectures.yolo import YOLOv3
    from ppdet.modeling.backbones.cspresnet import CSPResNet
    from ppdet.modeling.heads.ppyoloe_head import PPYOLOEHead
    from ppdet.modeling.layers import MultiClassNMS
    from ppdet.modeling.necks.custom_pan import CustomCSPPAN

    from paddle_recipes.tasks.det_ppyoloe.model import build_ppyoloe
    from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import to_ppdet_state

    paddle.seed(seed)
    ours = build_ppyoloe(size, num_classes)
    rng = np.random.default_rng(seed)
    with paddle.no_grad():
        for conv in ours.head.pred_cls:
            conv.bias.set_value(rng.normal(-3.0, 1.0, conv.bias.shape).astype("float32"))
    w, d = MULTS[size]
    bb = CSPResNet(layers=[3, 6, 6, 3], channels=[64, 128, 256, 512, 1024], return_idx=[1, 2, 3],
                   use_large_stem=True, use_alpha=True, width_mult=w, depth_mult=d)
    neck = CustomCSPPAN(in_channels=[c.channels for c in bb.out_shape], out_channels=[768, 384, 192], stage_num=1,
                        block_num=3, act="swish", spp=True, width_mult=w, depth_mult=d)
    nms = MultiClassNMS(score_threshold=NMS["score_threshold"], nms_top_k=NMS["nms_top_k"],
                        keep_top_k=NMS["keep_top_k"], nms_threshold=NMS["iou_threshold"])
    head = PPYOLOEHead(in_channels=[c.channels for c in neck.out_shape], num_classes=num_classes,
                       fpn_strides=[32, 16, 8], grid_cell_scale=5.0, grid_cell_offset=0.5, nms=nms)
    theirs = YOLOv3(backbone=bb, neck=neck, yolo_head=head, post_process=None)
    theirs.set_state_dict({k: paddle.to_tensor(v) for k, v in to_ppdet_state(ours).items()})
    ours.eval()
    theirs.eval()
    return ours, theirs


def batches(n: int, px: int, batch: int, data_root: Path):
    import numpy as np

    from paddle_recipes.tasks.det_ppyoloe.coco import CocoDetDataset, DetCollate, load_coco
    from paddle_recipes.tasks.det_ppyoloe.normalize import NORMALIZE_PRESETS, collate_kwargs
    from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec, make_shapes_dataset

    paths = make_shapes_dataset(data_root, ShapesSpec(num_train=1, num_val=n))["val"]
    ds = CocoDetDataset(load_coco(**paths))
    collate = DetCollate([px], **collate_kwargs(NORMALIZE_PRESETS["ppyoloe_plus"]))
    for i in range(0, n, batch):
        b = collate([ds[j] for j in range(i, min(n, i + batch))])
        yield np.asarray(b["image"]), np.asarray(b["scale_factor"], np.float32)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="s", choices=sorted(MULTS))
    p.add_argument("--classes", type=int, default=80)
    p.add_argument("--px", type=int, default=320)
    p.add_argument("--images", type=int, default=32)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "cpu_det_eval_vs_ppdet"))
    p.add_argument("--data", default=str(REPO / "output" / "bench" / "det_eval_shapes"))
    a = p.parse_args(argv)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(a.threads)
    sys.path.insert(0, str(REPO))
    import numpy as np
    import paddle

    from paddle_recipes.tasks.det_ppyoloe.postprocess import postprocess_batch

    paddle.set_device("cpu")
    ours, theirs = build_both(a.size, a.classes, a.seed)
    data = list(batches(a.images, a.px, a.batch, Path(a.data)))
    t = {k: [] for k in ("ours_fwd_nms", "ppdet_fwd_nms", "ours_nms", "ppdet_nms")}
    diff, counts = 0.0, []

    def run_ours(img, sf):
        boxes, scores = ours(paddle.to_tensor(img))
        return postprocess_batch(boxes.numpy(), scores.numpy(), sf, **NMS)

    def run_ppdet(img, sf):
        out = theirs({"image": paddle.to_tensor(img), "scale_factor": paddle.to_tensor(sf),
                      "im_shape": paddle.to_tensor(np.tile([[a.px, a.px]], (len(img), 1)).astype("float32"))})
        return np.split(out["bbox"].numpy(), np.cumsum(out["bbox_num"].numpy())[:-1])

    load = [os.getloadavg()[0]]
    with paddle.no_grad():
        run_ours(*data[0]), run_ppdet(*data[0])  # warm-up
        for _ in range(a.repeats):
            for img, sf in data:
                s = time.perf_counter(); mine = run_ours(img, sf); t["ours_fwd_nms"].append(time.perf_counter() - s)
                s = time.perf_counter(); ref = run_ppdet(img, sf); t["ppdet_fwd_nms"].append(time.perf_counter() - s)
                counts += [(len(m), len(r)) for m, r in zip(mine, ref)]
                diff = max([diff] + [float(np.abs(m - r).max()) for m, r in zip(mine, ref) if m.shape == r.shape and len(m)])
                head_outs = theirs.yolo_head(theirs.neck(theirs.backbone({"image": paddle.to_tensor(img)})))
                boxes, scores = ours(paddle.to_tensor(img))
                b, sc = boxes.numpy(), scores.numpy()
                s = time.perf_counter(); postprocess_batch(b, sc, sf, **NMS); t["ours_nms"].append(time.perf_counter() - s)
                s = time.perf_counter(); theirs.yolo_head.post_process(head_outs, paddle.to_tensor(sf))
                t["ppdet_nms"].append(time.perf_counter() - s)
    load.append(os.getloadavg()[0])
    tot = {k: float(np.sum(v)) for k, v in t.items()}
    n_img = a.images * a.repeats
    report = {
        "settings": {**vars(a), "nms": NMS}, "paddle": paddle.__version__, "cpu": os.cpu_count(), "load_1min": load,
        "seconds_total": tot, "ms_per_image": {k: 1000 * v / n_img for k, v in tot.items()},
        "ratio_ours_over_ppdet": {"fwd_nms": tot["ours_fwd_nms"] / tot["ppdet_fwd_nms"],
                                  "nms": tot["ours_nms"] / tot["ppdet_nms"]},
        "detections_per_image_ours_ppdet": counts[:a.images], "same_counts": all(m == r for m, r in counts),
        "max_abs_diff_detections": diff, "per_batch_seconds": t}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("ms_per_image", "ratio_ours_over_ppdet", "same_counts",
                                             "max_abs_diff_detections", "load_1min")}))
    return report


if __name__ == "__main__":
    main()
