"""PP-YOLOE detection recipe on COCO-format data, with EMA and AMP.

    # train (generates the synthetic shapes set on first use), 1 or N processes
    python recipes/det_ppyoloe.py -c recipes/configs/det_ppyoloe_tiny.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/det_ppyoloe.py -c recipes/configs/det_ppyoloe_tiny.yml
    # evaluate / draw predictions / export + Paddle Inference parity + TensorRT config (EMA weights)
    python recipes/det_ppyoloe.py -c recipes/configs/det_ppyoloe_tiny.yml --mode eval
    python recipes/det_ppyoloe.py -c recipes/configs/det_ppyoloe_tiny.yml --mode predict -o Predict.images=img.png
    python recipes/det_ppyoloe.py -c recipes/configs/det_ppyoloe_tiny.yml --mode export

Your own data: ``-o Train.dataset.ann_file=... Train.dataset.image_dir=... Eval.dataset.ann_file=...``.
Model, data, metrics and post-processing live in ``paddle_recipes.tasks.det``; this file maps the
config onto the core blocks (distributed, data, amp, accumulate, ema, checkpoint, trainer, export).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import paddle  # noqa: E402

from paddle_recipes import distributed as dist_utils  # noqa: E402
from paddle_recipes.accumulate import GradAccumulator  # noqa: E402
from paddle_recipes.amp import DEFAULT_FP16_BLACK_LIST, Amp, AmpConfig  # noqa: E402
from paddle_recipes.checkpoint import load_weights, resume_source  # noqa: E402
from paddle_recipes.cli import GlobalConfig as BaseGlobalConfig, exit_on_user_error, run_recipe  # noqa: E402
from paddle_recipes.config import to_dict  # noqa: E402
from paddle_recipes.data import LoaderConfig, build_loader  # noqa: E402
from paddle_recipes.ema import EmaConfig, build_ema  # noqa: E402
from paddle_recipes.optim import OptimizerConfig, build_optimizer  # noqa: E402
from paddle_recipes.tasks.det.coco import CocoDetDataset, DetCollate, build_train_augment, load_coco  # noqa: E402
from paddle_recipes.tasks.det.evaluate import evaluate_detector  # noqa: E402
from paddle_recipes.tasks.det.model import build_ppyoloe  # noqa: E402
from paddle_recipes.tasks.det.synth import ShapesSpec, make_shapes_dataset  # noqa: E402
from paddle_recipes.trainer import Trainer  # noqa: E402

logger = logging.getLogger("det_ppyoloe")

# fp16-overflow-prone ops of a detection head/loss kept in fp32 (on top of the core list).
DET_FP16_BLACK_LIST = sorted(set(DEFAULT_FP16_BLACK_LIST) | {
    "reduce_mean", "sigmoid", "softmax", "log_softmax", "elementwise_pow", "bce_loss", "matmul_v2",
    "take_along_axis", "topk"})


# ----------------------------------------------------------------------------- config schema
@dataclass
class GlobalConfig(BaseGlobalConfig):
    """Shared run settings (paddle_recipes.cli.GlobalConfig) with detection defaults."""
    epochs: int = 30
    output_dir: str = "output/det_ppyoloe"
    log_every: int = 10


@dataclass
class ArchitectureConfig:
    """size: tiny | s | m | l (width/depth multipliers). reg_max: highest DFL bin (grid cells)."""
    size: str = "s"
    reg_max: int = 16


@dataclass
class LossConfig:
    """Weights of VFL / GIoU / DFL and the TAL assigner settings."""
    cls_weight: float = 1.0
    iou_weight: float = 2.5
    dfl_weight: float = 0.5
    topk: int = 13
    alpha: float = 1.0
    beta: float = 6.0


@dataclass
class SyntheticConfig:
    """The built-in shapes set, used when a split's ann_file is empty; generated under root when missing."""
    root: str = "datasets/cache/det_shapes"
    num_train: int = 800
    num_val: int = 100
    image_size: int = 256
    min_size: int = 20
    max_size: int = 96
    max_objects: int = 4
    seed: int = 0


