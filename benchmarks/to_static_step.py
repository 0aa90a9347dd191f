"""s/step of one training step with an exact-math switch off and on, interleaved in one process (and a by-op profile).

The switch (`--switch`, default to_static; a comma list turns several on together): to_static = Global.to_static
(paddle.jit.to_static training), depthwise_kernel = Global.cpu_depthwise_kernel (our compiled depthwise conv),
affine_kernel = Global.cpu_affine_kernel (our LearnableAffineBlock and conv bias ops). `--base` switches are on in
both modes (the effect of --switch on top of them: `--base depthwise_kernel --switch affine_kernel`).

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/to_static_step.py --model rec --batch 192 --repeats 3
    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/to_static_step.py --model det --batch 8 --repeats 3
    ... --profile 15        # also: the top 15 ops of one step, each mode (paddle.profiler, CPU time)

The models and shapes are the YAMLs' own: rec = PP-OCRv4_mobile_rec.yml (PPLCNetV3 0.95 + MultiHead CTC/NRTR,
MultiLoss, 3x48x320 = its d2s_train_image_shape, 6625 CTC classes = ppocr_keys_v1 + space + blank, labels of up
to 25); det = PP-OCRv4_mobile_det.yml (PPLCNetV3 0.75 det + RSEFPN 96 + DBHead k=50, DBLoss, 3x640x640 crops).
Synthetic batch (random image, random labels / text-box maps), Adam + L2 as the YAMLs (constant LR); the loader
is not timed. Two models from the same seed, one per mode; each repeat times `--steps` steps of each, off then on.
Prints one JSON line: wall s/step and process CPU s/step per repeat and mode, medians, ratios off/on, threads, load average before/after each repeat,
max relative loss difference of the two curves (dropout draws differ between modes: see docs/cards/to_static.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REC_ARCH = {"Backbone": {"name": "PPLCNetV3", "scale": 0.95},
            "Head": {"name": "MultiHead", "head_list": [
                {"CTCHead": {"Neck": {"name": "svtr", "dims": 120, "depth": 2, "hidden_dims": 120,
                                      "kernel_size": [1, 3], "use_guide": True}, "Head": {"fc_decay": 1e-05}}},
                {"NRTRHead": {"nrtr_dim": 384, "max_text_length": 25}}]}}
REC_CLASSES, MAX_LEN = 6625, 25


def rec_case(batch: int, rng, no_dropout: bool):
    """(build_model, batch tensors, step(model, tensors) -> loss) of PP-OCRv4 mobile rec."""
    import numpy as np
    import paddle

    from paddle_recipes.tasks.ocr_rec.ppocr_losses import MultiLoss, nrtr_labels
    from paddle_recipes.tasks.ocr_rec.ppocr_models import build_ppocr_rec_model

    arch = json.loads(json.dumps(REC_ARCH))
    lengths = rng.integers(4, MAX_LEN - 1, batch)
    label = np.zeros([batch, MAX_LEN], np.int32)
    for i, n in enumerate(lengths):
        label[i, :n] = rng.integers(1, REC_CLASSES, n)
    t = {"image": paddle.to_tensor(rng.standard_normal([batch, 3, 48, 320]).astype("float32")),
         "label": paddle.to_tensor(label), "length": paddle.to_tensor(lengths.astype("int64")),
         "label_gtc": paddle.to_tensor(nrtr_labels(label, lengths, MAX_LEN))}
    loss_fn = MultiLoss()

    def step(model, t):
        out = model(t["image"], [t["label"], t["label_gtc"], t["length"]])
        return loss_fn(out, t["label"], t["length"], t["label_gtc"])["loss"]
    def build():
        model = build_ppocr_rec_model(arch, REC_CLASSES)
        for layer in model.sublayers() if no_dropout else ():  # SVTR neck, NRTR decoder
            if isinstance(layer, paddle.nn.Dropout):
                layer.p = 0.0
        return model
    return build, t, step


def det_case(batch: int, rng, no_dropout: bool, size: int = 640):
    """(build_model, batch tensors, step) of PP-OCRv4 mobile det (no dropout in it)."""
    import numpy as np
    import paddle

    from paddle_recipes.tasks.ocr_det.losses import DBLoss
    from paddle_recipes.tasks.ocr_det.models import PPOCR_MOBILE_DET_ARCH, build_ppocr_det_model

    shrink = np.zeros([batch, size, size], np.float32)
    for i in range(batch):  # a few text-line boxes per crop
        for _ in range(12):
            y, x = rng.integers(0, size - 40), rng.integers(0, size - 200)
            shrink[i, y:y + rng.integers(8, 40), x:x + rng.integers(40, 200)] = 1.0
    maps = [rng.uniform(0.3, 0.7, shrink.shape).astype("float32") * (shrink > 0), np.ones_like(shrink), shrink,
            np.ones_like(shrink)]
    t = {"image": paddle.to_tensor(rng.standard_normal([batch, 3, size, size]).astype("float32")),
         "maps": [paddle.to_tensor(m) for m in maps]}
    loss_fn = DBLoss(balance_loss=True, main_loss_type="DiceLoss", alpha=5, beta=10, ohem_ratio=3)

    def step(model, t):
        return loss_fn(model(t["image"]), [None, *t["maps"]])["loss"]
    return (lambda: build_ppocr_det_model(PPOCR_MOBILE_DET_ARCH)), t, step


def profile_top(fn, top: int) -> list:
    """[(op name, CPU ms, calls)] of the `top` ops by total CPU time of one call of fn (paddle.profiler)."""
    import paddle.profiler as profiler

    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], on_trace_ready=lambda _: None)  # no trace files
    prof.start()
    fn()
    prof.step()
    prof.stop()
    from paddle.profiler.profiler_statistic import StatisticData
    stats = StatisticData(prof.profiler_result.get_data(), prof.profiler_result.get_extra_info())
    items = stats.event_summary.items  # op name -> EventSummary.OperatorItem (dygraph ops and static program ops)
    rows = sorted(((n, it.cpu_time / 1e6, it.call) for n, it in items.items()), key=lambda r: -r[1])
    return [(n, round(ms, 2), c) for n, ms, c in rows[:top]]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("rec", "det"), required=True)
    p.add_argument("--batch", type=int, default=None, help="default: the YAML's (rec 192, det 8)")
    p.add_argument("--det-size", type=int, default=640, help="det crop side in pixels (the YAML's EastRandomCropData: 640)")
    p.add_argument("--steps", type=int, default=2, help="timed steps per mode per repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--profile", type=int, default=0, help="list the top N ops of one step per mode (0 = off)")
    p.add_argument("--no-dropout", action="store_true", help="rec: every Dropout p = 0 (so the two loss curves can match)")
    p.add_argument("--switch", default="to_static",
                   help="what the 'on' mode turns on: to_static, depthwise_kernel, affine_kernel, comma-separated")
    p.add_argument("--base", default="", help="switches on in both modes (comma-separated, as --switch)")
    a = p.parse_args(argv)
    import numpy as np
    import paddle

    from paddle_recipes.kernels.affine import use_affine_kernel
    from paddle_recipes.kernels.depthwise import use_depthwise_kernel
    from paddle_recipes.train.to_static import apply_to_static

    kernels = {"depthwise_kernel": use_depthwise_kernel, "affine_kernel": use_affine_kernel}  # in this order
    switches = [w.strip() for w in a.switch.split(",") if w.strip()]
    base = [w.strip() for w in a.base.split(",") if w.strip()]
    unknown = sorted(set(switches + base) - {"to_static", *kernels})
    if unknown or not switches or set(switches) & set(base):
        p.error(f"--switch {a.switch!r} --base {a.base!r}: use to_static, {', '.join(kernels)}; none in both")
    batch = a.batch or {"rec": 192, "det": 8}[a.model]
    rng = np.random.default_rng(0)
    build, t, step = (rec_case(batch, rng, a.no_dropout) if a.model == "rec" else
                      det_case(batch, rng, a.no_dropout, a.det_size))
    runs, switched_layers = {}, {}
    for mode in ("off", "on"):
        paddle.seed(0)
        model = build()
        opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters(),
                                    weight_decay=paddle.regularizer.L2Decay(3e-5 if a.model == "rec" else 5e-5))
        on = set(base) | (set(switches) if mode == "on" else set())
        for name, use in kernels.items():
            if name in on:
                switched_layers[f"{mode}:{name}"] = use(model)
        if "to_static" in on:
            apply_to_static(model)
        model.train()
        runs[mode] = {"model": model, "opt": opt, "losses": [], "times": [], "cpu": []}

    def one(mode):
        r = runs[mode]
        loss = step(r["model"], t)
        loss.backward()
        r["opt"].step()
        r["opt"].clear_grad()
        r["losses"].append(float(loss))

    t0 = time.time()
    for mode in ("off", "on"):  # warm-up step: the static program is traced here (timed apart)
        s = time.time()
        one(mode)
        runs[mode]["first_step_s"] = round(time.time() - s, 2)
    loads = []
    for _ in range(a.repeats):
        before = os.getloadavg()[0]
        for mode in ("off", "on"):
            s, c = time.perf_counter(), time.process_time()
            for _ in range(a.steps):
                one(mode)
            runs[mode]["times"].append((time.perf_counter() - s) / a.steps)
            runs[mode]["cpu"].append((time.process_time() - c) / a.steps)
        loads.append([round(before, 2), round(os.getloadavg()[0], 2)])
    off, on = (statistics.median(runs[m]["times"]) for m in ("off", "on"))
    la, lb = np.array(runs["off"]["losses"]), np.array(runs["on"]["losses"])
    res = {"model": a.model, "switch": switches, "base": base, "switched_layers": switched_layers, "batch": batch,
           "steps_per_repeat": a.steps, "omp_threads": os.environ.get(
        "OMP_NUM_THREADS"), "cpus": sorted(os.sched_getaffinity(0)), "no_dropout": a.no_dropout,
        "s_per_step": {m: [round(x, 3) for x in runs[m]["times"]] for m in runs},
        "median_off": round(off, 3), "median_on": round(on, 3), "ratio_off_over_on": round(off / on, 3),
        "cpu_s_per_step": {m: [round(x, 3) for x in runs[m]["cpu"]] for m in runs},
        "cpu_ratio_off_over_on": round(statistics.median(runs["off"]["cpu"]) / statistics.median(runs["on"]["cpu"]), 3),
        "threads": len(os.listdir("/proc/self/task")),
        "first_step_s": {m: runs[m]["first_step_s"] for m in runs}, "load1_before_after": loads,
        "max_rel_loss_diff": float(np.max(np.abs(la - lb) / np.abs(la))), "wall_s": round(time.time() - t0, 1)}
    if a.profile:
        res["top_ops_ms"] = {m: profile_top(lambda m=m: one(m), a.profile) for m in ("off", "on")}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
