"""Configs, figures and report of benchmarks/det_vs_ppdet.py (our PP-YOLOE recipe vs PaddleDetection's Trainer).

Both configs are written at run time from one ``Setup`` (facts: PP-YOLOE keys, width/depth of the size from
``paddle_recipes.tasks.det_ppyoloe.model.SIZES``, image sizes, batch, optimizer, LR schedule, EMA); no ppdet file is
copied. ``ours_config`` is our recipe's YAML, ``ppdet_config`` a ppdet-format YAML for ``ppdet.engine.Trainer``.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

import yaml

IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@dataclass
class Setup:
    """One training setup, applied to both sides. Pixels, images, optimizer steps.

    size: PP-YOLOE size (tiny/s/m/l/x). sizes: train batch random-resize sides (one side = fixed size).
    eval_size: square eval input. batch: images per step. optimizer: adamw | momentum (lr, weight_decay:
    decoupled for adamw, L2 for momentum). epochs: cosine horizon (and the epoch budget of ppdet's loop).
    warmup_steps: linear warmup from 0. min_lr_ratio: cosine floor / lr. augment: colour jitter + h-flip on
    both sides (+ our random affine, which ppdet's side has no equivalent for). ema_decay: 'threshold' EMA.
    """
    size: str = "tiny"
    sizes: list = field(default_factory=lambda: [160, 192, 224])
    eval_size: int = 192
    batch: int = 4
    optimizer: str = "adamw"
    lr: float = 0.002
    momentum: float = 0.9
    weight_decay: float = 0.0005
    epochs: int = 40
    warmup_steps: int = 50
    min_lr_ratio: float = 0.05
    augment: bool = True
    ema_decay: float = 0.9998
    reg_max: int = 16
    seed: int = 42


def width_depth(size: str) -> tuple[float, float]:
    from paddle_recipes.tasks.det_ppyoloe.model import SIZES

    spec = SIZES[size]
    return spec.width_mult, spec.depth_mult


def ours_config(s: Setup, data: dict, output_dir: str, max_steps: int = 0) -> dict:
    """Our recipe's config (det_ppyoloe.py): the Setup, 1 process, 0 loader workers, fp32, no eval/save in the loop."""
    opt = {"name": s.optimizer, "lr": s.lr, "weight_decay": s.weight_decay, "schedule": "cosine",
           "warmup_steps": s.warmup_steps, "min_lr": s.lr * s.min_lr_ratio}
    if s.optimizer == "momentum":
        opt["momentum"] = s.momentum
    return {
        "Global": {"seed": s.seed, "epochs": s.epochs, "max_steps": max_steps, "output_dir": output_dir,
                   "log_every": 1, "eval_every_epochs": 0, "save_every_epochs": 0, "device": "cpu"},
        "Architecture": {"size": s.size, "reg_max": s.reg_max},
        "Loss": {"cls_weight": 1.0, "iou_weight": 2.5, "dfl_weight": 0.5, "topk": 13, "alpha": 1.0, "beta": 6.0},
        "Optimizer": opt,
        "AMP": {"enable": False},
        "EMA": {"enable": True, "decay": s.ema_decay, "warmup": "threshold"},
        "Train": {"sizes": list(s.sizes), "augment": s.augment,
                  "dataset": {"ann_file": data["train_ann"], "image_dir": data["train_images"]},
                  "loader": {"batch_size_per_card": s.batch, "num_workers": 0}},
        "Eval": {"size": s.eval_size, "dataset": {"ann_file": data["val_ann"], "image_dir": data["val_images"]},
                 "loader": {"batch_size_per_card": 8, "num_workers": 0}},
    }


def ppdet_config(s: Setup, data: dict, save_dir: str, num_classes: int, epochs: int) -> str:
    """A ppdet-format YAML (PP-YOLOE, ``use_alpha: false``: the ImageNet-normalised family our model matches)."""
    w, d = width_depth(s.size)
    if s.optimizer == "adamw":
        optim = {"optimizer": {"type": "AdamW", "weight_decay": s.weight_decay}, "regularizer": None}
    else:
        optim = {"optimizer": {"type": "Momentum", "momentum": s.momentum},
                 "regularizer": {"type": "L2", "factor": s.weight_decay}}
    sample = [{"Decode": {}}] + ([{"RandomDistort": {}}, {"RandomFlip": {}}] if s.augment else [])
    norm = {"NormalizeImage": {"mean": IMAGENET_MEAN, "std": IMAGENET_STD, "is_scale": True}}
    cfg = {
        "use_gpu": False, "use_xpu": False, "use_mlu": False, "use_npu": False, "log_iter": 20,
        "save_dir": save_dir, "snapshot_epoch": 10 ** 6, "print_flops": False, "print_params": False,
        "epoch": epochs, "architecture": "YOLOv3", "norm_type": "bn", "num_classes": num_classes, "metric": "COCO",
        "worker_num": 0, "use_ema": True, "ema_decay": s.ema_decay, "ema_decay_type": "threshold",
        "ema_black_list": ["proj_conv.weight"], "amp": False, "depth_mult": d, "width_mult": w,
        "YOLOv3": {"backbone": "CSPResNet", "neck": "CustomCSPPAN", "yolo_head": "PPYOLOEHead", "post_process": None},
        "CSPResNet": {"layers": [3, 6, 6, 3], "channels": [64, 128, 256, 512, 1024], "return_idx": [1, 2, 3],
                      "use_large_stem": True, "use_alpha": False},
        "CustomCSPPAN": {"out_channels": [768, 384, 192], "stage_num": 1, "block_num": 3, "act": "swish",
                         "spp": True},
        "PPYOLOEHead": {"fpn_strides": [32, 16, 8], "grid_cell_scale": 5.0, "grid_cell_offset": 0.5,
                        "reg_max": s.reg_max, "static_assigner_epoch": -1, "use_varifocal_loss": True,
                        "loss_weight": {"class": 1.0, "iou": 2.5, "dfl": 0.5},
                        "static_assigner": "ATSSAssigner", "assigner": "TaskAlignedAssigner", "nms": "MultiClassNMS"},
        "ATSSAssigner": {"topk": 9},
        "TaskAlignedAssigner": {"topk": 13, "alpha": 1.0, "beta": 6.0},
        "MultiClassNMS": {"nms_top_k": 1000, "keep_top_k": 100, "score_threshold": 0.01, "nms_threshold": 0.7},
        "LearningRate": {"base_lr": s.lr, "schedulers": [
            {"name": "CosineDecay", "max_epochs": epochs, "min_lr_ratio": s.min_lr_ratio},
            {"name": "LinearWarmup", "start_factor": 0.0, "steps": max(1, s.warmup_steps)}]},
        "OptimizerBuilder": optim,
        "TrainReader": {
            "sample_transforms": sample,
            "batch_transforms": [{"BatchRandomResize": {"target_size": list(s.sizes), "random_size": True,
                                                        "random_interp": True, "keep_ratio": False}},
                                 norm, {"Permute": {}}, {"PadGT": {}}, {"CastGtClassInt64": {}}],
            "batch_size": s.batch, "shuffle": True, "drop_last": True, "use_shared_memory": False,
            "collate_batch": True},
        "TestReader": {"sample_transforms": [{"Decode": {}}, {"Resize": {"target_size": [s.eval_size] * 2,
                                                                           "keep_ratio": False, "interp": 2}},
                                             norm, {"Permute": {}}], "batch_size": 1},
    }
    text = yaml.safe_dump(cfg, sort_keys=False)
    text += ("TrainDataset:\n  !COCODataSet\n"
             f"    dataset_dir: {data['root']}\n    image_dir: images/train\n"
             "    anno_path: annotations/instances_train.json\n"
             "    data_fields: ['image', 'gt_bbox', 'gt_class', 'is_crowd']\n")
    return text


# ----------------------------------------------------------------------------- figures
def ips_window(times: list, warmup: int, steps: int, batch: int) -> dict:
    """images/s over steps warmup+1 .. warmup+steps (times: seconds since start at the end of each step)."""
    if len(times) < warmup + steps or steps <= 0:
        return {"ips": None, "window_s": None, "steps": len(times)}
    start = times[warmup - 1] if warmup > 0 else 0.0
    window = times[warmup + steps - 1] - start
    return {"ips": round(steps * batch / window, 3) if window > 0 else None, "window_s": round(window, 3),
            "steps": len(times)}


def _med_range(xs: list) -> dict:
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": round(statistics.median(xs), 4), "min": round(min(xs), 4), "max": round(max(xs), 4),
            "n": len(xs)}


def summarize_ips(pairs: list) -> dict:
    ratios = [p["ratio"] for p in pairs]
    return {"ours_ips": _med_range([p["ours"]["ips"] for p in pairs]),
            "ppdet_ips": _med_range([p["ppdet"]["ips"] for p in pairs]), "ratio_ours_over_ppdet": _med_range(ratios)}


def summarize_map(pairs: list) -> dict:
    out = {}
    for side in ("ours", "ppdet", "ppdet_raw_ema"):
        for key in ("mAP50", "mAP"):
            out[f"{side}_{key}"] = _med_range([(p.get(side) or {}).get(key) for p in pairs])
    return out


def _fmt(r: dict, nd: int = 3) -> str:
    if not r or r.get("median") is None:
        return "n/a"
    return f"{r['median']:.{nd}f} ({r['min']:.{nd}f}-{r['max']:.{nd}f}, n={r['n']})"


def to_markdown(rep: dict) -> str:
    s = rep["setups"]
    lines = [f"# Our PP-YOLOE recipe vs PaddleDetection {rep['versions'].get('ppdet')} (`ppdet.engine.Trainer`)", "",
             f"Command: `{rep['command']}`" + ("  (**--quick: pipeline check, figures meaningless**)" if rep["quick"]
                                               else ""), "",
             f"Machine: {rep['machine'].get('cpu_model')}, {rep['machine'].get('cpus_available')} CPUs available; "
             f"paddle {rep['versions'].get('paddle')}; 1 process, OMP/MKL threads {rep['threads']}, "
             f"taskset {'on' if rep['taskset'] else 'off'}; load average before {rep['load']['before']}, "
             f"after {rep['load']['after']}; {rep['load']['total_seconds']} s in all.", "",
             f"Data: {rep['data']['desc']}; the same COCO json and PNG files are read by both sides.", ""]
    if rep.get("ips"):
        i = rep["ips"]
        st = s["ips"]
        lines += [f"## (a) Training throughput: size {st['size']}, {st['sizes']} px, batch {st['batch']}, fp32",
                  "", f"images/s over steps {i['warmup'] + 1}..{i['warmup'] + i['steps']} (warm-up excluded), "
                  "one fresh process per run, interleaved ours, ppdet per repeat.", "",
                  "| repeat | ours ips | ppdet ips | ours/ppdet |", "|---|---|---|---|"]
        for k, p in enumerate(i["pairs"]):
            lines.append(f"| {k} | {p['ours']['ips']} | {p['ppdet']['ips']} | {p['ratio']} |")
        sm = i["summary"]
        lines += ["", f"Median (range): ours {_fmt(sm['ours_ips'], 2)} img/s, ppdet {_fmt(sm['ppdet_ips'], 2)} img/s, "
                  f"**ratio ours/ppdet {_fmt(sm['ratio_ours_over_ppdet'])}**.", ""]
    if rep.get("map"):
        m = rep["map"]
        st = s["map"]
        budget = (f"{m['budget_s']:.0f} s of training (wall clock, data loading included, eval excluded)"
                  if m["budget_s"] else f"{st['epochs']} epochs")
        lines += [f"## (b) Same-budget accuracy: size {st['size']}, train sizes {st['sizes']}, batch {st['batch']}, "
                  f"{st['optimizer']} lr {st['lr']}, cosine over {st['epochs']} epochs", "",
                  f"Budget: {budget} per side. Both trained weight sets (EMA) are scored by ONE evaluator "
                  f"(our `evaluate_detector`: {st['eval_size']} px resize, ImageNet mean/std, the same NMS, "
                  f"pycocotools) on the same {rep['data']['num_val']} held-out images. "
                  "`ppdet` = ppdet's EMA as ppdet applies it (`ModelEMA.apply()`, what it evaluates and saves); "
                  "`ppdet raw EMA` = the same accumulator without ppdet's `/(1 - d_n**n)` correction.", "",
                  "| seed | ours steps (epochs, train s) | ppdet steps (epochs, train s) | ours mAP@.5 | ppdet mAP@.5 "
                  "| ppdet raw EMA mAP@.5 | ours mAP@.5:.95 | ppdet mAP@.5:.95 | ppdet raw EMA mAP@.5:.95 |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for p in m["pairs"]:
            g = lambda side, key: (p.get(side) or {}).get(key)  # noqa: E731
            tr = lambda k: (f"{p[k].get('steps')} ({p[k].get('epochs_done', 0) or 0:.2f}, "  # noqa: E731
                            f"{p[k].get('train_s')})")
            lines.append(f"| {p['seed']} | {tr('ours_train')} | {tr('ppdet_train')} | "
                         f"{g('ours', 'mAP50')} | {g('ppdet', 'mAP50')} | {g('ppdet_raw_ema', 'mAP50')} | "
                         f"{g('ours', 'mAP')} | {g('ppdet', 'mAP')} | {g('ppdet_raw_ema', 'mAP')} |")
        early = [f"{k.split('_')[0]} seed {p['seed']} ({p[k].get('train_s')} s)" for p in m["pairs"]
                 for k in ("ours_train", "ppdet_train") if m["budget_s"] and p[k].get("steps")
                 and not p[k].get("stopped_by_budget")]
        if early:
            lines += ["", f"Ended at the {st['epochs']}-epoch horizon before the budget: {', '.join(early)}."]
        sm = m["summary"]
        lines += ["", f"Median (range) mAP@.5: ours {_fmt(sm['ours_mAP50'])}, ppdet {_fmt(sm['ppdet_mAP50'])}, "
                  f"ppdet raw EMA {_fmt(sm['ppdet_raw_ema_mAP50'])}; mAP@.5:.95: ours {_fmt(sm['ours_mAP'])}, "
                  f"ppdet {_fmt(sm['ppdet_mAP'])}, ppdet raw EMA {_fmt(sm['ppdet_raw_ema_mAP'])}.", ""]
    lines += ["## Differences between the two sides", ""] + [f"- {d}" for d in rep["differences"]] + [""]
    return "\n".join(lines)


def setup_dict(s: Setup) -> dict:
    return asdict(s)
