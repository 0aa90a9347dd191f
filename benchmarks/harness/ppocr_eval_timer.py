"""Run PaddleOCR's own ``tools/eval.py`` unmodified, with timers around its parts (run by PaddleOCR's python).

    PPOCR_PYTHON benchmarks/harness/ppocr_eval_timer.py SRC OUT.json [--replay DIR KEY] -c Y.yml -o KEY=VALUE ...

SRC is a PaddleOCR checkout (a scratch copy: its files are run as they are, nothing is edited; this process
chdirs there as tools/eval.py expects). Before tools/eval.py runs (runpy, as ``__main__``), four of the names it
imports are wrapped, so what it builds is timed without touching its code:
- ``ppocr.modeling.architectures.build_model``: the model gets a forward pre-hook and post-hook on its top layer
  (``forward_s``: the model call, as ``eval_timer.FORWARD_HOOKS`` does on our side; eager CPU is synchronous);
- ``ppocr.postprocess.build_post_process`` / ``ppocr.metrics.build_metric``: their objects' ``__call__`` timed
  (``post_s`` / ``metric_s``; other attributes pass through);
- ``tools.program.eval``: the whole eval loop (``total_s``: loader iteration, forward, post-process, metric).
``--replay DIR KEY`` (KEY: maps for det, - for rec): the model built is replaced by ``ReplayModel(DIR)``: its call i returns the outputs saved in
DIR/NNNNN.npy (the real network's, written once by eval_vs_paddleocr.py), after checking the input's shape, so
both sides post-process the very same maps with the forward's cost taken out (a file read, still timed as forward).
Writes OUT.json: those seconds, the images seen (batch sizes at the forward), the metric tools/eval.py printed and
the boxes its post-process gave per image (``boxes``, int point lists; det) or the texts per line (``texts``; rec).
Imports only the standard library, paddle and PaddleOCR: our package is not on this python's path.
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import time

T = {"forward_s": 0.0, "post_s": 0.0, "metric_s": 0.0, "total_s": 0.0, "images": 0, "forward_calls": 0,
     "forward_cpu_s": 0.0, "total_cpu_s": 0.0}


BOXES: list = []  # per image, the post-process's points (det), dumped to OUT.json after the run
TEXTS: list = []  # per line, the post-process's text (rec: CTC decode), dumped to OUT.json after the run


class Timed:
    """Proxy whose calls add their seconds to T[key]; attributes pass through to the wrapped object. With
    ``record``, the "points" of every result (det post-process: a list of per-image dicts) are kept in BOXES, the
    texts of a rec decode (a list of (text, score), or PaddleOCR's (that list, labels) when called with labels) in
    TEXTS."""

    def __init__(self, obj, key, record=False):
        self.__dict__["_obj"], self.__dict__["_key"], self.__dict__["_record"] = obj, key, record

    def __call__(self, *a, **k):
        t0 = time.perf_counter()
        try:
            out = self._obj(*a, **k)
        finally:
            T[self._key] += time.perf_counter() - t0
        if self._record:
            got = out[0] if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], list) else out
            if isinstance(got, list):
                BOXES.extend(r["points"] for r in got if isinstance(r, dict) and "points" in r)
                TEXTS.extend(r[0] for r in got if isinstance(r, tuple) and r and isinstance(r[0], str))
        return out

    def __getattr__(self, name):
        return getattr(self._obj, name)

    def __setattr__(self, name, value):
        setattr(self._obj, name, value)


def make_replay(folder: str, key: str | None):
    """A paddle Layer whose call i returns {key: tensor of folder/NNNNN.npy} (det: key "maps") or the tensor itself
    (key None: rec's [B, T, C] probabilities); ValueError when the input's batch size (and, for det, H x W) differs
    from the saved output's: the two sides must feed the same images in the same order."""
    import numpy as np
    import paddle

    class Replay(paddle.nn.Layer):
        outputs_probabilities = True  # rec: the saved outputs are the eval-mode softmax, as PaddleOCR's heads give

        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x, data=None):
            path = os.path.join(folder, f"{self.calls:05d}.npy")
            self.calls += 1
            if not os.path.exists(path):
                raise ValueError(f"replay: {path} missing: more forward calls than saved outputs")
            out = np.load(path)
            same = out.shape[0] == x.shape[0] and (key is None or tuple(out.shape[-2:]) == tuple(x.shape[-2:]))
            if not same:
                raise ValueError(f"replay: call {self.calls - 1} input {list(x.shape)} does not fit the saved "
                                 f"output {list(out.shape)} ({path}): not the same images in the same order")
            t = paddle.to_tensor(out)
            return t if key is None else {key: t}

    return Replay()


def add_forward_hooks(model):
    start = []

    def pre(layer, inputs):
        start.append((time.perf_counter(), time.process_time()))
        x = inputs[0] if inputs else None
        T["images"] += int(x.shape[0]) if hasattr(x, "shape") else 0
        T["forward_calls"] += 1

    def post(layer, inputs, outputs):
        t0, c0 = start.pop()
        T["forward_s"] += time.perf_counter() - t0
        T["forward_cpu_s"] += time.process_time() - c0

    model.register_forward_pre_hook(pre)
    model.register_forward_post_hook(post)
    return model


def boxes_as_lists() -> list:
    """BOXES as plain int lists (points rounded by the post-process already)."""
    return [[[[int(round(float(v))) for v in pt] for pt in box] for box in img] for img in BOXES]


def main(argv) -> None:
    src, out = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    argv = list(argv)
    replay = None
    if len(argv) > 3 and argv[2] == "--replay":
        replay = (os.path.abspath(argv[3]), argv[4] if argv[4] != "-" else None)
        del argv[2:5]
    os.chdir(src)
    sys.path.insert(0, src)
    import ppocr.metrics as M
    import ppocr.modeling.architectures as A
    import ppocr.postprocess as P
    import tools.program as program

    build_model, build_post, build_metric, run_eval = A.build_model, P.build_post_process, M.build_metric, program.eval
    A.build_model = lambda *a, **k: add_forward_hooks(make_replay(*replay) if replay else build_model(*a, **k))
    P.build_post_process = lambda *a, **k: Timed(build_post(*a, **k), "post_s", record=True)
    M.build_metric = lambda *a, **k: Timed(build_metric(*a, **k), "metric_s")
    metric = {}

    def timed_eval(*a, **k):
        t0, c0 = time.perf_counter(), time.process_time()
        res = run_eval(*a, **k)
        T["total_s"] += time.perf_counter() - t0
        T["total_cpu_s"] += time.process_time() - c0
        metric.update({k_: float(v) for k_, v in res.items() if isinstance(v, (int, float))})
        return res

    program.eval = timed_eval
    sys.argv = [os.path.join(src, "tools", "eval.py")] + list(argv[2:])
    runpy.run_path(sys.argv[0], run_name="__main__")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({**T, "metric": metric, "boxes": boxes_as_lists(), "texts": TEXTS}, fh)


if __name__ == "__main__":
    main(sys.argv[1:])
