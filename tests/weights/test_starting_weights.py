"""weights/policy.form_at: the form a weights file holds, read from the file only when the model has another form."""
from __future__ import annotations

import paddle

from paddle_recipes.nn.catalog import build_backbone
from paddle_recipes.weights import policy
from paddle_recipes.weights.released import Form


def test_form_at_reads_the_weights_file_only_for_a_model_with_a_released_form(tmp_path, monkeypatch):
    """A model without rep blocks or training branches has only the training form: Form() without reading the file
    (the loader reads it once, after); a model with rep blocks reads it once, and an unreadable file is None."""
    reads = []
    real = policy.load_weights_file
    monkeypatch.setattr(policy, "load_weights_file", lambda f, *a, **k: reads.append(f) or real(f, *a, **k))
    missing = str(tmp_path / "missing.pdparams")
    assert policy.form_at(paddle.nn.Linear(2, 2), missing) == Form() and reads == []
    rep = build_backbone("PPLCNetV3", "rec", scale=0.25)
    paddle.save(rep.state_dict(), str(tmp_path / "rep.pdparams"))
    assert policy.form_at(rep, str(tmp_path / "rep.pdparams"), prefer_ema=False) == Form() and len(reads) == 1
    assert policy.form_at(rep, missing) is None


def test_form_at_names_the_blocks_a_file_holds_fused_and_skips_those_already_fused(tmp_path):
    """A checkpoint of a released-form run (fused conv biases) holds every rep block fused; in a network where some
    blocks are fused already, only the others are named."""
    from paddle_recipes.nn.reparam import fuse_blocks, rep_blocks
    from paddle_recipes.weights.released import to_released_form

    paddle.seed(0)
    fused = build_backbone("PPLCNetV3", "rec", scale=0.25)
    names = to_released_form(fused).fused
    paddle.save(fused.state_dict(), str(tmp_path / "fused.pdparams"))
    net = build_backbone("PPLCNetV3", "rec", scale=0.25)
    assert len(names) == len(rep_blocks(net)) == 28
    assert policy.form_at(net, str(tmp_path / "fused.pdparams"), prefer_ema=False) == Form(names, [])
    assert fuse_blocks(net, names[:5]) == names[:5]
    assert policy.form_at(net, str(tmp_path / "fused.pdparams"), prefer_ema=False) == Form(names[5:], [])