@dataclass
class DatasetConfig:
    """COCO instances json + image folder ("" = synthetic split)."""
    ann_file: str = ""
    image_dir: str = ""


@dataclass
class NmsConfig:
    score_threshold: float = 0.01
    iou_threshold: float = 0.7
    nms_top_k: int = 1000
    keep_top_k: int = 100


@dataclass
class TrainConfig:
    """batch_size per process; sizes: batch random resize sides (multiples of 32); accumulate_steps."""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: LoaderConfig = field(default_factory=LoaderConfig)
    batch_size: int = 16
    sizes: list[int] = field(default_factory=lambda: [576, 608, 640])
    augment: bool = True
    accumulate_steps: int = 1


@dataclass
class EvalConfig:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: LoaderConfig = field(default_factory=LoaderConfig)
    batch_size: int = 8
    size: int = 640
    nms: NmsConfig = field(default_factory=NmsConfig)


@dataclass
class PredictConfig:
    """images: file or folder ("" = the first num_samples eval images). out_dir: "" = output_dir/predict."""
    images: str = ""
    num_samples: int = 4
    out_dir: str = ""
    score_threshold: float = 0.3


@dataclass
class TrtSection:
    """TensorRT settings written next to the export (seed 000 §4.1 defaults), input name 'image'."""
    workspace_size: int = 1 << 30
    max_batch_size: int = 8
    min_subgraph_size: int = 5
    precision: str = "fp32"  # the enable_tensorrt_engine call passes no precision (= Float32)
    min_shape: list[int] = field(default_factory=lambda: [1, 3, 608, 608])
    max_shape: list[int] = field(default_factory=lambda: [8, 3, 1536, 1536])
    opt_shape: list[int] = field(default_factory=lambda: [4, 3, 1024, 1024])


@dataclass
class ExportConfig:
    """out_prefix: "" = output_dir/inference/model. parity_batch: images compared dygraph vs Paddle Inference.
    fold_bn: fold BatchNorm into convs (export.fuse_conv_bn) after the RepVGG fusion.
    upsample: "repeat" (runs on CPU Paddle Inference/oneDNN) or "interp" (TensorRT-native nearest_interp;
    paddle 3.3.1's CPU oneDNN executor cannot run it from a PIR program). Numerically identical."""
    out_prefix: str = ""
    parity_batch: int = 2
    fold_bn: bool = True
    upsample: str = "repeat"
    trt: TrtSection = field(default_factory=TrtSection)


def _default_amp() -> AmpConfig:
    return AmpConfig(enable=True, level="O1", custom_black_list=list(DET_FP16_BLACK_LIST))


@dataclass
class DetConfig:
    Global: GlobalConfig = field(default_factory=GlobalConfig)
    Architecture: ArchitectureConfig = field(default_factory=ArchitectureConfig)
    Loss: LossConfig = field(default_factory=LossConfig)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="momentum", lr=0.01, weight_decay=5e-4, schedule="cosine", warmup_steps=300))
    AMP: AmpConfig = field(default_factory=_default_amp)
    EMA: EmaConfig = field(default_factory=lambda: EmaConfig(enable=True, decay=0.9998, warmup="threshold"))
    Synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)
    Train: TrainConfig = field(default_factory=TrainConfig)
    Eval: EvalConfig = field(default_factory=EvalConfig)
    Predict: PredictConfig = field(default_factory=PredictConfig)
    Export: ExportConfig = field(default_factory=ExportConfig)


# ----------------------------------------------------------------------------- building
def resolve_split(cfg: DetConfig, ds: DatasetConfig, split: str, info) -> tuple[str, str]:
    """(ann_file, image_dir) of a split; the synthetic set is generated (rank 0) when needed."""
    if ds.ann_file:
        return ds.ann_file, ds.image_dir or str(Path(ds.ann_file).parent)
    s = cfg.Synthetic
    spec = ShapesSpec(num_train=s.num_train, num_val=s.num_val, image_size=s.image_size, min_size=s.min_size,
                      max_size=s.max_size, max_objects=s.max_objects, seed=s.seed)
    if info.is_main:
        paths = make_shapes_dataset(s.root, spec)
    dist_utils.barrier()
    if not info.is_main:
        paths = make_shapes_dataset(s.root, spec)  # marker present: only returns the paths
    return paths[split]["ann_file"], paths[split]["image_dir"]


