"""The `Recipe` base: modes train / eval / predict / export for every task, written once.

A task subclasses Recipe and declares only its config schema, data, model, train step, evaluation
and input spec::

    class OcrRec(Recipe):
        name, Config, default_config, main_metric = "ocr_rec", RecConfig, "recipes/configs/ocr_rec.yml", "acc"
        def build_dataset(self, split): ...          # "train" | "eval"
        def build_model(self): ...
        def train_step(self, model, batch): ...      # -> {"loss": Tensor, **scalars}
        def evaluate_model(self, model, loader): ... # -> {metric: float}, reduced over ranks
        def input_spec(self): ...                    # export
        def parity_inputs(self, model): ...          # export: {input name: np.ndarray}
        def predict_model(self, model): ...          # predict mode body

    if __name__ == "__main__":
        OcrRec.cli()                                 # -c / -o / --mode; user errors -> one line, exit 2

Provided here: the weights of eval / predict / export (`weights_source`: Global.weights > Global.checkpoints >
Global.pretrained_model > output_dir/checkpoints `best` > `latest`, docs/weights.md), init weights for training (Global.pretrained_model / Global.weights, loaded strictly), the eval loader
(each rank scores the shard rank::world_size), cross-rank skip merging, rank-0 data generation (one
strategy: rank 0 builds, then writes a fingerprint file that the other ranks poll; no collective, so a
minutes-long generation cannot time out a GLOO barrier) and the export-parity report (dygraph vs
Paddle Inference).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np
import paddle

from ..runtime import distributed as dist_utils
from ..assets import resolve_path
from ..checkpoint.format import LATEST, CheckpointError
from ..cli import exit_on_user_error, run_recipe
from ..data import DataError, build_loader
from ..formats.ppocr_logs import PPOCREvalLog
from ..nn.reparam import fuse_in_place, passthrough_bns
from ..checkpoint.serialization import save_safetensors
from ..export import create_predictor, export_model, predict as run_predictor
from ..train.build import Run, build_training, count_params
from ..train.trainer import default_batch_size
from ..weights.bn_calibration import calibrate_at_start
from ..weights.load import check_finite_weights, load_weights
from ..weights.pretrained import import_inference, load_pretrained, resolve_weights_file
from ..weights.policy import StartingWeights, StartPlan, form_at, init_source
from ..weights.released import to_form
from .preflight import inference_weights_problem, named_weights

logger = logging.getLogger(__name__)
T = TypeVar("T")
READY_FILE = ".ready.json"


def prepare_on_rank0(root: str | os.PathLike, fingerprint: dict, build: Callable[[], T], info,
                     timeout_s: float = 7200, poll_s: float = 1.0) -> T:
    """Rank 0 runs build() (which must cache its result), then writes root/.ready.json = fingerprint;
    the other ranks poll that file until it matches, then run build() themselves (now a cache hit)."""
    root = Path(root)
    ready = root / READY_FILE
    want = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))
    if info.is_main:
        result = build()
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".ready.")
        with os.fdopen(fd, "w") as f:
            json.dump(want, f, sort_keys=True)
        os.replace(tmp, ready)
        return result
    t0 = time.time()
    while True:
        try:
            if json.loads(ready.read_text()) == want:
                break
        except (OSError, ValueError):
            pass
        if time.time() - t0 > timeout_s:
            raise TimeoutError(f"waited {timeout_s:.0f} s for rank 0 to prepare {root}")
        time.sleep(poll_s)
    return build()


def merge_skips(stats: list, info, output_dir: str | os.PathLike | None = None) -> dict:
    """Skip statistics merged over ranks, one log line per split; writes skipped.json (rank 0).

    stats: objects with `.name`, `rank_state()` (picklable: what this rank saw), `merged(states)` (the
    union over ranks, a stats object of the same kind), `report()` (a JSON-able dict) and `summary()`
    (one log line); e.g. data.skips.SkipStats. Returns {split: report}. Collective when
    world_size > 1: call on every rank.
    """
    merged = {}
    for st in stats:
        mine = st.rank_state()
        gathered: list = []
        if info.world_size > 1:
            paddle.distributed.all_gather_object(gathered, mine)
        else:
            gathered = [mine]
        union = st.merged(gathered)
        merged[st.name] = union.report()
        if info.is_main:
            logger.info("data summary: %s", union.summary())
    if info.is_main and output_dir is not None:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "skipped.json").write_text(json.dumps(merged, indent=1, ensure_ascii=False))
    return merged


def _as_list(out) -> list[np.ndarray]:
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() if isinstance(o, paddle.Tensor) else np.asarray(o) for o in outs]


class Recipe:
    """Base of every task recipe. Class attributes: name, Config (dataclass schema, TrainingConfig-shaped),
    default_config (checkout-relative path, found in the package when installed), main_metric (eval key
    that picks `best`, higher is better), modes, user_errors (exception types the CLI prints as one line),
    eval_autocast (evaluate under amp.autocast, for O2 fp16 weights), config_translators (readers of foreign
`-c` files such as PaddleDetection YAMLs, see config.load_config; notes logged once on rank 0)."""

    name: str = "recipe"
    Config: type = object
    default_config: str | None = None
    main_metric: str | None = None
    modes: tuple = ("train", "eval", "predict", "export")
    user_errors: tuple = ()
    eval_autocast: bool = False
    output_names: tuple = ()
    parity_after_deploy: bool = False  # export parity against deploy_model's outputs (it changes them, e.g. softmax)
    config_translators: tuple = ()  # foreign -c files: f(raw dict, path) -> (config dict, notes) | None

    def __init__(self, cfg, info):
        self.cfg, self.info = cfg, info
        self.log = logging.getLogger(self.name)
        self.training = False  # train() sets it: eval loaders then leave the trainer's heap alone (eval_loader)

    # ------------------------------------------------------------------ hooks a task declares
    def check(self) -> None:
        """Cross-section validation beyond types; raise ConfigError."""

    def build_dataset(self, split: str):
        """The dataset of split "train" or "eval"."""
        raise NotImplementedError

    def collate(self, split: str) -> Callable | None:
        return None

    def build_model(self) -> paddle.nn.Layer:
        raise NotImplementedError

    def train_step(self, model, batch) -> dict:
        raise NotImplementedError

    def evaluate_model(self, model, loader) -> dict:
        """Metrics of `model` (unwrapped) on this rank's shard `loader`, reduced over ranks."""
        raise NotImplementedError

    def evaluate_in_training(self, model, loader) -> dict:
        """The eval of train mode (the trainer has swapped the EMA weights in when EMA is on): evaluate_model; a
        mixin may score other weights here (e.g. Global.finetune_merge's merged ones), which then pick `best`."""
        return self.evaluate_model(model, loader)

    def cur_metric(self, metrics: dict) -> dict:
        """What the `cur metric, k: v, ...` / `best metric, ...` eval lines show of evaluate_model's metrics
        (default: all of them; OCR shows PaddleOCR's acc, norm_edit_dis, fps)."""
        return dict(metrics)

    def batch_size(self, batch) -> int:
        return default_batch_size(batch)

    def skip_stats(self) -> list:
        """SkipStats-like objects of the datasets built so far (merged over ranks by `skipped`)."""
        return []

    def skipped(self) -> dict:
        return merge_skips(self.skip_stats(), self.info, self.cfg.Global.output_dir)

    def callbacks(self) -> list:
        return []

    def describe(self, run: Run) -> str:
        """One log line about the run (model, data sizes) before training."""
        return f"{count_params(run.model) / 1e6:.2f}M params, {run.steps_per_epoch} steps/epoch"

    def input_spec(self) -> list:
        raise NotImplementedError

    def parity_inputs(self, model) -> dict:
        """{input name: np.ndarray} compared dygraph vs Paddle Inference in export mode."""
        raise NotImplementedError

    def deploy_model(self, model) -> tuple[paddle.nn.Layer, dict]:
        """The model to export (e.g. re-parameterized) and report entries about that step."""
        return model, {}

    def export_files(self, deploy, prefix: str):
        """Write the inference files of `deploy` for `prefix`; returns (export.ExportedModel, report entries)."""
        return export_model(deploy, self.input_spec(), prefix), {}

    def export_extras(self, ref: list, out: list, inputs: dict, out_dir: Path) -> dict:
        """Task-level parity checks and files next to the export (e.g. decoded text equal)."""
        return {}

    def predict_model(self, model) -> list:
        raise NotImplementedError(f"{self.name} has no predict mode")

    # ------------------------------------------------------------------ shared parts
    def checkpoint_root(self) -> Path:
        """Where training writes this recipe's checkpoints (output_dir/checkpoints): eval's default weights."""
        return Path(self.cfg.Global.output_dir) / "checkpoints"

    def named_weights(self) -> list[tuple[str, str]]:
        """(key, path) of the Global weights keys that are set, in preflight.WEIGHTS_KEYS order (empty, null and "auto" are
        unset)."""
        g = self.cfg.Global
        return named_weights(g.weights, g.checkpoints, g.pretrained_model)  # preflight picks by the same rule

    def weights_source(self) -> tuple[str, str]:
        """(path, where it came from) of the eval / predict / export weights, one rule for every recipe and mode:
        the first set of Global.weights, Global.checkpoints, Global.pretrained_model ("auto" counts as unset),
        else checkpoint_root()/best, else that root's `latest`. Global.resume is not in it: it says where
        training continues from. Nothing found is a CheckpointError; a named path is never replaced by another."""
        g = self.cfg.Global
        named = self.named_weights()
        if named:
            key, value = named[0]
            if value.startswith(("http://", "https://")):
                raise CheckpointError(f"Global.{key}={value} is a URL: download it and pass the local file, or unset "
                                      f"it (-o Global.{key}=) to use output_dir/checkpoints")
            return value, f"Global.{key}={value}"
        root = self.checkpoint_root()
        if g.resume not in ("", "auto"):
            self.log.info("Global.resume=%s is where training continues from, not the weights used here", g.resume)
        if (root / "best").exists():
            return str(root / "best"), f"{root}/best (no Global.weights / checkpoints / pretrained_model set)"
        if (root / LATEST).exists():
            return str(root), f"{root}/{LATEST} (no Global.weights / checkpoints / pretrained_model set, no best)"
        raise CheckpointError(f"no weights: Global.weights, Global.checkpoints and Global.pretrained_model are unset "
                              f"and {root} holds no checkpoint (neither best nor {LATEST}); train first or name the "
                              "weights, e.g. -o Global.weights=path/to/model.pdparams")

    def load_for_inference(self, fuse: bool | None = None) -> tuple[paddle.nn.Layer, str]:
        """The model with the weights of weights_source(), in eval mode, and the file loaded (logged in one line).
        Weights that do not fit, or hold inf/nan, are a CheckpointError naming the file. ``fuse`` (None =
        Global.fuse_for_inference, default on): re-parameterize the rep blocks into their deploy convs
        (nn.reparam.fuse_in_place: the same eval-mode outputs up to float32 rounding, several times faster);
        export passes False (its weights file holds the training form; deploy_model fuses a copy)."""
        source, origin = self.weights_source()
        self.check_weights_files(source, origin)  # a bad inference model: one line before the network is built
        model = self.build_model()
        try:
            src = self.load_inference_weights(model, source)
        except CheckpointError as exc:
            raise CheckpointError(f"{origin}: {exc}") from None
        check_finite_weights(dist_utils.unwrap(model).state_dict(), src)  # whichever loader read the file
        self.log.info("weights: %s (from %s)", src, origin)
        model.eval()
        if self.cfg.Global.fuse_for_inference if fuse is None else fuse:
            blocks = fuse_in_place(dist_utils.unwrap(model))
            if blocks:
                self.log.info("fused %d rep blocks for inference (Global.fuse_for_inference=false keeps the "
                              "training form)", len(blocks))
        return model, src

    def check_weights_files(self, path: str, origin: str = "") -> None:
        """When `path` is an inference model: its files checked as the import will read them, the tensors' data
        skipped (inference_files.check_inference_files): a bad file is one line within milliseconds, not after the
        network's build (seconds). Other weights are checked as they load. CheckpointError ("<origin>: <why>")."""
        problem = inference_weights_problem(path, origin)  # what recipes.preflight ran before paddle's import
        if problem is not None:
            raise CheckpointError(problem)

    def load_inference_weights(self, model, source: str) -> str:
        """Strictly load the weights of eval/predict/export: a .pdparams / .safetensors file, a prefix without extension
        (PaddleOCR's ``.../best_accuracy``), one of our checkpoint folders/roots (EMA weights when
        Global.use_ema_weights) or a PaddleOCR inference model (folder or prefix, pretrained.import_inference);
        returns the source loaded. Weights in the released form (a Global.finetune_released run: fused rep blocks,
        no GTC branch) get the model built in that form first. Override to accept a foreign checkpoint format."""
        classes = self.class_map(source)
        if import_inference(model, source, self.inference_deploy, for_training=False, dictionary=self.label_set(),
                            logger=self.log, classes=classes) is not None:
            return source
        prefer_ema = self.cfg.Global.use_ema_weights
        file = resolve_weights_file(source, prefer_ema, what="weights")
        self.match_weights_form(model, file, prefer_ema)
        return load_weights(model, file, prefer_ema=prefer_ema, classes=classes, logger=self.log)

    def match_weights_form(self, model, path, prefer_ema: bool = True) -> None:
        """Build `model` in the form the weights at `path` hold (weights.policy.form_at; logged when not the training form)."""
        form = form_at(model, path, prefer_ema)
        if form is not None and form.released:
            to_form(dist_utils.unwrap(model), form)
            self.log.info("%s holds the released form (%s): the model is built in that form", path, form.describe())

    def label_set(self) -> str:
        """What the model's output classes are (e.g. its dict file), for weight-loading log lines; "" = not said."""
        return ""

    def class_map(self, path: str):
        """The characters of the weights at `path` and of this run (weights.dict_remap.ClassMap), so that the class
        rows follow characters when weights load; None (default) = rows by position (a task without a dict)."""
        return None

    def checkpoint_parts(self) -> dict:
        """name -> object (state_dict / set_state_dict) this recipe adds to every checkpoint (default: none)."""
        return {}

    def inference_deploy(self, model) -> tuple:
        """(exported net, input spec) of `model` as export mode writes it: how a PaddleOCR inference model given
        as weights is matched to our network (formats.ppocr_import)."""
        return self.deploy_model(model)[0], self.input_spec()

    def load_pretrained(self, model, path: str):
        """Init weights (PaddleOCR's Global.pretrained_model): a .pdparams file, a path prefix without
        extension, or a checkpoint folder/root (pretrained.load_pretrained). Strict, except the tensors
        under the model's class_dependent_params() (output layers sized by the label set), which are
        re-initialised when their shape differs; the log lists what was loaded, re-initialised, skipped. Returns the
        report (LoadReport / ImportReport: its kept_init names the tensors left at their initial values)."""
        if path.startswith(("http://", "https://")):
            raise CheckpointError(f"init weights {path} is a URL: download it and pass the local file")
        return load_pretrained(model, path, prefer_ema=self.cfg.Global.use_ema_weights, logger=self.log,
                               deploy=self.inference_deploy, dictionary=self.label_set(), classes=self.class_map(path))

    def init_weights_source(self) -> str:
        """Train mode's init weights: Global.pretrained_model or Global.weights ("" = none; both: an error)."""
        return init_source(self.cfg.Global)

    def init_weights(self, model) -> StartPlan:
        """Train mode: the starting weights and the form trained (Global.finetune_released, freeze_bn_stats):
        weights.policy.StartingWeights, loading through load_pretrained. Before the optimizer is built."""
        return StartingWeights(self.cfg.Global, load=self.load_pretrained, log=self.log).apply(model)

    def calibrate_imported_bn(self, model, train_set) -> dict | None:
        """Train mode: an imported inference model's un-fused BNs are calibrated on Global.calibrate_bn_batches
        batches per process of `train_set` (bn_calibration; summed over ranks, data order unchanged)."""
        if not passthrough_bns(model):  # not an imported inference model
            return None

        def reduce(vec):
            return dist_utils.all_reduce_sum(paddle.to_tensor(vec, dtype="float64")).numpy()

        g = self.cfg.Global
        return calibrate_at_start(model, train_set, num_batches=g.calibrate_bn_batches,
                                  batch_size=self.cfg.Train.loader.batch_size_per_card, collate=self.collate("train"),
                                  seed=g.seed, rank=self.info.rank, world_size=self.info.world_size,
                                  reduce=reduce if self.info.world_size > 1 else None, log=self.log)

    def export_weights(self, model, out_dir: Path) -> dict:
        """Export.safetensors: `model`'s weights as out_dir/model.safetensors (rank 0); the report entry."""
        if not self.cfg.Export.safetensors:
            return {}
        path = Path(out_dir) / "model.safetensors"
        if self.info.is_main:
            save_safetensors(dist_utils.unwrap(model).state_dict(), path)
        return {"safetensors": str(path)}

    def eval_loader(self, dataset):
        """This rank's shard (rank::world_size) of `dataset`, in order; metrics are reduced by the task. In a training
        run an eval loader without workers does not keep this process's heap (Eval.loader.allocator_keep_mb applies
        to its workers): the trainer's RSS would keep the heap's high-water mark (LoaderConfig.allocator_keep_mb)."""
        lc = self.cfg.Eval.loader
        shard = paddle.io.Subset(dataset, list(range(self.info.rank, len(dataset), self.info.world_size)))
        sampler = paddle.io.BatchSampler(shard, batch_size=lc.batch_size_per_card, shuffle=False, drop_last=False)
        return build_loader(shard, sampler, lc, collate_fn=self.collate("eval"), name="Eval.loader",
                            keep_heap_here=not self.training)

    def train_loader(self, train_set):
        """The train loader, or None (default): build_training batches `train_set` by Train.loader."""
        return None

    def prepare_data(self, root, fingerprint: dict, build: Callable[[], T]) -> T:
        return prepare_on_rank0(root, fingerprint, build, self.info)

    # ------------------------------------------------------------------ modes
    def train(self) -> dict:
        self.training = True
        self.check_weights_files(self.init_weights_source())  # a conflict or a bad file: before any data is read
        train_set = self.build_dataset("train")
        eval_loader = self.eval_loader(self.build_dataset("eval"))
        model = self.build_model()
        start = self.init_weights(model)
        self.calibrate_imported_bn(model, train_set)
        run = build_training(self.cfg, model, train_set, step=self.train_step, info=self.info,
                             loader=self.train_loader(train_set),
                             eval_fn=lambda m: self.evaluate_in_training(dist_utils.unwrap(m), eval_loader),
                             collate=self.collate("train"), callbacks=self.callbacks(), main_metric=self.main_metric,
                             batch_size_fn=self.batch_size, skipped=self.skipped, eval_autocast=self.eval_autocast,
                             eval_log=PPOCREvalLog(self.cur_metric), state_objects=self.checkpoint_parts(),
                             freeze_bn=start.freeze_bn_stats)
        self.log.info("%s: %s, world %d, EMA %s", self.name, self.describe(run), self.info.world_size,
                      "on" if run.ema is not None else "off")
        return run.fit()

    def eval(self) -> dict:
        loader = self.eval_loader(self.build_dataset("eval"))
        model, src = self.load_for_inference()
        metrics = dict(self.evaluate_model(model, loader))
        metrics.update(weights=src, skipped=merge_skips(self.skip_stats(), self.info))
        if self.info.is_main:
            print(json.dumps(metrics, ensure_ascii=False, default=str))
        return metrics

    def predict(self) -> list:
        """predict_model's results; none (every input unreadable, or an empty folder) is a DataError (exit 2)."""
        model, _ = self.load_for_inference()
        results = self.predict_model(model)
        if not results:
            raise DataError(f"{self.name} predict: no input could be read in {self.cfg.Predict.images!r} "
                            f"(the skipped files are listed above)")
        return results

    def export(self) -> dict:
        """Export the (EMA) model (export_files; default jit.save at Export.out_prefix, "" = output_dir/inference/model)
        and compare Paddle Inference with dygraph on parity_inputs(); writes <export folder>/export_report.json."""
        model, src = self.load_for_inference(fuse=False)
        prefix = self.cfg.Export.out_prefix or str(Path(self.cfg.Global.output_dir) / "inference" / "model")
        weights_file = self.export_weights(model, Path(prefix).parent)  # before deploy_model may fuse layers
        inputs = self.parity_inputs(model)
        def outputs(net):
            with paddle.no_grad():
                return _as_list(net(*[paddle.to_tensor(v) for v in inputs.values()]))

        ref = None if self.parity_after_deploy else outputs(model)  # before deploy_model may fuse layers in place
        deploy, report = self.deploy_model(model)
        ref = ref if ref is not None else outputs(deploy)
        exp, entries = self.export_files(deploy, prefix)
        report.update(entries)
        pred = create_predictor(exp.prefix, device="gpu" if paddle.is_compiled_with_cuda() else "cpu", threads=2)
        out = run_predictor(pred, inputs)
        diffs = [float(np.abs(a - b).max()) for a, b in zip(out, ref)]
        report = {"prefix": exp.prefix, "format": exp.format, "weights": src, **weights_file, **report,
                  "max_abs_diff": max(diffs)}
        report.update({f"max_abs_diff_{n}": d for n, d in zip(self.output_names, diffs)})
        out_dir = Path(exp.prefix).parent
        report.update(self.export_extras(ref, out, inputs, out_dir), **exp.sizes())
        (out_dir / "export_report.json").write_text(json.dumps(report, indent=1, default=str))
        if self.info.is_main:
            print(json.dumps(report, default=str))
        return report

    # ------------------------------------------------------------------ command line
    @classmethod
    def main(cls, argv: list[str] | None = None) -> Any:
        """Parse -c/-o/--mode, set up distributed + logging, run the mode; returns its result."""
        def run_mode(mode):
            def go(cfg, info):
                recipe = cls(cfg, info)
                recipe.check()
                return getattr(recipe, mode)()
            return go

        default = resolve_path(cls.default_config) if cls.default_config else None
        return run_recipe(cls.name, cls.Config, {m: run_mode(m) for m in cls.modes}, default_config=default,
                          argv=argv, description=(cls.__doc__ or cls.name).strip().splitlines()[0],
                          translators=cls.config_translators)

    @classmethod
    def cli(cls, argv: list[str] | None = None) -> None:
        """Console entry point: main(), with user errors printed as one line (exit 2)."""
        exit_on_user_error(lambda: cls.main(argv), cls.name, extra_errors=cls.user_errors)
