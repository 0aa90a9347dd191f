"""Global.finetune_merge (paddle_recipes/weights/merge.py, tasks/ocr_rec/finetune_merge.py; docs/cards/finetune_merge.md):
merge_weights at alpha 0 / 1 is the init / fine-tuned weights bit for bit and a float64 reference in between; in the
recipe every checkpoint holds merged.pdparams = the merge of the released init weights with the run's EMA weights
while model.pdparams / ema.pdparams are the plain fine-tune's (training unchanged), eval / predict read the merged
file, resume is exact; bad values and a run without init weights are one-line ConfigErrors."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import weights_file_at
from paddle_recipes.checkpoint.serialization import load_weights_file
from paddle_recipes.config import ConfigError, load_config
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.weights.merge import check_alpha, merge_weights
from paddle_recipes.weights.released import to_released_form
import test_finetune_released
from test_finetune_released import argv, log_lines
from test_paddleocr_recipe import run

released = test_finetune_released.released  # the module-scoped fixture: the tiny "released" model and its data

EMA = ["EMA.enable=true", "EMA.decay=0.8", "EMA.warmup=none"]


def state(pairs: dict) -> dict:
    return {k: paddle.to_tensor(v) for k, v in pairs.items()}


def bits(t) -> bytes:
    return (t.numpy() if isinstance(t, paddle.Tensor) else np.asarray(t)).tobytes()


def test_merge_weights_is_init_at_0_tuned_at_1_bit_for_bit_and_the_reference_between():
    rng = np.random.default_rng(0)
    w_init = rng.normal(size=(3, 4)).astype("float32")
    w_init[0, 0] = -0.0  # x + 0 * d would give +0.0: the endpoints are copies
    init = state({"w": w_init, "bn._mean": rng.normal(size=4).astype("float32"), "steps": np.array([3], "int64")})
    tuned = state({"w": rng.normal(size=(3, 4)).astype("float32"), "bn._mean": rng.normal(size=4).astype("float32"),
                   "steps": np.array([7], "int64")})
    at0, at1 = merge_weights(init, tuned, 0), merge_weights(init, tuned, 1.0)
    assert all(bits(at0[k]) == bits(init[k]) for k in ("w", "bn._mean")) and at0["steps"].numpy().tolist() == [7]
    assert all(bits(at1[k]) == bits(tuned[k]) for k in tuned)
    mid = merge_weights(init, tuned, 0.3)
    for k in ("w", "bn._mean"):  # BN statistics are interpolated too
        ref = 0.7 * init[k].numpy().astype("float64") + 0.3 * tuned[k].numpy().astype("float64")
        np.testing.assert_allclose(mid[k].numpy(), ref, rtol=0, atol=1e-6)
        assert mid[k].dtype == paddle.float32 and np.isfinite(mid[k].numpy()).all()
    assert mid["steps"].numpy().tolist() == [7]  # integer tensors: the fine-tuned value
    with pytest.raises(ValueError, match="different tensors"):
        merge_weights(init, {**tuned, "extra": tuned["w"]}, 0.5)
    with pytest.raises(ValueError, match=r"w: init shape \[3, 4\] != fine-tuned \[12\]"):
        merge_weights(init, {**tuned, "w": tuned["w"].reshape([12])}, 0.5)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), True, "0.5", None])
def test_alpha_outside_0_1_is_a_config_error(bad):
    with pytest.raises(ConfigError, match=r"^Global.finetune_merge must be a number in \[0, 1\]"):
        check_alpha(bad, "Global.finetune_merge")


def released_state(data, out, infer) -> dict:
    """The released tiny model as a fine-tune's init load makes it (released form), as numpy arrays."""
    cfg = load_config(argv(data, out)[1], argv(data, out)[3:], OcrRec.Config, translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, DistInfo())
    model = recipe.build_model()
    to_released_form(model)
    recipe.load_pretrained(model, str(infer))
    return {k: v.numpy() for k, v in model.state_dict().items()}


def files(out) -> dict:
    """{model, ema, merged: {name: array}} of the newest checkpoint of run `out` (absent files left out)."""
    folder = weights_file_at(out / "checkpoints", prefer_ema=False).parent
    return {f.stem: load_weights_file(f, return_numpy=True) for f in folder.glob("*.pdparams")}