def build_model(cfg: DetConfig, num_classes: int):
    lc = cfg.Loss
    return build_ppyoloe(cfg.Architecture.size, num_classes, reg_max=cfg.Architecture.reg_max,
                         loss_weights={"cls": lc.cls_weight, "iou": lc.iou_weight, "dfl": lc.dfl_weight},
                         topk=lc.topk, alpha=lc.alpha, beta=lc.beta)


def build_eval(cfg: DetConfig, info):
    """(index, loader) of the eval split, sharded over ranks."""
    ann, img_dir = resolve_split(cfg, cfg.Eval.dataset, "val", info)
    index = load_coco(ann, img_dir)
    ds = CocoDetDataset(index)
    sampler = dist_utils.build_batch_sampler(ds, cfg.Eval.batch_size, info, shuffle=False, drop_last=False)
    loader = build_loader(ds, sampler, cfg.Eval.loader, collate_fn=DetCollate([cfg.Eval.size]))
    return index, loader


def nms_kwargs(cfg: DetConfig) -> dict:
    n = cfg.Eval.nms
    return {"score_threshold": n.score_threshold, "iou_threshold": n.iou_threshold, "nms_top_k": n.nms_top_k,
            "keep_top_k": n.keep_top_k}


def det_train_step(model, batch):
    """Forward + PP-YOLOE loss for one batch (dict from DetCollate)."""
    return model(batch["image"], batch["gt_class"], batch["gt_bbox"], batch["pad_gt_mask"])


def weights_source(cfg: DetConfig) -> str:
    return cfg.Global.weights or str(Path(cfg.Global.output_dir) / "checkpoints")


