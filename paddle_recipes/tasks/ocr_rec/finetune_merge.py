"""``Global.finetune_merge`` in the rec recipe (card docs/cards/finetune_merge.md): the recipe glue of the
weights.merge block (WiSE-FT: the run's weights interpolated with the weights it started from)."""
from __future__ import annotations

from ...train.trainer import Callback
from ...weights.merge import MERGED, InitMerge
from ...weights.policy import require_init_weights


class _TrainerEma(Callback):
    """Hands the trainer's ModelEMA (None when EMA is off) to an InitMerge at fit start (before any save)."""

    def __init__(self, merge: InitMerge):
        self.merge = merge

    def on_fit_start(self, trainer) -> None:
        self.merge.ema = trainer.ema


class MergeWithInit:
    """Recipe mixin (before Recipe in the bases) of ``Global.finetune_merge`` (a float in [0, 1]; null = off):
    ``merge`` is an InitMerge of the weights training starts from (snapshot after the init weights load and any BN
    calibration, before resume and the first step), the checkpoint part MERGED (merged.pdparams in every checkpoint
    folder) and the in-training eval of the merged weights. Off: the recipe as without it."""
    merge: "InitMerge | None" = None

    def init_weights(self, model):
        plan = super().init_weights(model)
        alpha = self.cfg.Global.finetune_merge
        if alpha is not None:
            require_init_weights("finetune_merge", plan.source, "to merge with")
        return plan

    def calibrate_imported_bn(self, model, train_set):
        report = super().calibrate_imported_bn(model, train_set)
        alpha = self.cfg.Global.finetune_merge
        if alpha is not None:
            self.merge = InitMerge(model, alpha, self.log)
            self.log.info("Global.finetune_merge=%g: checkpoints also hold merged.pdparams = %g x init (%s) + %g x the "
                          "run's weights (EMA's when on); eval, predict and export read it; training and resume use "
                          "the unmerged weights", alpha, 1 - alpha, self.init_weights_source(), alpha)
        return report

    def checkpoint_parts(self) -> dict:
        parts = super().checkpoint_parts()
        return parts if self.merge is None else {**parts, MERGED: self.merge}

    def callbacks(self) -> list:
        found = super().callbacks()
        return found if self.merge is None else [*found, _TrainerEma(self.merge)]

    def evaluate_in_training(self, model, loader) -> dict:
        if self.merge is None:
            return super().evaluate_in_training(model, loader)
        with self.merge.apply_to(model):  # the trainer has swapped EMA's weights in when EMA is on
            return super().evaluate_in_training(model, loader)