def test_recipe_writes_the_merge_of_released_and_ema_weights_and_trains_as_without_it(released, tmp_path):
    """alpha 0.5 with EMA: model.pdparams and ema.pdparams are the switch-off run's bit for bit (training unchanged);
    merged.pdparams = merge_weights(released, ema, 0.5), finite; alpha 0 writes the released weights bit for bit;
    eval / predict read merged.pdparams (use_ema_weights=false: model.pdparams)."""
    data, infer, _, _ = released
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]", "Global.max_steps=0", *EMA]
    runs = {name: tmp_path / name for name in ("off", "a05", "a0")}
    run(argv(data, runs["off"], *common))
    for name, alpha in (("a05", 0.5), ("a0", 0)):
        run(argv(data, runs[name], *common, f"Global.finetune_merge={alpha}"))
    assert len(log_lines(runs["a05"], "Global.finetune_merge=0.5: checkpoints also hold merged.pdparams")) == 1
    off, half, zero = (files(runs[n]) for n in ("off", "a05", "a0"))
    assert set(off) == {"model", "ema"} and set(half) == {"model", "ema", "merged"}
    for key in ("model", "ema"):
        assert all(bits(off[key][k]) == bits(half[key][k]) == bits(zero[key][k]) for k in off[key])
    init = released_state(data, tmp_path / "init", infer)
    assert set(zero["merged"]) == set(init) and all(bits(zero["merged"][k]) == bits(init[k]) for k in init)
    want = merge_weights({k: paddle.to_tensor(v) for k, v in init.items()},
                         {k: paddle.to_tensor(v) for k, v in half["ema"].items()}, 0.5)
    assert all(bits(half["merged"][k]) == bits(want[k]) for k in init)
    assert all(np.isfinite(v).all() for v in half["merged"].values())
    assert any(not np.array_equal(half["merged"][k], half["ema"][k]) for k in init)  # the merge did change weights
    pred = [f"Global.infer_img={data / 'img'}", f"Global.checkpoints={runs['a05'] / 'checkpoints'}"]
    run(["--mode", "predict", *argv(data, runs["a05"], *pred)])
    run(["--mode", "predict", *argv(data, runs["a05"], *pred, "Global.use_ema_weights=false")])
    lines = (runs["a05"] / "predict.log").read_text(encoding="utf-8").splitlines()
    loaded = [ln.split("weights: ")[1].split(" (from")[0] for ln in lines if "INFO ocr_rec: weights: " in ln]
    assert [p.rsplit("/", 1)[1] for p in loaded[-2:]] == ["merged.pdparams", "model.pdparams"], loaded


def test_finetune_merge_run_resumes_exactly(released, tmp_path):
    """3 steps, then Global.checkpoints -> 5 steps == 5 steps straight, bit for bit in model, EMA and merged
    weights: the merge's init is the released model again on resume (not the checkpoint's weights)."""
    data, infer, _, _ = released
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]", "Global.finetune_merge=0.25", *EMA]
    straight_out, out = tmp_path / "straight", tmp_path / "b"
    straight = run(argv(data, straight_out, *common, "Global.max_steps=0"))
    run(argv(data, out, *common, "Global.max_steps=3"))
    resumed = run(argv(data, out, *common, "Global.max_steps=0", f"Global.checkpoints={out / 'checkpoints'}"))
    assert resumed["resumed_from"] and resumed["global_step"] == straight["global_step"] == 5
    a, b = files(straight_out), files(out)
    assert set(a) == set(b) == {"model", "ema", "merged"}
    assert all(bits(a[f][k]) == bits(b[f][k]) for f in a for k in a[f])


def test_finetune_merge_without_init_weights_or_out_of_range_is_a_config_error(tmp_path):
    from test_paddleocr_extensions import V5M, load, one_line
    from test_paddleocr_recipe import DICT_A, write_label_set

    data = write_label_set(tmp_path / "data", DICT_A)
    with pytest.raises(ConfigError, match=r"^Global.finetune_merge needs init weights to merge with: set "
                                          r"Global.pretrained_model$"):
        run(argv(data, tmp_path / "o", "Global.finetune_merge=0.5", "Global.max_steps=1"))
    assert not (tmp_path / "o" / "checkpoints").exists()
    cfg, notes = load(V5M, ["Global.finetune_merge=0.6"])  # PaddleOCR's YAML: our extension key, typed
    assert cfg.Global.finetune_merge == 0.6 and "Global.finetune_merge=0.6" in one_line(notes, "paddle-recipes extensions: ")
    assert load(V5M, [])[0].Global.finetune_merge is None
    for opt in ("Global.finetune_merge=1.5", "Global.finetune_merge=abc", "Global.finetune_merg=0.5"):
        with pytest.raises(ConfigError, match="finetune_merge") as exc:
            load(V5M, [opt])
        assert "\n" not in str(exc.value)