# ----------------------------------------------------------------------------- modes
def train(cfg: DetConfig, info) -> dict:
    g = cfg.Global
    ann, img_dir = resolve_split(cfg, cfg.Train.dataset, "train", info)
    train_index = load_coco(ann, img_dir)
    eval_index, eval_loader = build_eval(cfg, info)
    if eval_index.cat_ids != train_index.cat_ids:
        raise ValueError(f"train categories {train_index.cat_ids} ({ann}) differ from eval categories "
                         f"{eval_index.cat_ids} ({eval_index.ann_file})")
    augment = build_train_augment(seed=g.seed + info.rank) if cfg.Train.augment else None
    train_ds = CocoDetDataset(train_index, augment)
    sampler = dist_utils.build_batch_sampler(train_ds, cfg.Train.batch_size, info, shuffle=True, drop_last=True)
    loader = build_loader(train_ds, sampler, cfg.Train.loader,
                          collate_fn=DetCollate(cfg.Train.sizes, seed=g.seed + 1000 * info.rank))
    if len(loader) == 0:
        raise ValueError(f"{ann}: {len(train_ds)} images is less than one batch of {cfg.Train.batch_size} "
                         f"x {info.world_size} processes")

    model = build_model(cfg, train_index.num_classes)
    steps_per_epoch = max(1, len(loader) // cfg.Train.accumulate_steps)
    total = g.max_steps or g.epochs * steps_per_epoch
    optimizer, lr_scheduler = build_optimizer(cfg.Optimizer, model.parameters(), total_steps=total)
    amp = Amp(cfg.AMP)
    model, optimizer = amp.prepare(model, optimizer)
    ema = build_ema(cfg.EMA, model)
    model = dist_utils.wrap_model(model, info)
    nms = nms_kwargs(cfg)

    def eval_fn(m):
        with amp.autocast():  # an O2 model holds fp16 weights; a no-op where AMP is not in effect
            return evaluate_detector(dist_utils.unwrap(m), eval_loader, eval_index, nms)

    trainer = Trainer(model, optimizer, det_train_step, loader, lr_scheduler=lr_scheduler, amp=amp,
                      accumulator=GradAccumulator(cfg.Train.accumulate_steps), ema=ema, epochs=g.epochs,
                      max_steps=g.max_steps, log_every=g.log_every, output_dir=g.output_dir, eval_fn=eval_fn,
                      eval_every_epochs=g.eval_every_epochs, save_every_epochs=g.save_every_epochs,
                      keep_last=g.keep_last, dist_info=info, main_metric="mAP", config=cfg)
    resume = resume_source(g.resume, g.output_dir)
    logger.info("PP-YOLOE-%s: %d classes, %d train / %d eval images, %d steps/epoch, world %d, EMA %s",
                cfg.Architecture.size, train_index.num_classes, len(train_ds), len(eval_index.records),
                steps_per_epoch, info.world_size, "on" if ema is not None else "off")
    t0 = time.time()
    metrics = trainer.fit(resume_from=resume)
    if not metrics or trainer.global_step and not trainer.last_metrics:
        metrics = trainer.evaluate()
    train_time = time.time() - t0
    summary = {"final_eval": metrics, "global_step": trainer.global_step, "epoch": trainer.epoch,
               "train_time_s": round(train_time, 1), "world_size": info.world_size, "resumed_from": resume,
               "amp": amp.describe(), "ema": ema is not None, "history": trainer.history,
               "train_skipped": dict(train_index.counts), "eval_skipped": dict(eval_index.counts),
               "config": to_dict(cfg)}
    if info.is_main:
        out = Path(g.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        logger.info("done in %.1f s: %s", train_time, {k: v for k, v in metrics.items()})
    return summary


def load_for_inference(cfg: DetConfig, num_classes: int):
    model = build_model(cfg, num_classes)
    src = load_weights(model, weights_source(cfg), prefer_ema=cfg.Global.use_ema_weights)
    logger.info("loaded %s", src)
    model.eval()
    return model, src


def evaluate(cfg: DetConfig, info) -> dict:
    index, loader = build_eval(cfg, info)
    model, src = load_for_inference(cfg, index.num_classes)
    metrics = evaluate_detector(model, loader, index, nms_kwargs(cfg))
    metrics["weights"] = src
    if info.is_main:
        print(json.dumps(metrics))
    return metrics


def _load_rgb(path: str) -> np.ndarray:
    import cv2

    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(f"cannot read image {path}")
    return np.ascontiguousarray(img[:, :, ::-1])


def predict(cfg: DetConfig, info) -> list:
    """Draw detections of the given images (or the first eval images) into PNG files."""
    from paddle_recipes.tasks.det.postprocess import postprocess_batch
    from paddle_recipes.tasks.det.visualize import draw_detections

    index = load_coco(*resolve_split(cfg, cfg.Eval.dataset, "val", info))
    p = cfg.Predict
    if p.images:
        src = Path(p.images)
        if not src.exists():
            raise FileNotFoundError(f"Predict.images: {src} does not exist")
        files = sorted(str(f) for f in src.iterdir() if f.suffix.lower() in (".png", ".jpg", ".jpeg", ".bmp")) \
            if src.is_dir() else [str(src)]
    else:
        files = [r["file"] for r in index.records[:p.num_samples]]
    model, _ = load_for_inference(cfg, index.num_classes)
    collate = DetCollate([cfg.Eval.size])
    out_dir = Path(p.out_dir or Path(cfg.Global.output_dir) / "predict")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for i, f in enumerate(files):
        img = _load_rgb(f)
        batch = collate([{"image": img, "gt_bbox": np.zeros((0, 4), np.float32), "gt_class": np.zeros(0, np.int64),
                          "im_id": i, "orig_size": img.shape[:2]}])
        with paddle.no_grad():
            boxes, scores = model(paddle.to_tensor(batch["image"]))
        det = postprocess_batch(boxes.numpy(), scores.numpy(), batch["scale_factor"], **nms_kwargs(cfg))[0]
        out = out_dir / (Path(f).stem + "_det.png")
        n = draw_detections(img, det, index.cat_names, str(out), score_threshold=p.score_threshold)
        written.append({"image": f, "output": str(out), "boxes_drawn": n})
        logger.info("%s -> %s (%d boxes)", f, out, n)
    if info.is_main:
        print(json.dumps(written))
    return written


def export(cfg: DetConfig, info) -> dict:
    """Re-parameterise (+ fold BN), jit.save, check Paddle Inference parity, write the TensorRT config."""
    from paddle.static import InputSpec

    from paddle_recipes.export import (TrtConfig, create_predictor, export_model, fuse_conv_bn,
                                       predict as run_predictor, trt_config_to_yaml)
    from paddle_recipes.tasks.det.postprocess import postprocess_batch

    index, loader = build_eval(cfg, info)
    model, src = load_for_inference(cfg, index.num_classes)
    batch = next(iter(loader))
    images = batch["image"][:max(1, cfg.Export.parity_batch)]
    with paddle.no_grad():
        ref_boxes, ref_scores = [t.numpy() for t in model(images)]  # training-form graph, EMA weights
    n_fused = model.reparameterize()
    model.neck.upsample.mode = cfg.Export.upsample
    deploy = fuse_conv_bn(model) if cfg.Export.fold_bn else model
    prefix = cfg.Export.out_prefix or str(Path(cfg.Global.output_dir) / "inference" / "model")
    exp = export_model(deploy, [InputSpec([None, 3, None, None], "float32", "image")], prefix)
    pred = create_predictor(exp.prefix, device="cpu" if not paddle.is_compiled_with_cuda() else "gpu", threads=2)
    boxes, scores = run_predictor(pred, {"image": images.numpy()})
    sf = batch["scale_factor"].numpy()[:len(images)]
    det_ref = postprocess_batch(ref_boxes, ref_scores, sf, **nms_kwargs(cfg))
    det_inf = postprocess_batch(boxes, scores, sf, **nms_kwargs(cfg))
    same_dets = all(a.shape == b.shape and (a.size == 0 or np.abs(a - b).max() < 1e-2) for a, b in zip(det_ref, det_inf))
    t = cfg.Export.trt
    trt = TrtConfig(workspace_size=t.workspace_size, max_batch_size=t.max_batch_size,
                    min_subgraph_size=t.min_subgraph_size, precision=t.precision,
                    min_shapes={"image": t.min_shape}, max_shapes={"image": t.max_shape},
                    opt_shapes={"image": t.opt_shape})
    out_dir = Path(exp.prefix).parent
    trt_config_to_yaml(trt, out_dir / "trt_config.yml")
    infer_cfg = {"arch": f"PP-YOLOE-{cfg.Architecture.size}", "label_list": index.cat_names,
                 "category_ids": index.cat_ids, "input_size": cfg.Eval.size, "input_name": "image",
                 "outputs": ["boxes [B, L, 4] xyxy input pixels", "scores [B, L, C] sigmoid"],
                 "preprocess": {"resize": "square, no keep-ratio", "mean": [0.485, 0.456, 0.406],
                                "std": [0.229, 0.224, 0.225], "to_rgb": True},
                 "nms": nms_kwargs(cfg), "trt_config": "trt_config.yml"}
    import yaml

    (out_dir / "infer_cfg.yml").write_text(yaml.safe_dump(infer_cfg, sort_keys=False))
    report = {"prefix": exp.prefix, "format": exp.format, "weights": src, "repvgg_fused": n_fused,
              "max_abs_diff_boxes": float(np.abs(boxes - ref_boxes).max()),
              "max_abs_diff_scores": float(np.abs(scores - ref_scores).max()),
              "same_detections": bool(same_dets), "parity_images": int(len(images)), **exp.sizes(),
              "trt_config": str(out_dir / "trt_config.yml")}
    (out_dir / "export_report.json").write_text(json.dumps(report, indent=1))
    if info.is_main:
        print(json.dumps(report))
    return report


MODES = {"train": train, "eval": evaluate, "predict": predict, "export": export}


def main(argv=None):
    return run_recipe("det_ppyoloe", DetConfig, MODES, argv=argv, description="PP-YOLOE detection recipe",
                      default_config=str(Path(__file__).parent / "configs" / "det_ppyoloe_tiny.yml"))


if __name__ == "__main__":
    from paddle_recipes.tasks.det.coco import DetDataError

    exit_on_user_error(main, "det_ppyoloe", extra_errors=(DetDataError,))
