"""Benchmark rows as data: each row is one configuration run in its own fresh process group.

A row runs either the OCR recipe (``recipes/ocr_rec.py``, knobs are ``-o`` config overrides) or
the throughput worker (``benchmarks/harness/worker.py``, knobs are CLI flags). Rows with the same
command are run once per invocation and shared between suites (e.g. the OCR baseline is also the
1-process point of the DDP suite).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

# The knobs of the seeds' PaddleOCR case, as recipe config overrides.
OFF = {
    "AMP.enable": "false", "EMA.enable": "false", "Train.accumulate_steps": "1",
    "Train.loader.num_workers": "0", "Train.loader.persistent_workers": "false",
    "Train.loader.use_shared_memory": "false", "Train.loader.use_buffer_reader": "false",
}
AMP = {"AMP.enable": "true", "AMP.level": "O1", "AMP.dtype": "float16"}


def loader_knobs(workers: int = 2) -> dict:
    """DataLoader workers + persistent workers + shared memory + buffer reader (paddle has no pin_memory)."""
    return {"Train.loader.num_workers": str(workers), "Train.loader.persistent_workers": "true",
            "Train.loader.use_shared_memory": "true", "Train.loader.use_buffer_reader": "true"}


LOADER = loader_knobs(2)
EMA = {"EMA.enable": "true"}


@dataclass(frozen=True)
class Row:
    """One measured configuration.

    suite: ocr | tta | throughput | ddp.  name: unique in the suite.  label: table text.
    kind: "recipe" (OCR recipe + overrides) or "worker" (throughput/fusion worker + args).
    role: baseline | speedup | cost (expected slower, e.g. EMA) | reference (shown, not a speedup).
    nproc / threads: processes and CPU math threads per process (OMP/MKL), both recorded.
    batch / accum: per-process batch and accumulation steps (samples per optimizer step = batch*accum).
    overrides: recipe ``-o`` pairs; args: worker CLI args.  amp: this row asks for AMP.
    published: key of benchmarks.harness.published.PUBLISHED shown beside the row.
    """

    suite: str
    name: str
    label: str
    kind: str = "recipe"
    role: str = "speedup"
    nproc: int = 1
    threads: int = 1
    batch: int = 64
    accum: int = 1
    overrides: tuple = ()
    args: tuple = ()
    amp: bool = False
    published: str | None = None
    note: str = ""
    base_batch: int = 64  # batch of the suite's baseline (steps are counted in its batches)
    amp_only: bool = False  # the row's only change is AMP: no speedup is claimed where AMP is not in effect

    @property
    def samples_per_step(self) -> int:
        """Samples per optimizer step per process."""
        return self.batch * self.accum

    def key(self, steps: int, warmup: int) -> tuple:
        """Identity of the measurement: rows with equal keys are run once and shared."""
        return (self.kind, self.nproc, self.threads, self.batch, self.accum, self.overrides, self.args,
                self.steps_for(steps, warmup))

    def steps_for(self, steps: int, warmup: int) -> tuple[int, int]:
        """(warmup, timed) optimizer steps so that every row processes the same samples per process
        as ``steps`` baseline steps of ``base_batch`` (a batch-192 row takes a third of the steps)."""
        f = self.base_batch / float(self.samples_per_step)
        return max(1, round(warmup * f)), max(2, round(steps * f))


def _ov(*dicts: dict, **extra) -> tuple:
    merged: dict = {}
    for d in dicts:
        merged.update(d)
    merged.update({k.replace("__", "."): v for k, v in extra.items()})
    return tuple(sorted(merged.items()))


def ocr_rows(ddp_nproc: int = 2, batch: int = 64, threads: int = 1, workers: int = 2) -> list[Row]:
    """The seeds' PaddleOCR ablation: baseline, each optimization alone, all together."""
    b3 = str(batch * 3)
    LOADER = loader_knobs(workers)
    base = Row("ocr", "baseline", f"baseline (fp32, bs {batch}, 1 proc, workers 0)", role="baseline",
               batch=batch, base_batch=batch, threads=threads, overrides=_ov(OFF, **{"Train__loader__batch_size_per_card": str(batch)}),
               published="ocr_epoch")
    bs = {"Train.loader.batch_size_per_card": str(batch)}
    return [
        base,
        replace(base, name="amp", label="+ AMP O1 fp16", role="speedup", amp=True, amp_only=True,
                overrides=_ov(OFF, bs, AMP), published="amp"),
        replace(base, name="loader", label=f"+ DataLoader {workers} workers, persistent, shared memory, buffer reader",
                role="speedup", overrides=_ov(OFF, bs, LOADER), published="loader"),
        replace(base, name="batch192", label=f"+ batch {batch} -> {b3}", role="speedup", batch=batch * 3,
                overrides=_ov(OFF, {"Train.loader.batch_size_per_card": b3}), published="batch"),
        replace(base, name="accum3", label=f"+ grad accumulation x3 (effective batch {b3})", role="speedup",
                accum=3, overrides=_ov(OFF, bs, {"Train.accumulate_steps": "3"}), published="batch"),
        replace(base, name=f"ddp{ddp_nproc}", label=f"+ DDP x{ddp_nproc} processes ({threads} thread each)",
                role="speedup", nproc=ddp_nproc, overrides=_ov(OFF, bs), published="ddp"),
        replace(base, name="ema", label="+ EMA (cost of the update)", role="cost", overrides=_ov(OFF, bs, EMA),
                published="ema"),
        replace(base, name="all", label=f"all together (AMP + loader + accum x3 + DDP x{ddp_nproc} + EMA)",
                role="speedup", amp=True, nproc=ddp_nproc, accum=3,
                overrides=_ov(OFF, bs, AMP, LOADER, EMA, {"Train.accumulate_steps": "3"}), published="ocr_epoch"),
    ]


