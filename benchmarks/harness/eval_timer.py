"""Our eval path, timed as harness/ppocr_eval_timer.py times PaddleOCR's ``tools/eval.py``.

    python benchmarks/harness/eval_timer.py det|rec OUT.json [--replay DIR KEY | --save DIR KEY] -c Y.yml -o K=V ...

Builds our recipe (OcrDet / OcrRec) from the same PaddleOCR YAML and -o keys, the eval loader and the model with
the eval weights (``load_for_inference``, as ``--mode eval`` does), then times ``recipe.evaluate_model(model,
loader)`` (``total_s``: loader iteration, forward, post-process, metric) with a forward pre-hook and post-hook on
the model's top layer (``forward_s``; ppocr_eval_timer.add_forward_hooks, the same hooks as PaddleOCR's side).
``--replay DIR KEY``: the model is ppocr_eval_timer.make_replay(DIR, KEY) instead (no weights loaded).
``--save DIR KEY``: the real model's output of call i is saved to DIR/NNNNN.npy (KEY "maps": det's probability
map; "-": rec's [B, T, C] scores, as probabilities: softmax applied when the model gives logits), for --replay.
Det: the post-process (``post_s``) and the per-image metric (``metric_s``) are timed too, and the boxes kept, as on
PaddleOCR's side; rec: the CTC decode (``post_s``, texts kept) and RecMetric.update (``metric_s``). Writes OUT.json: the seconds, the images seen at the forward, the metrics evaluate_model returned
and the boxes per image.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.harness.ppocr_eval_timer import TEXTS, T, Timed, add_forward_hooks, boxes_as_lists, make_replay  # noqa: E402


def recipe_class(task: str):
    if task == "det":
        from paddle_recipes.recipes.ocr_det import OcrDet
        return OcrDet
    if task == "rec":
        from paddle_recipes.recipes.ocr_rec import OcrRec
        return OcrRec
    raise SystemExit(f"eval_timer: task must be det or rec, got {task!r}")


def add_save_hook(model, folder: Path, key: str | None) -> None:
    """Save the output of every call of `model` to folder/NNNNN.npy (see the module docstring)."""
    from paddle_recipes.tasks.ocr_rec.evaluate import outputs_logits
    from paddle_recipes.tasks.ocr_rec.postprocess import softmax_np

    folder.mkdir(parents=True, exist_ok=True)
    calls = [0]
    logits = key is None and outputs_logits(model)

    def save(layer, inputs, outputs):
        out = (outputs if key is None else outputs[key]).astype("float32").numpy()
        np.save(folder / f"{calls[0]:05d}.npy", softmax_np(out) if logits else out)
        calls[0] += 1

    model.register_forward_post_hook(save)


def timed_update(cls) -> None:
    """cls.update's seconds added to T["metric_s"]."""
    update = cls.update

    def timed(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return update(self, *a, **k)
        finally:
            T["metric_s"] += time.perf_counter() - t0

    cls.update = timed


def main(argv) -> dict:
    task, out, rest = argv[0], Path(argv[1]), list(argv[2:])
    mode = None
    if rest[:1] in (["--replay"], ["--save"]):
        mode, folder, key = rest[0], rest[1], (None if rest[2] == "-" else rest[2])
        rest = rest[3:]
    if not rest or rest[0] != "-c":
        raise SystemExit("eval_timer: usage: det|rec OUT.json [--replay|--save DIR KEY] -c Y.yml [-o KEY=VALUE ...]")
    yaml_path, overrides = rest[1], [a for a in rest[2:] if a != "-o"]
    from paddle_recipes.config import load_config
    from paddle_recipes.runtime.distributed import DistInfo

    cls = recipe_class(task)
    cfg = load_config(yaml_path, overrides, cls.Config, translators=cls.config_translators)
    recipe = cls(cfg, DistInfo())
    loader = recipe.eval_loader(recipe.build_dataset("eval"))
    if mode == "--replay":
        model = make_replay(folder, key)
    else:
        model, _ = recipe.load_for_inference()
        if mode == "--save":
            add_save_hook(model, Path(folder), key)
    add_forward_hooks(model)
    if task == "det":  # post-process and metric timed (and the boxes kept) as on PaddleOCR's side
        from paddle_recipes.tasks.ocr_det import step

        recipe.cfg.PostProcess = Timed(recipe.cfg.PostProcess, "post_s", record=True)
        step.evaluate_image = Timed(step.evaluate_image, "metric_s")
    else:  # rec: the CTC decode (texts kept) and the metric's updates, as PaddleOCR's post-process and metric calls
        from paddle_recipes.tasks.ocr_rec import evaluate

        evaluate.ctc_greedy_decode = Timed(evaluate.ctc_greedy_decode, "post_s", record=True)
        timed_update(evaluate.RecMetric)
    t0, c0 = time.perf_counter(), time.process_time()
    metrics = recipe.evaluate_model(model, loader)
    T["total_s"], T["total_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    rec = {**T, "metric": {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))},
           "boxes": boxes_as_lists(), "texts": TEXTS}
    out.write_text(json.dumps(rec), encoding="utf-8")
    return rec


if __name__ == "__main__":
    main(sys.argv[1:])
