"""Global.to_static (paddle_recipes.train.to_static): the same loss curve as dygraph training from the same seed, for
a rec model (through build_training and the Trainer), PP-OCRv4's MultiHead with its targets, and a DB det model;
evaluation stays dygraph; an unconvertible forward is one line naming the layer.

Tolerance: relative 1e-5 per step. The static program runs the same fp32 kernels in the same order; what may
differ is summation order in a fused or re-scheduled reduction, a few ulp (fp32 eps 1.2e-7) per op, which five
steps of Adam at lr 1e-3 cannot grow to 1e-5 of the loss. Measured here: 0 (bit-identical) for all three.
"""
from __future__ import annotations

import inspect

import numpy as np
import paddle
import pytest

from paddle_recipes.config import ConfigError, from_dict
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.train.to_static import StaticTrainForward, apply_to_static
from paddle_recipes.tasks.ocr_rec.losses import CTCLoss
from paddle_recipes.tasks.ocr_rec.models import build_rec_model
from paddle_recipes.train.build import build_training
from paddle_recipes.train.config import TrainingConfig

REL_TOL = 1e-5
REC_ARCH = {"Backbone": {"name": "LCNetRec", "scale": 0.25, "width_stride": 8}, "Neck": {"name": "Conv", "hidden_size": 16},
            "Head": {"name": "CTCHead"}}


class Lines(paddle.io.Dataset):
    """Random 3x32x64 images with 1-4 random labels of 10 classes (CTC: blank 0)."""

    def __init__(self, n=16):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 3, 32, 64)).astype("float32")
        self.len = rng.integers(1, 5, n)
        self.y = np.stack([np.pad(rng.integers(1, 11, k), (0, 4 - k)) for k in self.len]).astype("int32")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i], np.int64(self.len[i])


def _ctc_step(model, batch):
    x, y, n = batch
    return {"loss": CTCLoss()(model(x), y, n)}


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.abs(a)))


def _train_rec(tmp_path, to_static: bool):
    cfg = from_dict(TrainingConfig, {
        "Global": {"output_dir": str(tmp_path / str(to_static)), "epochs": 1, "log_every": 1, "seed": 0,
                   "to_static": to_static, "save_every_epochs": 1},
        "Optimizer": {"name": "adam", "lr": 0.001, "schedule": "constant"},
        "Train": {"loader": {"batch_size_per_card": 4, "shuffle": False}}})
    paddle.seed(0)
    model = build_rec_model(REC_ARCH, 11)
    evals = []

    def eval_fn(m):  # evaluation runs the dygraph forward: no program is traced for it
        evals.append(type(m.forward).__name__)
        with paddle.no_grad():
            return {"loss": float(CTCLoss()(m(paddle.to_tensor(Lines().x[:4])), paddle.to_tensor(Lines().y[:4]),
                                            paddle.to_tensor(Lines().len[:4])))}
    run = build_training(cfg, model, Lines(), step=_ctc_step, info=DistInfo(), eval_fn=eval_fn, main_metric="loss")
    summary = run.fit()
    return [h["loss"] for h in summary["history"]], summary, model


def test_rec_training_through_the_trainer_gives_the_same_loss_curve(tmp_path):
    off, s_off, _ = _train_rec(tmp_path, False)
    on, s_on, model = _train_rec(tmp_path, True)
    assert len(off) == 4 and _rel(off, on) <= REL_TOL, (off, on)
    assert isinstance(model.forward, StaticTrainForward) and len(model.forward.traced) == 1  # one batch shape
    assert s_on["final_eval"]["loss"] == pytest.approx(s_off["final_eval"]["loss"], rel=REL_TOL)
    assert (tmp_path / "True" / "checkpoints").is_dir()  # checkpoints save as usual (same state_dict names)


def _loop(model, batches, step, to_static: bool, lr=1e-3) -> list:
    opt = paddle.optimizer.Adam(learning_rate=lr, parameters=model.parameters())
    if to_static:
        apply_to_static(model)
    model.train()
    losses = []
    for b in batches:
        loss = step(model, b)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return losses


def _no_dropout(model):
    """Dropout masks are drawn differently by a static program (docs/cards/to_static.md): p = 0 to compare."""
    for layer in model.sublayers():
        if isinstance(layer, paddle.nn.Dropout):
            layer.p = 0.0
    return model


