"""One row of benchmarks/data_path.py: a Train data loader (no model) of one side, timed over whole batches.

    python benchmarks/harness/data_path_worker.py --side ppocr|ours --task rec|det --yaml Y --workers N \
        --data D --labels L --dict F [--ppocr-src S] [--batches B] [--drop-op NAME ...]

``ppocr``: PaddleOCR's own ``ppocr.data.build_dataloader`` on the YAML (its checkout imported as is, run by the
Python that has its dependencies); ``ours``: the recipe's Train loader built from the same YAML through our
translator (compat.paddleocr / paddleocr_det), as ``recipes/ocr_rec.py -c YAML`` builds it. Prints one JSON line:
samples and batches in the timed window (the first batch, which holds the workers' start, is excluded), wall
seconds, CPU seconds of the process and its live children (the loader's workers) over that window, samples/s
and samples per CPU second (= samples/s per fully used core).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

import yaml

TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list:
    out = []
    task_dir = Path(f"/proc/{pid}/task")
    for task in task_dir.iterdir() if task_dir.is_dir() else ():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _cpu_of(pid: int) -> float:
    """utime + stime (s) of one process, all its threads."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def tree_cpu(pids_seen: dict) -> float:
    """CPU seconds of this process and every descendant alive now; ``pids_seen`` keeps each pid's last reading,
    so a worker that ended between two readings still counts up to its last one."""
    stack = [os.getpid()]
    while stack:
        pid = stack.pop()
        pids_seen[pid] = max(pids_seen.get(pid, 0.0), _cpu_of(pid))
        stack += _children(pid)
    return sum(pids_seen.values())


def ppocr_loader(a):
    sys.path.insert(0, a.ppocr_src)
    import paddle
    from ppocr.data import build_dataloader  # PaddleOCR's own, from its checkout

    cfg = yaml.safe_load(Path(a.yaml).read_text(encoding="utf-8"))
    g = cfg["Global"]
    g.update(use_gpu=False, distributed=False)
    if a.dict:
        g["character_dict_path"] = a.dict
    ds = cfg["Train"]["dataset"]
    ds.update(data_dir=a.data, label_file_list=[a.labels])
    ds["transforms"] = [op for op in ds["transforms"] if next(iter(op)) not in a.drop_op]
    for item in a.op_arg:  # "RecAug.tia_prob=0": an argument of one Train op
        (op_name, key), value = item.split("=", 1)[0].split("."), yaml.safe_load(item.split("=", 1)[1])
        for op in ds["transforms"]:
            if next(iter(op)) == op_name:
                op[op_name] = {**(op[op_name] or {}), key: value}
    cfg["Train"]["loader"].update(num_workers=a.workers)
    if a.batch:
        cfg["Train"]["loader"]["batch_size_per_card"] = a.batch
        if "sampler" in cfg["Train"]:
            cfg["Train"]["sampler"]["first_bs"] = a.batch
    # PaddleOCR merges Global's character_dict_path / max_text_length / use_space_char into each op (tools/program)
    for op in ds["transforms"]:
        name = next(iter(op))
        args = op[name] if isinstance(op[name], dict) else {}
        for k in ("character_dict_path", "use_space_char", "max_text_length"):
            if "LabelEncode" in name and k in g:
                args[k] = g[k]
        op[name] = args or op[name]
    log = logging.getLogger("ppocr_bench")
    log.addHandler(logging.StreamHandler(sys.stderr))
    errors = []
    log.error = lambda msg, *x, **k: errors.append(str(msg) % x if x else str(msg))  # its bad-sample lines
    paddle.set_device("cpu")
    return build_dataloader(cfg, "Train", paddle.CPUPlace(), log, seed=a.seed), errors, \
        (lambda b: int(b[0].shape[0]))


