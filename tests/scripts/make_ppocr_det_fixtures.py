"""Record the PaddleOCR det fixtures in tests/fixtures/ppocr_det/ by running PaddleOCR's OWN code.

    python tests/scripts/make_ppocr_det_fixtures.py --ppocr-src /tmp/PaddleOCR [--only models|pieces] [--preset NAME]

Not run by the tests (they only read the JSON it writes). ``--ppocr-src`` is a PaddleOCR checkout
(release ~Dec 2025); use a scratch copy, PaddleOCR's import adds files next to its modules.

models: for each preset, the Architecture section of PaddleOCR's YAML, its state_dict manifest
    (names -> shapes, counts) and, in float64 with the deterministic weights of ``det_value`` on
    ``fixed_input`` (tests/ppocr_parity.py), eval (batch 1) and train (batch 2, batch statistics) outputs
    of the probability maps and of the binarize branch's pre-sigmoid logits, each kept as the rec fixtures
    keep theirs (``ppocr_parity.summarize`` over image rows: first 16 columns, sums of squares, max, argmax).
pieces: float64 inputs/outputs of PaddleOCR's pure numpy/python DB pieces (see ``pieces``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "fixtures" / "ppocr_det"
sys.path.insert(0, str(HERE.parent))  # the shared parity rules: tests/ppocr_parity.py

PRESET_YAMLS = {
    "PP-OCRv5_mobile_det": "configs/det/PP-OCRv5/PP-OCRv5_mobile_det.yml",
    "PP-OCRv4_mobile_det": "configs/det/PP-OCRv4/PP-OCRv4_mobile_det.yml",
    "PP-OCRv5_server_det": "configs/det/PP-OCRv5/PP-OCRv5_server_det.yml",
    "ch_det_res18_db_v2.0": "configs/det/ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml",
    "det_r50_vd_db": "configs/det/det_r50_vd_db.yml",
    "PP-OCRv3_server_det": "configs/det/PP-OCRv3/PP-OCRv3_server_det.yml",
    # PP-OCRv6 (newer than a ~Dec 2025 checkout: its YAMLs, necks and DBHead aux heads must be in --ppocr-src)
    "PP-OCRv6_tiny_det": "configs/det/PP-OCRv6/PP-OCRv6_tiny_det.yml",
    "PP-OCRv6_small_det": "configs/det/PP-OCRv6/PP-OCRv6_small_det.yml",
    "PP-OCRv6_medium_det": "configs/det/PP-OCRv6/PP-OCRv6_medium_det.yml",
}
EVAL_SHAPE = [1, 3, 64, 64]
TRAIN_SHAPE = [2, 3, 64, 64]


def run_det_model(model, x64, capture_name="head.binarize.conv3"):
    """Forward ``x64`` (cast to the model's dtype) through ``model``; returns (outputs, captured logits)."""
    import paddle
    x64 = x64.astype(str(model.parameters()[0].dtype).replace("paddle.", ""))
    captured = {}
    layer = dict(model.named_sublayers())[capture_name]
    hook = layer.register_forward_post_hook(lambda _l, _i, out: captured.__setitem__("logits", out.numpy()))
    with paddle.no_grad():
        out = model(paddle.to_tensor(x64))
    hook.remove()
    return {k: v.numpy() for k, v in out.items()}, captured["logits"]


def set_det_weights(model, dtype="float64"):
    """Cast ``model`` to ``dtype`` and give every tensor (BN statistics included) its ``det_value``."""
    import paddle
    from ppocr_parity import det_value
    model.to(dtype=dtype)
    sd = model.state_dict()
    model.set_state_dict({k: paddle.to_tensor(det_value(k, v.shape, dtype)) for k, v in sd.items()})


def det_outputs(model):
    """Our test and this script run the same recipe: eval (batch 1), then train (batch 2, batch statistics), on
    ``fixed_input``; the probability maps and the binarize branch's pre-sigmoid logits, [B, C, H, W] arrays, and in
    train mode the auxiliary heads' maps of PP-OCRv6's DBHead (``train_aux_maps_p4`` ...) when it has them."""
    from ppocr_parity import fixed_input
    outs = {}
    for mode, shape in (("eval", EVAL_SHAPE), ("train", TRAIN_SHAPE)):
        getattr(model, mode)()
        out, logits = run_det_model(model, fixed_input(shape))
        outs.update({f"{mode}_maps": out["maps"], f"{mode}_logits": logits})
        outs.update({f"{mode}_{k}": v for k, v in out.items() if k.startswith("aux_maps_")})
    return outs


def output_fixture(model):
    """The fixture: ``ppocr_parity.summarize`` of each of det_outputs (its rows: image rows), as for rec."""
    from ppocr_parity import summarize
    dtype = str(model.parameters()[0].dtype).replace("paddle.", "")
    rec = {"dtype": dtype, "eval_input_shape": EVAL_SHAPE, "train_input_shape": TRAIN_SHAPE}
    rec.update({k: summarize(v) for k, v in det_outputs(model).items()})
    return rec


def models(src: Path, only: str = ""):
    import paddle
    import yaml
    paddle.set_default_dtype("float64")
    from ppocr.modeling.architectures import build_model
    for preset, rel in PRESET_YAMLS.items():
        if only and preset != only:
            continue
        arch = yaml.safe_load((src / rel).read_text(encoding="utf-8"))["Architecture"]
        arch["Backbone"].pop("in_channels", None)  # PaddleOCR's BaseModel overwrites it (3) anyway
        model = build_model(dict(arch, Backbone=dict(arch["Backbone"]), Neck=dict(arch["Neck"]),
                                 Head=dict(arch["Head"])))
        model.to(dtype="float64")  # PaddleOCR's nn.BatchNorm layers ignore the default dtype
        sd = model.state_dict()
        manifest = {"preset": preset, "source": f"PaddleOCR {rel} built with PaddleOCR's code",
                    "architecture": arch, "num_tensors": len(sd),
                    "num_elements": int(sum(int(np.prod(v.shape)) for v in sd.values())),
                    "tensors": {k: list(v.shape) for k, v in sd.items()}}
        (OUT / f"{preset}.json").write_text(json.dumps(manifest, indent=0) + "\n", encoding="utf-8")
        set_det_weights(model)
        (OUT / f"{preset}.outputs.json").write_text(json.dumps(output_fixture(model)) + "\n", encoding="utf-8")
        print(preset, len(sd), "tensors")


# ------------------------------------------------------------------ pieces
# Inputs are rebuilt by the tests from these functions (numpy/cv2 only), outputs come from PaddleOCR.
def loss_inputs(seed=0, shape=(2, 32, 32)):
    """(maps [B, 3, H, W] in (0, 1), labels [None, threshold_map, threshold_mask, shrink_map, shrink_mask])."""
    rng = np.random.RandomState(seed)
    maps = rng.uniform(0.02, 0.98, (shape[0], 3) + shape[1:])
    shrink = (rng.uniform(size=shape) < 0.15).astype("float64")
    labels = [None, rng.uniform(0.3, 0.7, shape), (rng.uniform(size=shape) < 0.4).astype("float64"), shrink,
              (rng.uniform(size=shape) < 0.9).astype("float64")]
    return maps, labels


V6_LOSS = dict(main_loss_type="DiceFocalLoss", alpha=5, beta=10, focal_alpha=0.25, focal_gamma=2.5,
               aux_weight_p4=0.2, aux_weight_p3=0.3, aux_weight_p2=0.4)  # PP-OCRv6_{tiny,small,medium}_det.yml
LOSS_CASES = [  # (name, DBLoss kwargs, extra predictions: False | True (cbn_maps) | "aux" (aux_maps_p4/p3/p2))
    ("dice_ohem3", dict(balance_loss=True, main_loss_type="DiceLoss", alpha=5, beta=10, ohem_ratio=3), False),
    ("bce_ohem3", dict(balance_loss=True, main_loss_type="BCELoss", alpha=5, beta=10, ohem_ratio=3), False),
    ("bce_ohem1_cbn", dict(balance_loss=True, main_loss_type="BCELoss", alpha=1, beta=2, ohem_ratio=1), True),
    ("dice_unbalanced", dict(balance_loss=False, main_loss_type="DiceLoss", alpha=2, beta=3), False),
    ("v6_dicefocal_aux", V6_LOSS, "aux"),
    ("dicefocal_weights_cbn", dict(main_loss_type="DiceFocalLoss", alpha=2, beta=3, focal_alpha=0.6, focal_gamma=2.0,
                                   dice_weight=0.7, focal_weight=1.5), True),
    ("dice_ohem3_aux", dict(main_loss_type="DiceLoss", aux_weight_p4=0.5, aux_weight_p2=0.1), "aux"),
]


def loss_predicts(maps, extra, to_tensor):
    """The head's train output for a loss case: ``maps`` plus the extra predictions it names (see LOSS_CASES)."""
    pred = {"maps": to_tensor(maps)}
    if extra is True:
        pred.update(distance_maps=pred["maps"][:, :1], cbn_maps=pred["maps"][:, 2:3])
    elif extra == "aux":
        for i, level in enumerate(("p4", "p3", "p2")):
            pred[f"aux_maps_{level}"] = to_tensor(np.roll(maps, i + 1, axis=1) ** (1 + 0.5 * i))
    return pred


def map_polygons():
    """(h, w, polys, ignore_tags): quads, rotated, curved, tiny, ###, partly outside, counter-clockwise."""
    polys = [
        [[4, 4], [60, 4], [60, 20], [4, 20]],
        [[70, 30], [118, 22], [121, 40], [73, 48]],
        [[10, 40], [25, 34], [40, 32], [55, 34], [55, 46], [40, 44], [25, 46], [10, 52]],
        [[90, 4], [95, 4], [95, 9], [90, 9]],
        [[5, 60], [40, 60], [40, 75], [5, 75]],
        [[100, 55], [140, 55], [140, 70], [100, 70]],
        [[60, 60], [60, 76], [90, 76], [90, 60]],
    ]
    ignore = [False, False, False, False, True, False, False]
    return 80, 128, [np.array(p, dtype="float32") for p in polys], ignore


def map_fingerprint(a):
    a = np.asarray(a, dtype="float64")
    return {"rowsum": a.sum(1).tolist(), "colsum": a.sum(0).tolist(), "rowsumsq": (a ** 2).sum(1).tolist()}


def crop_inputs():
    rng = np.random.RandomState(3)
    img = rng.randint(0, 256, (120, 200, 3)).astype("uint8")
    polys = [np.array(p, dtype="float32") for p in (
        [[10, 10], [60, 10], [60, 30], [10, 30]], [[80, 50], [150, 45], [152, 65], [82, 70]],
        [[20, 90], [70, 90], [70, 110], [20, 110]], [[160, 95], [190, 95], [190, 112], [160, 112]])]
    return img, polys, [False, False, True, False], ["a", "b", "###", "d"]


CROP_CASES = [(seed, dict(size=[96, 64], max_tries=10, min_crop_side_ratio=0.1, keep_ratio=keep))
              for seed in range(6) for keep in (True, False)]
RESIZE_CASES = [  # (h, w, kwargs)
    (30, 20, {}), (500, 300, {}), (500, 300, dict(limit_side_len=960, limit_type="max")),
    (1500, 700, dict(limit_side_len=960, limit_type="max")), (47, 333, dict(limit_side_len=64, limit_type="min")),
    (400, 250, dict(limit_side_len=320, limit_type="resize_long")), (100, 77, dict(image_shape=[64, 96])),
    (100, 77, dict(image_shape=[64, 96], keep_ratio=True)), (10, 12, dict(limit_side_len=32, limit_type="max")),
]


def resize_image(h, w):
    return (np.arange(h * w * 3).reshape(h, w, 3) % 251).astype("uint8")


def postprocess_map(seed=5, h=96, w=128):
    """A float32 probability map with rotated boxes, a curved band, touching boxes and noise."""
    rng = np.random.RandomState(seed)
    import cv2
    m = np.zeros((h, w), dtype="float32")
    cv2.fillPoly(m, [np.array([[8, 8], [60, 6], [61, 20], [9, 22]], "int32")], 0.9)
    cv2.fillPoly(m, [np.array([[70, 30], [120, 40], [116, 54], [66, 44]], "int32")], 0.8)
    cv2.fillPoly(m, [np.array([[10, 60], [30, 52], [50, 50], [70, 52], [70, 60], [50, 58], [30, 60], [10, 70]],
                              "int32")], 0.75)
    cv2.fillPoly(m, [np.array([[90, 70], [96, 70], [96, 73], [90, 73]], "int32")], 0.95)  # too thin
    cv2.fillPoly(m, [np.array([[80, 80], [120, 80], [120, 92], [80, 92]], "int32")], 0.5)  # weak
    m = np.clip(m + rng.uniform(0, 0.2, m.shape).astype("float32"), 0, 1)
    return m[None, None]


POST_CASES = [
    ("quad_fast", dict(thresh=0.3, box_thresh=0.6, max_candidates=1000, unclip_ratio=1.5)),
    ("quad_slow", dict(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5, score_mode="slow")),
    ("poly", dict(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5, box_type="poly")),
    ("quad_dilation_lowbox", dict(thresh=0.35, box_thresh=0.5, unclip_ratio=2.0, use_dilation=True)),
    ("quad_max2", dict(thresh=0.3, box_thresh=0.3, max_candidates=2, unclip_ratio=1.5)),
]
POST_SHAPE = [[192, 256, 0.5, 0.5]]


def metric_cases():
    """Images of (gt polys, gt ignore, det polys): exact, shifted, ###-covered, invalid (bow-tie), empty."""
    sq = lambda x, y, w, h: [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]  # noqa: E731
    return [
        ([sq(0, 0, 10, 10), sq(20, 0, 10, 10)], [False, False], [sq(1, 1, 10, 10), sq(50, 50, 5, 5)]),
        ([sq(0, 0, 10, 10), sq(20, 0, 10, 10)], [False, True], [sq(0, 0, 10, 10), sq(21, 1, 8, 8), sq(5, 5, 10, 10)]),
        ([sq(0, 0, 10, 4)], [False], [[[0, 0], [10, 4], [10, 0], [0, 4]], sq(3, 0, 10, 4)]),
        ([], [], [sq(0, 0, 3, 3)]),
        ([sq(0, 0, 10, 10)], [True], []),
        ([sq(0, 0, 10, 10), sq(0, 0, 10, 10)], [False, False], [sq(0, 0, 10, 10)]),
    ]


def _load(src: Path, rel: str):
    """Import one PaddleOCR file by path (ppocr.data's package __init__ needs scikit-image)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("ppocr_" + Path(rel).stem, src / rel)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pieces(src: Path):
    import paddle
    paddle.set_default_dtype("float64")
    MakeBorderMap = _load(src, "ppocr/data/imaug/make_border_map.py").MakeBorderMap
    MakeShrinkMap = _load(src, "ppocr/data/imaug/make_shrink_map.py").MakeShrinkMap
    DetResizeForTest = _load(src, "ppocr/data/imaug/operators.py").DetResizeForTest
    crop_module = _load(src, "ppocr/data/imaug/random_crop_data.py")
    # its int(np.random.choice(axis, size=1)) is a TypeError under numpy >= 2: give that module an int()
    # that takes one-element arrays, as numpy 1.x did (same value, same random stream)
    crop_module.int = lambda v: __builtins__["int"](np.asarray(v).reshape(-1)[0]) if isinstance(
        __builtins__, dict) else __builtins__.int(np.asarray(v).reshape(-1)[0])
    EastRandomCropData = crop_module.EastRandomCropData
    DetectionIoUEvaluator = _load(src, "ppocr/metrics/eval_det_iou.py").DetectionIoUEvaluator
    DBPostProcess = _load(src, "ppocr/postprocess/db_postprocess.py").DBPostProcess
    from ppocr.losses.det_db_loss import DBLoss
    out = {}
    maps, labels = loss_inputs()
    out["loss"] = {}
    for name, kw, extra in LOSS_CASES:
        pred = loss_predicts(maps, extra, paddle.to_tensor)
        got = DBLoss(**kw)(pred, [None] + [paddle.to_tensor(x) for x in labels[1:]])
        out["loss"][name] = {k: float(v.numpy().reshape(-1)[0]) for k, v in got.items()}
    h, w, polys, ignore = map_polygons()
    img = np.zeros((h, w, 3), "uint8")
    data = MakeBorderMap(shrink_ratio=0.4, thresh_min=0.3, thresh_max=0.7)(
        {"image": img, "polys": [p.copy() for p in polys], "ignore_tags": list(ignore)})
    out["border_map"] = {"threshold_map": map_fingerprint(data["threshold_map"]),
                         "threshold_mask": map_fingerprint(data["threshold_mask"])}
    data = MakeShrinkMap(shrink_ratio=0.4, min_text_size=8)(
        {"image": img, "polys": [p.copy() for p in polys], "ignore_tags": list(ignore)})
    out["shrink_map"] = {"shrink_map": map_fingerprint(data["shrink_map"]),
                         "shrink_mask": map_fingerprint(data["shrink_mask"]), "ignore_tags": list(map(bool, data["ignore_tags"]))}
    img, cpolys, cignore, ctexts = crop_inputs()
    out["crop"] = []
    for seed, kw in CROP_CASES:
        np.random.seed(seed)
        d = EastRandomCropData(**kw)({"image": img.copy(), "polys": np.array(cpolys), "ignore_tags": list(cignore),
                                      "texts": list(ctexts)})
        out["crop"].append({"image_sum": int(d["image"].astype("int64").sum()), "image_shape": list(d["image"].shape),
                            "image_rowsum": d["image"].astype("int64").sum((1, 2)).tolist(),
                            "polys": np.asarray(d["polys"]).tolist(), "ignore_tags": list(d["ignore_tags"]),
                            "texts": list(d["texts"])})
    out["resize"] = []
    for rh, rw, kw in RESIZE_CASES:
        d = DetResizeForTest(**kw)({"image": resize_image(rh, rw)})
        out["resize"].append({"image_shape": list(d["image"].shape), "shape": d["shape"].tolist(),
                              "image_sum": int(d["image"].astype("int64").sum())})
    out["postprocess"] = {}
    pmap = postprocess_map()
    for name, kw in POST_CASES:
        post = DBPostProcess(**kw)
        pts = [np.asarray(b).tolist() for b in post({"maps": pmap}, POST_SHAPE)[0]["points"]]
        # its __call__ returns only the points: the scores come from the same method it calls
        mask = pmap[0, 0] > post.thresh
        if post.dilation_kernel is not None:
            import cv2
            mask = cv2.dilate(mask.astype(np.uint8), post.dilation_kernel)
        find = post.polygons_from_bitmap if post.box_type == "poly" else post.boxes_from_bitmap
        _, scores = find(pmap[0, 0], mask, POST_SHAPE[0][1], POST_SHAPE[0][0])
        out["postprocess"][name] = {"points": pts, "scores": [float(x) for x in scores]}
    ev = DetectionIoUEvaluator()
    per = [ev.evaluate_image([{"points": g, "text": "", "ignore": i} for g, i in zip(gts, ign)],
                             [{"points": d, "text": ""} for d in dets]) for gts, ign, dets in metric_cases()]
    out["metric"] = {"per_image": per, "combined": ev.combine_results(per)}
    (OUT / "pieces.json").write_text(json.dumps(out) + "\n", encoding="utf-8")
    print("pieces:", {k: len(v) for k, v in out.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True, type=Path, help="PaddleOCR checkout (scratch copy)")
    ap.add_argument("--only", choices=["models", "pieces"], default=None)
    ap.add_argument("--preset", default="", help="with models: only this preset (default: all)")
    args = ap.parse_args()
    src = args.ppocr_src.resolve()
    sys.path.insert(0, str(src))
    OUT.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "models"):
        models(src, args.preset)
    if args.only in (None, "pieces"):
        pieces(src)


if __name__ == "__main__":
    main()
