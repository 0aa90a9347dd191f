"""The one rule for the weights of eval / predict / export (Recipe.weights_source, docs/weights.md):
Global.weights > Global.checkpoints > Global.pretrained_model > output_dir/checkpoints best > latest; every key
takes a checkpoint step folder, a checkpoint root, a PaddleOCR prefix, a .pdparams and a .safetensors file; a named
path that is missing is an error naming it, never other weights; inf/nan weights are refused naming the tensor."""
from __future__ import annotations

import logging
import shutil
from types import SimpleNamespace

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import CheckpointError, save_checkpoint
from paddle_recipes.recipes.base import Recipe
from paddle_recipes.checkpoint.serialization import save_safetensors
from paddle_recipes.train.config import GlobalConfig


class Tiny(Recipe):
    name = "tiny"

    def build_model(self):
        return paddle.nn.Linear(2, 3)


def weights(value: float) -> dict:
    return {"weight": paddle.full([2, 3], value), "bias": paddle.full([3], value)}


def recipe(out, **global_keys) -> Tiny:
    return Tiny(SimpleNamespace(Global=GlobalConfig(output_dir=str(out), **global_keys)),
                SimpleNamespace(is_main=True, rank=0, world_size=1))


def loaded(out, **global_keys) -> tuple[float, str]:
    model, src = recipe(out, **global_keys).load_for_inference()
    return float(model.bias.numpy()[0]), src


@pytest.fixture
def files(tmp_path):
    """Weights holding 1 .. 7 in every tensor, in every form a key can name; output_dir/checkpoints holds best = 8
    and latest = step_9 (EMA 9.5)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    paddle.save(weights(1), str(mine / "best_accuracy.pdparams"))
    paddle.save(weights(2), str(mine / "two.pdparams"))
    save_safetensors(weights(3), mine / "three.safetensors")
    runs = mine / "run" / "checkpoints"
    save_checkpoint(runs, {"model": weights(4), "step": 74}, "step_00000074")
    save_checkpoint(runs, {"model": weights(5), "ema": {"shadow": weights(6), "num_updates": 1}, "step": 80},
                    "step_00000080")
    out = tmp_path / "out"
    save_checkpoint(out / "checkpoints", {"model": weights(8)}, "best")
    save_checkpoint(out / "checkpoints", {"model": weights(9), "ema": {"shadow": weights(9.5), "num_updates": 1}},
                    "step_9")
    return SimpleNamespace(mine=mine, runs=runs, out=out)


@pytest.mark.parametrize("key", ["weights", "checkpoints", "pretrained_model"])
def test_every_key_takes_every_form(files, key):
    m, r = files.mine, files.runs
    cases = {str(m / "best_accuracy"): (1, m / "best_accuracy.pdparams"),  # PaddleOCR's prefix
             str(m / "two.pdparams"): (2, m / "two.pdparams"),
             str(m / "three.safetensors"): (3, m / "three.safetensors"),
             str(m / "three"): (3, m / "three.safetensors"),
             str(r / "step_00000074"): (4, r / "step_00000074" / "model.pdparams"),
             str(r / "step_00000080"): (6, r / "step_00000080" / "ema.pdparams"),  # EMA weights preferred
             str(r): (6, r / "step_00000080" / "ema.pdparams"),  # a root: its latest
             str(r / "latest"): (6, r / "step_00000080" / "ema.pdparams")}  # its `latest` file, as PaddleOCR's prefix
    for value, (want, file) in cases.items():
        assert loaded(files.out, **{key: value}) == (want, str(file)), value
    assert loaded(files.out, **{key: str(r / "step_00000080"), "use_ema_weights": False})[0] == 5


def test_precedence_and_defaults(files, caplog):
    a, b, c = (str(files.mine / n) for n in ("best_accuracy", "two.pdparams", "three"))
    assert loaded(files.out, weights=a, checkpoints=b, pretrained_model=c)[0] == 1
    assert loaded(files.out, weights="auto", checkpoints=b, pretrained_model=c)[0] == 2  # "auto" counts as unset
    assert loaded(files.out, pretrained_model=c)[0] == 3
    with caplog.at_level(logging.INFO, logger="tiny"):
        assert loaded(files.out, resume=a) == (8, str(files.out / "checkpoints" / "best" / "model.pdparams"))
    assert "Global.resume=" in caplog.text and "not the weights used here" in caplog.text
    assert f"weights: {files.out / 'checkpoints' / 'best' / 'model.pdparams'} (from " in caplog.text
    shutil.rmtree(files.out / "checkpoints" / "best")
    assert loaded(files.out)[0] == 9.5  # no best: latest (its EMA weights)
    with pytest.raises(CheckpointError, match="no weights: Global.weights, Global.checkpoints and Global.pretrained"):
        loaded(files.mine / "empty")


@pytest.mark.parametrize("key", ["weights", "checkpoints", "pretrained_model"])
def test_a_missing_named_path_is_an_error_never_other_weights(files, key):
    """output_dir holds a best and a latest, yet a named path that is not there is an error naming it."""
    for missing in (files.runs / "step_00000099", files.mine / "nope", files.mine / "nope.pdparams"):
        with pytest.raises(CheckpointError) as exc:
            loaded(files.out, **{key: str(missing)})
        assert str(exc.value).startswith(f"Global.{key}={missing}: ") and "not found" in str(exc.value)
    with pytest.raises(CheckpointError, match=f"Global.{key}=https://x/y.pdparams is a URL"):
        loaded(files.out, **{key: "https://x/y.pdparams"})
    (files.mine / "inference").mkdir()  # a folder that is no checkpoint
    with pytest.raises(CheckpointError, match="neither a checkpoint folder"):
        loaded(files.out, **{key: str(files.mine / "inference")})


def test_non_finite_weights_are_refused_naming_the_file_and_tensor(files):
    bad = weights(1)
    bad["bias"] = paddle.to_tensor(np.array([0, np.nan, 0], np.float32))
    paddle.save(bad, str(files.mine / "nan.pdparams"))
    with pytest.raises(CheckpointError) as exc:
        loaded(files.out, weights=str(files.mine / "nan.pdparams"))
    assert f"{files.mine / 'nan.pdparams'}: tensor 'bias' holds inf/nan" in str(exc.value)