def ours_loader(a):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from paddle_recipes.config import load_config
    from paddle_recipes.data import build_loader
    from paddle_recipes.data.reproducible import build_batch_sampler
    from paddle_recipes.runtime.distributed import DistInfo

    o = {"Global.use_gpu": "false", "Global.seed": str(a.seed), "Train.dataset.data_dir": a.data,
         "Train.dataset.label_file_list": f"[{a.labels}]", "Train.loader.num_workers": str(a.workers),
         "Eval.dataset.data_dir": a.data, "Eval.dataset.label_file_list": f"[{a.labels}]"}
    if a.dict:
        o["Global.character_dict_path"] = a.dict
    if a.batch:
        o["Train.loader.batch_size_per_card"] = str(a.batch)
        if a.task == "rec":
            o["Train.sampler.first_bs"] = str(a.batch)
    info = DistInfo()
    if a.task == "rec":
        from paddle_recipes.recipes.ocr_rec import OcrRec as R
    else:
        from paddle_recipes.recipes.ocr_det import OcrDet as R
    cfg = load_config(a.yaml, [f"{k}={v}" for k, v in o.items()], R.Config, translators=R.config_translators)
    recipe = R(cfg, info)
    train_set = recipe.build_dataset("train")
    if a.task == "rec":
        loader = recipe.train_sampling[0]
        return loader, [], (lambda b: len(b["text"]))
    lc = cfg.Train.loader
    sampler = build_batch_sampler(train_set, lc.batch_size_per_card, info, shuffle=lc.shuffle, drop_last=lc.drop_last)
    loader = build_loader(train_set, sampler, lc, collate_fn=recipe.collate("train"), name="Train.loader")
    return loader, [], (lambda b: int(b["num_samples"][0]))


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--side", choices=("ppocr", "ours"), required=True)
    p.add_argument("--task", choices=("rec", "det"), required=True)
    p.add_argument("--yaml", required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--data", required=True)
    p.add_argument("--labels", required=True)
    p.add_argument("--dict", default="")
    p.add_argument("--ppocr-src", default="")
    p.add_argument("--batch", type=int, default=0, help="batch size (rec: first_bs); 0 = the YAML's")
    p.add_argument("--batches", type=int, default=0, help="stop after this many batches (0 = one epoch)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--drop-op", nargs="*", default=[], help="PaddleOCR side: Train transforms left out")
    p.add_argument("--direct", action="store_true", help="time dataset items + collate in this thread (CPU time of "
                   "this process), without the DataLoader")
    p.add_argument("--op-arg", nargs="*", default=[], help="PaddleOCR side: OP.key=value for a Train op")
    p.add_argument("--profile", default="", help="instead of timing: a cProfile of the dataset items and collate, run in this thread, written here")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    t_build = time.perf_counter()
    loader, errors, count = (ppocr_loader if a.side == "ppocr" else ours_loader)(a)
    build_s = time.perf_counter() - t_build
    if a.profile:  # the loader's own code path, in this thread (cProfile sees one thread): sampler, items, collate
        import cProfile

        prof = cProfile.Profile()
        collate = loader.collate_fn or (lambda x: x)
        n = 0
        prof.enable()
        for b, keys in enumerate(loader.batch_sampler):
            if a.batches and b >= a.batches:
                break
            collate([loader.dataset[k] for k in keys])
            n += len(keys)
        prof.disable()
        prof.dump_stats(a.profile)
        print(json.dumps({"side": a.side, "task": a.task, "profiled_samples": n, "profile": a.profile}), flush=True)
        os._exit(0)
    if a.direct:  # the same items and collate, in this thread, no DataLoader machinery: the transforms' own CPU
        collate = loader.collate_fn
        if collate is None:  # PaddleOCR's loaders: paddle's default collate, as its DataLoader uses
            from paddle.io.dataloader.collate import default_collate_fn as collate
        n = batches = 0
        cpu0, t0 = time.process_time(), time.perf_counter()
        for b, keys in enumerate(loader.batch_sampler):
            if b == 0:  # warm-up batch
                [loader.dataset[k] for k in keys]
                cpu0, t0 = time.process_time(), time.perf_counter()
                continue
            collate([loader.dataset[k] for k in keys])
            n, batches = n + len(keys), batches + 1
            if a.batches and batches >= a.batches:
                break
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
        print(json.dumps({"side": a.side, "task": a.task, "workers": "direct", "samples": n, "batches": batches,
                          "wall_s": wall, "cpu_s": cpu, "samples_per_s": n / wall, "samples_per_cpu_s": n / cpu,
                          "build_s": build_s}), flush=True)
        os._exit(0)
    seen: dict = {}
    n = batches = 0
    t0 = c0 = None
    wall = cpu = 0.0
    shapes = set()
    for i, batch in enumerate(loader):
        if i == 0:  # the workers' start and first batch: outside the window
            t0, c0 = time.perf_counter(), tree_cpu(seen)
            continue
        n += count(batch)
        batches += 1
        img = batch[0] if isinstance(batch, (list, tuple)) else batch["image"]
        shapes.add(tuple(int(s) for s in img.shape[1:]))
        # read here, per batch: leaving the loop early ends a loader's workers (ours at once), and a worker that
        # is gone cannot be read any more
        wall, cpu = time.perf_counter() - t0, tree_cpu(seen) - c0
        if a.batches and batches >= a.batches:
            break
    print(json.dumps({"side": a.side, "task": a.task, "workers": a.workers, "samples": n, "batches": batches,
                      "wall_s": wall, "cpu_s": cpu, "samples_per_s": n / wall if wall else 0.0,
                      "samples_per_cpu_s": n / cpu if cpu else 0.0, "build_s": build_s,
                      "shapes": sorted(shapes), "load_errors": len(errors), "first_error": errors[:1]}), flush=True)
    os._exit(0)  # do not wait on the loaders' worker shutdown (not timed either way)


if __name__ == "__main__":
    main()