@pytest.mark.slow  # 60-270 s here (a PPLCNetV3 + SVTR + NRTR trace per shape)
def test_multihead_targets_several_shapes_and_eval_stay_exact():
    """PP-OCRv4 mobile rec's MultiHead (CTC + NRTR, targets as a list argument), small; two batch shapes (as the
    multi-scale sampler gives) trace two programs; an eval-mode call traces nothing and equals dygraph."""
    from paddle_recipes.tasks.ocr_rec.ppocr_losses import MultiLoss, nrtr_labels
    from paddle_recipes.tasks.ocr_rec.ppocr_models import build_ppocr_rec_model

    arch = {"Backbone": {"name": "PPLCNetV3", "scale": 0.25},
            "Head": {"name": "MultiHead", "head_list": [
                {"CTCHead": {"Neck": {"name": "svtr", "dims": 16, "depth": 1, "hidden_dims": 16, "use_guide": True}}},
                {"NRTRHead": {"nrtr_dim": 32, "max_text_length": 8}}]}}
    rng = np.random.default_rng(0)
    batches = []
    for h in (32, 48, 32):
        lengths = rng.integers(1, 6, 2)
        label = np.zeros([2, 8], np.int32)
        for i, n in enumerate(lengths):
            label[i, :n] = rng.integers(1, 20, n)
        batches.append([paddle.to_tensor(rng.standard_normal([2, 3, h, 96]).astype("float32")),
                        paddle.to_tensor(label), paddle.to_tensor(lengths.astype("int64")),
                        paddle.to_tensor(nrtr_labels(label, lengths, 8))])
    loss_fn = MultiLoss()

    def step(model, b):
        return loss_fn(model(b[0], [b[1], b[3], b[2]]), b[1], b[2], b[3])["loss"]
    models = []
    for to_static in (False, True):
        paddle.seed(0)
        models.append(_no_dropout(build_ppocr_rec_model(arch, 20)))
        curve = _loop(models[-1], batches, step, to_static)
        if not to_static:
            off = curve
    assert _rel(off, curve) <= REL_TOL, (off, curve)
    assert len(models[1].forward.traced) == 2
    for m in models:
        m.eval()
    with paddle.no_grad():
        a, b = (m(batches[0][0]) for m in models)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    assert len(models[1].forward.traced) == 2


@pytest.mark.slow  # 20-85 s here (the PPLCNetV3 det + RSEFPN + DBHead trace)
def test_db_det_model_gives_the_same_loss_curve():
    from paddle_recipes.tasks.ocr_det.losses import DBLoss
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

    arch = {"Backbone": {"name": "PPLCNetV3", "scale": 0.35, "det": True},
            "Neck": {"name": "RSEFPN", "out_channels": 16, "shortcut": True}, "Head": {"name": "DBHead", "k": 50}}
    from conftest import db_loss_batches

    batches, maps = db_loss_batches(4)
    loss_fn = DBLoss()
    curves = []
    for to_static in (False, True):
        paddle.seed(0)
        curves.append(_loop(build_ppocr_det_model(arch), batches,
                            lambda m, x: loss_fn(m(x), [None, *maps])["loss"], to_static))
    assert _rel(*curves) <= REL_TOL, curves


class HostRoundTrip(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return paddle.to_tensor(y.tolist())  # a host copy: no static graph can hold it


LINE = inspect.getsourcelines(HostRoundTrip.forward)[1] + 2  # the .tolist() line


def test_a_forward_that_cannot_be_converted_is_one_line_naming_the_layer():
    model = apply_to_static(HostRoundTrip())
    model.train()
    with pytest.raises(ConfigError) as exc:
        model(paddle.ones([2, 4]))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("Global.to_static: HostRoundTrip.forward cannot run as a static graph: "
                                               f"HostRoundTrip (test_static_train.py:{LINE}): AssertionError: 'tolist'")
    assert msg.endswith("; set Global.to_static: false")
    model.eval()
    assert model(paddle.ones([2, 4])).shape == [2, 4]  # eval keeps the dygraph forward


@pytest.mark.parametrize("key", ["to_static", "cpu_depthwise_kernel", "cpu_affine_kernel"])
def test_paddleocr_det_yaml_key_reaches_the_det_config(key):
    """Global.to_static (PaddleOCR's key; its d2s shape: no effect here) and our Global.cpu_depthwise_kernel and
    cpu_affine_kernel in PaddleOCR's PP-OCRv4 mobile det YAML -> our DetConfig."""
    import yaml

    from paddle_recipes.compat.paddleocr_det import translate_det_config
    from paddle_recipes.tasks.ocr_det.config import DetConfig
    from conftest import REPO_ROOT

    name = "PP-OCRv4/PP-OCRv4_mobile_det.yml"
    data = yaml.safe_load((REPO_ROOT / "tests/fixtures/paddleocr_det_configs" / name).read_text(encoding="utf-8"))
    data["Global"][key] = True
    ours, report = translate_det_config(data, name, DetConfig)
    assert getattr(from_dict(DetConfig, ours).Global, key) is True
    assert "Global.d2s_train_image_shape" in report.no_effect and f"Global.{key}" not in report.no_effect