def ddp_rows(nproc: int = 2, batch: int = 64) -> list[Row]:
    """Scaling at equal threads per process, plus 1 process using all the threads (labelled)."""
    base = ocr_rows(nproc, batch)[0]
    return [
        replace(base, suite="ddp", name="p1_t1", label="1 process x 1 thread", published="ddp_scaling"),
        replace(base, suite="ddp", name=f"p{nproc}_t1", label=f"{nproc} processes x 1 thread (DDP)", role="speedup",
                nproc=nproc, published="ddp_scaling"),
        replace(base, suite="ddp", name=f"p1_t{nproc}", label=f"1 process x {nproc} threads (same cores, no DDP)",
                role="reference", threads=nproc, published=None),
    ]


def tta_rows(nproc: int = 2, batch: int = 32) -> list[Row]:
    """Time-to-accuracy: baseline vs the optimized settings, same data, same target.

    The optimized run keeps the global batch (nproc x batch/nproc) and the learning rate, so both runs
    follow the same optimization and the ratio is the wall-time gain alone (a bigger global batch
    needs more samples to reach the target at the same lr; the ocr suite measures its throughput)."""
    per = max(1, batch // nproc)
    return [
        Row("tta", "baseline", f"baseline (fp32, 1 proc x batch {batch}, workers 0)", role="baseline",
            batch=batch, overrides=_ov(OFF, {"Train.loader.batch_size_per_card": str(batch)}),
            published="ocr_epoch"),
        Row("tta", "optimized", f"optimized (AMP + loader + DDP x{nproc} x batch {per}, same global batch)",
            role="speedup", batch=per, nproc=nproc, amp=True,
            overrides=_ov(OFF, AMP, LOADER, {"Train.loader.batch_size_per_card": str(per)}), published="ocr_epoch"),
    ]


THROUGHPUT_MODELS = ("resnet50", "ernie_tiny", "ppyoloe_tiny")


def throughput_rows(models=THROUGHPUT_MODELS) -> list[Row]:
    """Per model: train baseline vs optimized (AMP + loader workers), inference unfused vs conv-BN fused."""
    rows = []
    for m in models:
        common = dict(suite="throughput", kind="worker")
        rows += [
            Row(name=f"{m}/train_base", label=f"{m} train, baseline", role="baseline",
                args=("--model", m, "--mode", "train"), published="throughput", **common),
            Row(name=f"{m}/train_opt", label=f"{m} train, + AMP + loader workers", role="speedup", amp=True,
                args=("--model", m, "--mode", "train", "--amp", "--workers", "2"), published="throughput",
                **common),
            Row(name=f"{m}/infer", label=f"{m} inference: unfused vs conv-BN folded vs Paddle Inference", role="speedup",
                args=("--model", m, "--mode", "infer", "--inference"), published="fusion", **common),
        ]
    return rows


SUITES = ("ocr", "tta", "throughput", "ddp")
