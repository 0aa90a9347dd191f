"""Throughput worker: one model, one mode, in a fresh process (the runner starts it).

    python benchmarks/harness/worker.py --model resnet50 --mode train [--amp] [--workers 2] --steps 6 --warmup 2 --out r.json
    python benchmarks/harness/worker.py --model resnet50 --mode infer --out r.json

train: the project's Trainer on synthetic samples made in ``__getitem__`` (so DataLoader workers have
real work: random crop/flip/normalise for images, box rendering for detection); writes the Trainer
``history`` (one row per optimizer step, StepTimer figures) in the same format as the OCR recipe's
summary.json, so one parser reads both.
infer: eval-mode latency of the model vs ``paddle_recipes.export.fuse_conv_bn(model)`` (conv-BN folded),
measured alternately in the same process, plus the numerical difference of the outputs. BN running
statistics and affine parameters are randomized first, so the fold is not a near-identity.
Models: resnet50 (paddle.vision, random init), ernie_tiny (paddlenlp ErnieModel, small config, random
init), ppyoloe_tiny (paddle_recipes.tasks.det_ppyoloe). Sizes are reduced for CPU; all are recorded.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import paddle  # noqa: E402

from paddle_recipes.train.accumulate import GradAccumulator  # noqa: E402
from paddle_recipes.train.amp import Amp, AmpConfig  # noqa: E402
from paddle_recipes.data import LoaderConfig, build_loader  # noqa: E402
from paddle_recipes.data.reproducible import build_batch_sampler  # noqa: E402
from paddle_recipes.runtime.distributed import setup, setup_logging  # noqa: E402
from paddle_recipes.train.trainer import Trainer, TrainerOptions  # noqa: E402

logger = logging.getLogger("bench.worker")

# Per model: CPU defaults (batch, input size); GPU runs may pass --batch / --size.
DEFAULTS = {"resnet50": {"batch": 8, "size": 64}, "ernie_tiny": {"batch": 16, "size": 64},
            "ppyoloe_tiny": {"batch": 4, "size": 256}}


# ----------------------------------------------------------------------------- datasets
class ImageNetLike(paddle.io.Dataset):
    """Random uint8 images (side size*1.15) -> random crop ``size``, flip, normalise; 1000 classes."""

    def __init__(self, n: int, size: int):
        self.n, self.size = n, size
        self.mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
        self.std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        big = int(self.size * 1.15)
        img = rng.integers(0, 256, (big, big, 3), dtype=np.uint8)
        y, x = rng.integers(0, big - self.size + 1, 2)
        img = img[y:y + self.size, x:x + self.size]
        if rng.random() < 0.5:
            img = img[:, ::-1]
        chw = (img.transpose(2, 0, 1).astype(np.float32) / 255.0 - self.mean) / self.std
        return chw, np.int64(rng.integers(0, 1000))


class TokenCls(paddle.io.Dataset):
    """Random token ids of length ``size`` (vocab 3000) with a binary label."""

    def __init__(self, n: int, size: int, vocab: int = 3000):
        self.n, self.size, self.vocab = n, size, vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        return rng.integers(1, self.vocab, self.size).astype(np.int64), np.int64(rng.integers(0, 2))


class Shapes(paddle.io.Dataset):
    """Synthetic shapes rendered on the fly by paddle_recipes.tasks.det_ppyoloe.synth (the expensive part)."""

    def __init__(self, n: int, size: int):
        from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec

        self.n, self.spec = n, ShapesSpec(image_size=size)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        from paddle_recipes.tasks.det_ppyoloe.synth import render_image

        img, anns = render_image(np.random.default_rng(i), self.spec)
        boxes = np.array([[x, y, x + w, y + h] for _, (x, y, w, h) in anns], np.float32).reshape(-1, 4)
        classes = np.array([c - 1 for c, _ in anns], np.int64)
        return {"image": img, "gt_bbox": boxes, "gt_class": classes, "im_id": i, "orig_size": img.shape[:2]}


# ----------------------------------------------------------------------------- models
class ErnieCls(paddle.nn.Layer):
    def __init__(self, encoder, hidden: int):
        super().__init__()
        self.encoder, self.fc = encoder, paddle.nn.Linear(hidden, 2)

    def forward(self, ids):
        _, pooled = self.encoder(ids)
        return self.fc(pooled)


def resnet_pairs(model) -> list:
    """(conv, bn) pairs of paddle.vision ResNet: forward applies bnK(convK(x)) directly."""
    pairs = []
    for name, layer in model.named_sublayers(include_self=True):
        for k in ("1", "2", "3"):
            if hasattr(layer, "conv" + k) and hasattr(layer, "bn" + k):
                dot = name + "." if name else ""
                pairs.append((f"{dot}conv{k}", f"{dot}bn{k}"))
    return pairs


def build(model_name: str, size: int, n: int):
    """-> (model, dataset, collate_fn or None, train_step, infer_input, fuse_pairs, description)."""
    if model_name == "resnet50":
        from paddle.vision.models import resnet50

        model = resnet50(num_classes=1000)
        ce = paddle.nn.CrossEntropyLoss()

        def step(m, batch):
            return {"loss": ce(m(batch[0]), batch[1])}

        desc = f"paddle.vision resnet50 (25.6M params, random init), input 3x{size}x{size}"
        return model, ImageNetLike(n, size), None, step, lambda b: paddle.randn([b, 3, size, size]), \
            resnet_pairs(model), desc
    if model_name == "ernie_tiny":
        from paddle_recipes.tasks.ernie_multitask.multitask import build_ernie

        hidden = 128
        model = ErnieCls(build_ernie(vocab_size=3000, hidden_size=hidden, num_layers=4, num_heads=4,
                                     max_len=size, dropout=0.1), hidden)
        ce = paddle.nn.CrossEntropyLoss()

        def step(m, batch):
            return {"loss": ce(m(batch[0]), batch[1])}

        desc = f"paddlenlp ErnieModel (4 layers, hidden {hidden}, 4 heads, random init) + cls head, seq len {size}"
        return model, TokenCls(n, size), None, step, \
            lambda b: paddle.randint(1, 3000, [b, size], dtype="int64"), [], desc
    if model_name == "ppyoloe_tiny":
        from paddle_recipes.tasks.det_ppyoloe.coco import DetCollate
        from paddle_recipes.tasks.det_ppyoloe.model import build_ppyoloe

        model = build_ppyoloe("tiny", num_classes=3)

        def step(m, batch):
            losses = m(batch["image"], batch["gt_class"], batch["gt_bbox"], batch["pad_gt_mask"])
            return {"loss": losses["loss"]}

        desc = f"paddle_recipes.tasks.det_ppyoloe PP-YOLOE tiny (width 0.125, depth 0.33, random init), input 3x{size}x{size}"
        return model, Shapes(n, size), DetCollate(sizes=(size,)), step, \
            lambda b: paddle.randn([b, 3, size, size]), None, desc
    raise ValueError(f"unknown model {model_name!r}; choose one of {sorted(DEFAULTS)}")


# ----------------------------------------------------------------------------- modes
def run_train(args, info) -> dict:
    n = (args.warmup + args.steps) * args.batch * 2
    model, ds, collate, step, _, _, desc = build(args.model, args.size, n)
    optimizer = paddle.optimizer.Momentum(learning_rate=0.01, parameters=model.parameters())
    amp = Amp(AmpConfig(enable=args.amp, level="O1", dtype="float16"))
    model, optimizer = amp.prepare(model, optimizer)
    sampler = build_batch_sampler(ds, args.batch, info, shuffle=True, drop_last=True)
    lc = LoaderConfig(num_workers=args.workers, persistent_workers=args.workers > 0,
                      use_shared_memory=args.workers > 0, use_buffer_reader=args.workers > 0)
    loader = build_loader(ds, sampler, lc, collate_fn=collate)
    size_fn = (lambda b: int(b["image"].shape[0])) if isinstance(ds, Shapes) else (lambda b: int(b[0].shape[0]))
    trainer = Trainer(model, optimizer, step, loader, amp=amp, accumulator=GradAccumulator(1), dist_info=info,
                      batch_size_fn=size_fn, options=TrainerOptions(epochs=1000, max_steps=args.warmup + args.steps,
                                                                    log_every=1, save_every_epochs=0, eval_every_epochs=0))
    t0 = time.time()
    trainer.fit()
    return {"history": trainer.history, "amp": amp.describe(), "amp_in_effect": amp.in_effect,
            "world_size": info.world_size, "model": desc, "batch": args.batch, "workers": args.workers,
            "params": int(sum(int(np.prod(p.shape)) for p in model.parameters())), "train_time_s": time.time() - t0}


def randomize_bn(model, seed: int = 0) -> int:
    """Give every BatchNorm non-trivial running stats and affine params (as after training)."""
    from paddle.nn.layer.norm import _BatchNormBase

    rng = np.random.default_rng(seed)
    n = 0
    for layer in model.sublayers():
        if isinstance(layer, _BatchNormBase):
            c = layer._mean.shape[0]
            layer._mean.set_value(rng.normal(0, 0.1, c).astype("float32"))
            layer._variance.set_value(rng.uniform(0.5, 2.0, c).astype("float32"))
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.normal(0, 0.1, c).astype("float32"))
            n += 1
    return n


def _flat(out) -> list[np.ndarray]:
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _flat(o)]
    if isinstance(out, dict):
        return [a for k in sorted(out) for a in _flat(out[k])]
    return [out.numpy()]


# PP-YOLOE's prediction convs are zero-initialised (outputs independent of the input at random init),
# so its parity is checked on the neck features that feed the head.
PARITY_FN = {"ppyoloe_tiny": lambda m, x: m.neck(m.backbone(x))}


def run_infer(args, info) -> dict:
    from paddle_recipes.export import find_conv_bn_pairs, fuse_conv_bn, measure_latency

    model, _, _, _, make_input, pairs, desc = build(args.model, args.size, 1)
    n_bn = randomize_bn(model)
    model.eval()
    x = make_input(args.batch)
    found = find_conv_bn_pairs(model, pairs or None)
    fused = fuse_conv_bn(model, pairs or None) if found else None
    res = {"model": desc, "batch": args.batch, "conv_bn_pairs": len(found), "batchnorms": n_bn, "rounds": []}
    # parity on raw network outputs (detection: see PARITY_FN)
    raw = PARITY_FN.get(args.model, lambda m, t: m(t))
    with paddle.no_grad():
        ref = _flat(model(x))
        if fused is not None:
            a, b = _flat(raw(model, x)), _flat(raw(fused, x))
            diffs = [float(np.abs(u - v).max()) for u, v in zip(a, b)]
            scale = max(float(np.abs(u).max()) for u in a)
            res["parity"] = {"max_abs_diff": max(diffs), "max_abs_ref": scale,
                             "max_rel_diff": max(diffs) / max(scale, 1e-12), "outputs": len(a),
                             "compared": "neck features" if args.model in PARITY_FN else "outputs"}
    predictor = None
    if args.inference:
        predictor = _inference_predictor(model, x, args, res, ref)
    iters = max(2, args.steps)
    for r in range(args.rounds):  # alternate, so a load change hits every variant alike
        row = {"unfused": measure_latency(model, x, warmup=args.warmup, iters=iters)}
        if fused is not None:
            row["fused"] = measure_latency(fused, x, warmup=args.warmup, iters=iters)
        if predictor is not None:
            from paddle_recipes.export import predict

            xn = x.numpy()
            row["paddle_inference"] = measure_latency(lambda: predict(predictor, [xn]), warmup=args.warmup,
                                                      iters=iters)
        res["rounds"].append(row)
        print(f"global_step: {r + 1}", flush=True)
    for k in ("unfused", "fused", "paddle_inference"):
        vals = [rr[k]["median_ms"] for rr in res["rounds"] if k in rr]
        if vals:
            res[k] = {"median_ms": float(np.median(vals)), "ips": args.batch / (float(np.median(vals)) / 1000.0)}
    if "fused" in res:
        res["fused_speedup"] = res["unfused"]["median_ms"] / res["fused"]["median_ms"]
    if "paddle_inference" in res:
        res["inference_speedup"] = res["unfused"]["median_ms"] / res["paddle_inference"]["median_ms"]
    return res


def _inference_predictor(model, x, args, res: dict, ref: list):
    """Export the unfused eval model and load it in Paddle Inference, whose IR passes fuse conv+BN(+act)
    on their own; records parity with dygraph. Failures are recorded, not raised."""
    import tempfile

    from paddle.static import InputSpec

    from paddle_recipes.export import create_predictor, export_model, predict

    try:
        # the predictor holds the program and weights once created: the exported files are removed right away
        with tempfile.TemporaryDirectory(prefix="bench_infer_") as tmp:
            spec = [InputSpec([None] + list(x.shape[1:]), str(x.dtype).replace("paddle.", ""), "x")]
            exp = export_model(model, spec, str(Path(tmp) / "model"))
            device = "gpu" if "gpu" in paddle.device.get_device() else "cpu"
            pred = create_predictor(exp.prefix, device=device, threads=args.threads)
            try:
                got = predict(pred, [x.numpy()])
            except Exception as e:  # noqa: BLE001 - some oneDNN kernels reject PIR attributes: retry without
                first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
                res["inference_note"] = f"oneDNN disabled after: {type(e).__name__}: {first[:200]}"
                pred = create_predictor(exp.prefix, device=device, threads=args.threads, enable_mkldnn=False)
                got = predict(pred, [x.numpy()])
        diffs = [float(np.abs(a - b).max()) for a, b in zip(ref, got)]
        scale = max(float(np.abs(a).max()) for a in ref)
        res["inference_parity"] = {"max_abs_diff": max(diffs), "max_rel_diff": max(diffs) / max(scale, 1e-12),
                                   "outputs": len(got), "format": exp.format}
        return pred
    except Exception as e:  # noqa: BLE001 - reported in the JSON, the dygraph figures still stand
        res["inference_error"] = f"{type(e).__name__}: {e}"[:500]
        return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=sorted(DEFAULTS))
    p.add_argument("--mode", choices=["train", "infer"], default="train")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=0, help="0 = model default for CPU")
    p.add_argument("--size", type=int, default=0, help="input side / sequence length; 0 = model default")
    p.add_argument("--steps", type=int, default=6, help="timed steps (train) or iterations per round (infer)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="infer: alternating unfused/fused rounds")
    p.add_argument("--inference", action="store_true",
                   help="infer: also time Paddle Inference (exported model, IR fusion passes)")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    args.batch = args.batch or DEFAULTS[args.model]["batch"]
    args.size = args.size or DEFAULTS[args.model]["size"]
    from paddle.base import core

    core.set_num_threads(args.threads)
    info = setup(seed=0)
    setup_logging(info)
    res = run_train(args, info) if args.mode == "train" else run_infer(args, info)
    res.update(threads=args.threads, device=paddle.device.get_device(), size=args.size)
    if info.is_main:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
