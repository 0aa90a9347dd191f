"""Chinese text-line recognition (CRNN + CTC) recipe.

    # train: builds the synthetic set on first use (no download), 1 or N processes
    python recipes/ocr_rec.py                                   # = -c recipes/configs/ocr_rec.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_rec.py -c recipes/configs/ocr_rec_smoke.yml
    # resume, evaluate, recognize images, export + Paddle Inference parity
    python recipes/ocr_rec.py -c CFG -o Global.resume=auto
    python recipes/ocr_rec.py -c CFG --mode eval
    python recipes/ocr_rec.py -c CFG --mode predict -o Predict.images=path/to/img_or_folder
    python recipes/ocr_rec.py -c CFG --mode export

Your own data (PaddleOCR formats)::

    -o Train.dataset.format=label_file Train.dataset.data_dir=D Train.dataset.label_file_list=[D/train.txt]
    -o Train.dataset.format=lmdb Train.dataset.data_dir=D/lmdb_train
    -o Global.character_dict_path=ppocr_keys_v1.txt

An empty ``data_dir`` means the built-in synthetic split (``Synthetic`` section).
Model, data, loss, metrics live in ``paddle_recipes.tasks.ocr``; this file maps the
config onto the core blocks (distributed, data, amp, accumulate, ema, meters, checkpoint,
trainer, export).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import paddle  # noqa: E402

from paddle_recipes import distributed as dist_utils  # noqa: E402
from paddle_recipes.accumulate import GradAccumulator  # noqa: E402
from paddle_recipes.amp import Amp, AmpConfig  # noqa: E402
from paddle_recipes.checkpoint import load_weights, resume_source  # noqa: E402
from paddle_recipes.cli import GlobalConfig as BaseGlobalConfig, exit_on_user_error, run_recipe  # noqa: E402
from paddle_recipes.config import ConfigError, to_dict  # noqa: E402
from paddle_recipes.data import LabelFileError, LmdbFormatError, LoaderConfig, build_loader  # noqa: E402
from paddle_recipes.ema import EmaConfig, build_ema  # noqa: E402
from paddle_recipes.meters import ScalarWriter  # noqa: E402
from paddle_recipes.optim import OptimizerConfig, build_optimizer  # noqa: E402
from paddle_recipes.tasks.ocr.charset import CharDict, CharDictError  # noqa: E402
from paddle_recipes.tasks.ocr.dataset import DataPathError, DatasetConfig, RecDataset, SkipStats, collate, unpack_skipped  # noqa: E402
from paddle_recipes.tasks.ocr.evaluate import evaluate_rec, list_images, recognize_files  # noqa: E402
from paddle_recipes.tasks.ocr.losses import CTCLoss  # noqa: E402
from paddle_recipes.tasks.ocr.metrics import RecMetric  # noqa: E402
from paddle_recipes.tasks.ocr.models import build_rec_model  # noqa: E402
from paddle_recipes.tasks.ocr.postprocess import ctc_greedy_decode  # noqa: E402
from paddle_recipes.tasks.ocr.synth import SynthConfig, build_dataset, dataset_fingerprint, wait_for_dataset  # noqa: E402
from paddle_recipes.trainer import Callback, Trainer  # noqa: E402

logger = logging.getLogger("ocr_rec")
REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- config schema
@dataclass
class GlobalConfig(BaseGlobalConfig):
    """Shared run settings (paddle_recipes.cli.GlobalConfig) plus: character_dict_path: one char per line
    (blank is added as class 0). image_shape: [C, H, W] input. max_text_length: longer labels are skipped
    (counted). use_visualdl: write scalars (JSONL + VisualDL when installed) to vdl_dir."""
    output_dir: str = "output/ocr_rec"
    character_dict_path: str = "datasets/ocr_rec/ch_common_3000.txt"
    use_space_char: bool = False
    max_text_length: int = 25
    image_shape: List[int] = field(default_factory=lambda: [3, 48, 320])
    use_visualdl: bool = False
    vdl_dir: str = ""


@dataclass
class BackboneConfig:
    """name: LCNetRec (light, PP-LCNet-like) | ResNet34vd. scale: channel multiplier.
    width_stride: input width / output time steps (4 -> T=80 for W=320)."""
    name: str = "LCNetRec"
    scale: float = 1.0
    width_stride: int = 4


@dataclass
class NeckConfig:
    """name: Conv (light 1-D context) | BiLSTM | Im2Seq. hidden_size: per direction for BiLSTM."""
    name: str = "Conv"
    hidden_size: int = 96


@dataclass
class HeadConfig:
    name: str = "CTCHead"
    mid_channels: int = 0


@dataclass
class ArchitectureConfig:
    model_type: str = "rec"
    algorithm: str = "CRNN"
    Backbone: BackboneConfig = field(default_factory=BackboneConfig)
    Neck: NeckConfig = field(default_factory=NeckConfig)
    Head: HeadConfig = field(default_factory=HeadConfig)


@dataclass
class LossConfig:
    name: str = "CTCLoss"
    zero_infinity: bool = True


@dataclass
class SyntheticConfig:
    """The built-in synthetic set, used when a split's data_dir is empty; generated under root when missing.
    format: which written format the recipe reads (both are always written)."""
    root: str = "datasets/cache/ocr_rec"
    num_train: int = 20000
    num_val: int = 1000
    min_len: int = 2
    max_len: int = 10
    height: int = 48
    seed: int = 0
    workers: int = 2
    format: str = "lmdb"
    aug: bool = True


@dataclass
class RecLoaderConfig(LoaderConfig):
    """LoaderConfig + batch_size_per_card (per process), shuffle, drop_last."""
    batch_size_per_card: int = 64
    shuffle: bool = True
    drop_last: bool = True


@dataclass
class TrainConfig:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: RecLoaderConfig = field(default_factory=RecLoaderConfig)
    accumulate_steps: int = 1


@dataclass
class EvalConfig:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: RecLoaderConfig = field(default_factory=lambda: RecLoaderConfig(shuffle=False, drop_last=False))


@dataclass
class PredictConfig:
    """images: an image file or folder. batch_size: images per forward pass."""
    images: str = ""
    batch_size: int = 16


@dataclass
class ExportConfig:
    """out_prefix: "" = output_dir/inference/model. parity_batch: samples compared dygraph vs Paddle Inference."""
    out_prefix: str = ""
    parity_batch: int = 4


@dataclass
class RecConfig:
    Global: GlobalConfig = field(default_factory=GlobalConfig)
    Architecture: ArchitectureConfig = field(default_factory=ArchitectureConfig)
    Loss: LossConfig = field(default_factory=LossConfig)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="adam", lr=1e-3, schedule="cosine", warmup_steps=200, weight_decay=0.0))
    AMP: AmpConfig = field(default_factory=AmpConfig)
    EMA: EmaConfig = field(default_factory=EmaConfig)
    Synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)
    Train: TrainConfig = field(default_factory=TrainConfig)
    Eval: EvalConfig = field(default_factory=EvalConfig)
    Predict: PredictConfig = field(default_factory=PredictConfig)
    Export: ExportConfig = field(default_factory=ExportConfig)


# ----------------------------------------------------------------------------- building
def load_charset(cfg: RecConfig) -> CharDict:
    return CharDict.from_file(cfg.Global.character_dict_path, use_space_char=cfg.Global.use_space_char)


def resolve_dataset(cfg: RecConfig, ds: DatasetConfig, split: str, charset: CharDict, info) -> DatasetConfig:
    """The dataset config of a split; "" data_dir = the synthetic split, generated by rank 0 when missing."""
    if ds.data_dir:
        return ds
    s = cfg.Synthetic
    scfg = SynthConfig(min_len=s.min_len, max_len=s.max_len, height=s.height, aug=s.aug, seed=s.seed)
    splits = {"train": s.num_train, "val": s.num_val}
    if info.is_main:
        build_dataset(s.root, charset.chars, splits, scfg, workers=s.workers)
    else:  # poll, not barrier: a GLOO barrier times out during a minutes-long generation
        wait_for_dataset(s.root, dataset_fingerprint(charset.chars, splits, scfg))
    root = Path(s.root) / split
    if s.format == "lmdb":
        return DatasetConfig(format="lmdb", data_dir=str(root / "lmdb"))
    return DatasetConfig(format="label_file", data_dir=str(root), label_file_list=[str(root / "label.txt")])


def build_split(cfg: RecConfig, section, split: str, charset: CharDict, info, train: bool) -> RecDataset:
    key = "Train.dataset" if train else "Eval.dataset"
    ds_cfg = resolve_dataset(cfg, section.dataset, split, charset, info)
    return RecDataset(ds_cfg, charset, cfg.Global.image_shape, cfg.Global.max_text_length, replace_bad=train, key=key)


def build_eval_loader(cfg: RecConfig, ds: RecDataset, info):
    """Each rank evaluates a disjoint slice (rank::world) of the eval set; sums are all-reduced."""
    shard = paddle.io.Subset(ds, list(range(info.rank, len(ds), info.world_size)))
    sampler = paddle.io.BatchSampler(shard, batch_size=cfg.Eval.loader.batch_size_per_card, shuffle=False,
                                     drop_last=False)
    return build_loader(shard, sampler, cfg.Eval.loader, collate_fn=collate)


def build_model(cfg: RecConfig, num_classes: int):
    return build_rec_model(cfg.Architecture, num_classes, in_channels=cfg.Global.image_shape[0])


def reduce_metrics(state: dict) -> dict:
    state = {k: dist_utils.all_reduce_sum(float(v)) for k, v in state.items()}
    return RecMetric.from_state(state)


class SkipSummary(Callback):
    """Collects per-batch skips (corrupt images found in workers) and logs a summary at the end of fit."""

    def __init__(self, stats: List[SkipStats]):
        self.stats = stats

    def on_fit_end(self, trainer) -> None:
        log_skip_summary(self.stats, trainer.info, trainer.output_dir)


def log_skip_summary(stats: List[SkipStats], info, output_dir=None) -> dict:
    """Merge skip places over ranks and log one line per split; returns {split: {reason: count}}."""
    merged = {}
    for st in stats:
        places = {r: sorted(p) for r, p in st.places.items()}
        if info.world_size > 1:
            gathered: list = []
            paddle.distributed.all_gather_object(gathered, places)
        else:
            gathered = [places]
        union = SkipStats(st.name)
        for g in gathered:
            for reason, ps in g.items():
                union.places.setdefault(reason, set()).update(ps)
        merged[st.name] = union.counts()
        if info.is_main:
            logger.info("data summary: %s", union.summary())
    if info.is_main and output_dir is not None:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "skipped.json").write_text(json.dumps(merged, indent=1))
    return merged


def weights_source(cfg: RecConfig) -> str:
    if cfg.Global.weights:
        return cfg.Global.weights
    root = Path(cfg.Global.output_dir) / "checkpoints"
    return str(root / "best") if (root / "best").exists() else str(root)


def load_for_inference(cfg: RecConfig, charset: CharDict):
    model = build_model(cfg, charset.num_classes)
    src = load_weights(model, weights_source(cfg), prefer_ema=cfg.Global.use_ema_weights)
    logger.info("loaded %s", src)
    model.eval()
    return model, src


# ----------------------------------------------------------------------------- modes
def train(cfg: RecConfig, info) -> dict:
    g = cfg.Global
    if not info.is_main:
        logging.getLogger("paddle_recipes.tasks.ocr").setLevel(logging.ERROR)  # rank 0 warns once per file:line
    charset = load_charset(cfg)
    train_ds = build_split(cfg, cfg.Train, "train", charset, info, train=True)
    eval_ds = build_split(cfg, cfg.Eval, "val", charset, info, train=False)
    lc = cfg.Train.loader
    sampler = dist_utils.build_batch_sampler(train_ds, lc.batch_size_per_card, info, shuffle=lc.shuffle,
                                             drop_last=lc.drop_last)
    loader = build_loader(train_ds, sampler, lc, collate_fn=collate)
    if len(loader) == 0:
        raise ValueError(f"Train: {len(train_ds)} samples is less than one batch of {lc.batch_size_per_card} "
                         f"x {info.world_size} processes")
    eval_loader = build_eval_loader(cfg, eval_ds, info)

    model = build_model(cfg, charset.num_classes)
    steps_per_epoch = max(1, len(loader) // cfg.Train.accumulate_steps)
    total = g.max_steps or g.epochs * steps_per_epoch
    optimizer, lr_scheduler = build_optimizer(cfg.Optimizer, model.parameters(), total_steps=total)
    amp = Amp(cfg.AMP)
    model, optimizer = amp.prepare(model, optimizer)
    ema = build_ema(cfg.EMA, model)
    model = dist_utils.wrap_model(model, info)
    loss_fn = CTCLoss(zero_infinity=cfg.Loss.zero_infinity)
    train_stats, eval_stats = train_ds.stats, eval_ds.stats

    def train_step(m, batch):
        train_stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:  # every sample of the batch was unreadable: keep DDP in step with a zero loss
            return {"loss": paddle.add_n([p.sum() * 0.0 for p in m.parameters()])}
        logits = m(batch["image"])
        loss = loss_fn(logits, batch["label"], batch["length"])
        preds = ctc_greedy_decode(logits.detach().astype("float32").numpy(), charset, with_confidence=False)
        acc = float(np.mean([p == t for (p, _), t in zip(preds, batch["text"])]))
        return {"loss": loss, "acc": acc}

    def eval_fn(m):
        return reduce_metrics(evaluate_rec(dist_utils.unwrap(m), eval_loader, charset, eval_stats))

    writer = None
    if g.use_visualdl and info.is_main:
        writer = ScalarWriter(g.vdl_dir or str(Path(g.output_dir) / "vdl"))
    trainer = Trainer(model, optimizer, train_step, loader, lr_scheduler=lr_scheduler, amp=amp,
                      accumulator=GradAccumulator(cfg.Train.accumulate_steps), ema=ema,
                      callbacks=[SkipSummary([train_stats, eval_stats])], epochs=g.epochs, max_steps=g.max_steps,
                      log_every=g.log_every, output_dir=g.output_dir, eval_fn=eval_fn,
                      eval_every_epochs=g.eval_every_epochs, save_every_epochs=g.save_every_epochs,
                      keep_last=g.keep_last, dist_info=info, main_metric="acc", config=cfg,
                      batch_size_fn=lambda b: len(b["text"]), scalar_writer=writer)
    resume = resume_source(g.resume, g.output_dir)
    n_params = sum(int(np.prod(p.shape)) for p in dist_utils.unwrap(model).parameters())
    logger.info("CRNN %s+%s: %d classes, %.2fM params, input %s, %d train / %d eval lines, %d steps/epoch, "
                "batch %d x %d procs x accum %d, EMA %s", cfg.Architecture.Backbone.name, cfg.Architecture.Neck.name,
                charset.num_classes, n_params / 1e6, g.image_shape, len(train_ds), len(eval_ds), steps_per_epoch,
                lc.batch_size_per_card, info.world_size, cfg.Train.accumulate_steps, "on" if ema is not None else "off")
    t0 = time.time()
    metrics = trainer.fit(resume_from=resume)
    if not metrics:
        metrics = trainer.evaluate()
    train_time = time.time() - t0
    if writer is not None:
        writer.close()
    summary = {"final_eval": metrics, "global_step": trainer.global_step, "epoch": trainer.epoch,
               "train_time_s": round(train_time, 1), "world_size": info.world_size, "resumed_from": resume,
               "amp": amp.describe(), "ema": ema is not None, "best_acc": trainer.best_metric,
               "skipped": {"train": train_stats.counts(), "eval": eval_stats.counts()},
               "history": trainer.history, "config": to_dict(cfg)}
    if info.is_main:
        (Path(g.output_dir) / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        logger.info("done in %.1f s: %s", train_time, metrics)
    return summary


def evaluate(cfg: RecConfig, info) -> dict:
    charset = load_charset(cfg)
    ds = build_split(cfg, cfg.Eval, "val", charset, info, train=False)
    model, src = load_for_inference(cfg, charset)
    metrics = reduce_metrics(evaluate_rec(model, build_eval_loader(cfg, ds, info), charset, ds.stats))
    skipped = log_skip_summary([ds.stats], info)
    metrics.update(weights=src, skipped=skipped[ds.stats.name])
    if info.is_main:
        print(json.dumps(metrics, ensure_ascii=False))
    return metrics


def predict(cfg: RecConfig, info) -> list:
    """Print "file<TAB>text<TAB>confidence" per image; unreadable images are warned and counted."""
    if not cfg.Predict.images:
        raise ValueError("Predict.images is empty: pass -o Predict.images=path/to/image_or_folder")
    charset = load_charset(cfg)
    files = list_images(cfg.Predict.images)
    model, _ = load_for_inference(cfg, charset)
    results, bad = recognize_files(model, files, charset, cfg.Global.image_shape, cfg.Predict.batch_size)
    if info.is_main:
        for f, text, conf in results:
            print(f"{f}\t{text}\t{conf:.4f}")
        for f, why in bad:
            logger.warning("skipped %s: %s", f, why)
        logger.info("predicted %d images, skipped %d", len(results), len(bad))
    return results


def export(cfg: RecConfig, info) -> dict:
    """jit.save the (EMA) model and check that Paddle Inference gives the dygraph logits."""
    from paddle.static import InputSpec

    from paddle_recipes.export import create_predictor, export_model, predict as run_predictor

    charset = load_charset(cfg)
    model, src = load_for_inference(cfg, charset)
    c, h, w = cfg.Global.image_shape
    prefix = cfg.Export.out_prefix or str(Path(cfg.Global.output_dir) / "inference" / "model")
    exp = export_model(model, [InputSpec([None, c, h, w], "float32", "x")], prefix)
    x = np.random.default_rng(0).uniform(-1, 1, (max(1, cfg.Export.parity_batch), c, h, w)).astype("float32")
    with paddle.no_grad():
        ref = model(paddle.to_tensor(x)).numpy()
    pred = create_predictor(exp.prefix, device="gpu" if paddle.is_compiled_with_cuda() else "cpu", threads=2)
    (out,) = run_predictor(pred, {"x": x})
    same_text = [a[0] for a in ctc_greedy_decode(ref, charset)] == [a[0] for a in ctc_greedy_decode(out, charset)]
    report = {"prefix": exp.prefix, "format": exp.format, "weights": src, "input": [None, c, h, w],
              "output": "logits [B, T, num_classes] (softmax + greedy CTC decode outside)",
              "max_abs_diff": float(np.abs(out - ref).max()), "same_decoded_text": bool(same_text), **exp.sizes()}
    out_dir = Path(exp.prefix).parent
    charset.save(out_dir / "char_dict.txt")
    (out_dir / "export_report.json").write_text(json.dumps(report, indent=1))
    if info.is_main:
        print(json.dumps(report))
    return report


USER_ERRORS = (ConfigError, DataPathError, CharDictError, LabelFileError, LmdbFormatError, FileNotFoundError)
MODES = {"train": train, "eval": evaluate, "predict": predict, "export": export}


def main(argv=None):
    return run_recipe("ocr_rec", RecConfig, MODES, argv=argv, description="CRNN/CTC Chinese text-line recognition recipe",
                      default_config=str(REPO / "recipes" / "configs" / "ocr_rec.yml"))


if __name__ == "__main__":
    exit_on_user_error(main, "ocr_rec", extra_errors=USER_ERRORS)
