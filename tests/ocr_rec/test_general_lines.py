"""Global.general_lines (paddle_recipes/tasks/ocr_rec/general_lines.py; docs/cards/general_lines.md): the general lines
a fine-tune keeps are labelled with exactly what --mode predict of the init weights reads on them, the train loader
draws them at the configured ratio (round(kept * ratio) an epoch, next to the user's files at theirs), and bad values
or a run that cannot label them are one-line ConfigErrors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paddle_recipes.config import ConfigError
from paddle_recipes.tasks.ocr_rec.charset import CharDict
from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig, RecDataset
from paddle_recipes.tasks.ocr_rec.general_lines import (LABEL_FILE, english_line, render_general_lines,
                                                        with_general_lines)
from paddle_recipes.tasks.ocr_rec.multiscale import MultiScaleBatchSampler
import test_finetune_released
from test_finetune_released import argv
from test_paddleocr_recipe import DICT_A, run, write_label_set

released = test_finetune_released.released  # the module-scoped fixture: the tiny "released" model and its data


def read_pairs(path: Path) -> list:
    return [tuple(ln.split("\t", 1)) for ln in path.read_text(encoding="utf-8").splitlines()]


def test_general_lines_are_the_init_weights_predict_output_and_the_loader_draws_them_at_the_ratio(released, tmp_path):
    data, infer, _, _ = released
    out = tmp_path / "ft"
    run(argv(data, out, f"Global.pretrained_model={infer}", "Global.general_lines=40",
             "Global.general_lines_ratio=0.5", "Global.max_steps=1", "Global.eval_batch_step=[]"))
    label_file = out / "general_lines" / LABEL_FILE
    pseudo = read_pairs(label_file)
    assert len(list((out / "general_lines" / "images").glob("*.jpg"))) == 40
    # what --mode predict of the same init weights reads on the same images
    res = tmp_path / "pred.txt"
    run(["--mode", "predict", *argv(data, tmp_path / "pred", f"Global.pretrained_model={infer}",
                                    f"Global.infer_img={out / 'general_lines' / 'images'}",
                                    f"Global.save_res_path={res}")])
    reads = {Path(p).name: t for p, t, *_ in (ln.split("\t") for ln in res.read_text(encoding="utf-8").splitlines())}
    assert len(reads) == 40
    expected = sorted((name, t) for name, t in reads.items() if t.strip())
    assert len(expected) >= 5  # the tiny model reads something on most lines: a comparison, not a vacuous one
    assert sorted((Path(p).name, t) for p, t in pseudo) == expected
    assert all(Path(p).is_absolute() for p, _ in pseudo)
    drawn = (out / "general_lines" / "label.txt").read_text(encoding="utf-8")
    assert drawn  # the drawn texts are kept beside, never used as labels

    # the train loader: the user's file at its ratio (1.0: every line), the general lines at 0.5
    charset = CharDict.from_file(str(data / "dict.txt"), use_space_char=True)
    user = DatasetConfig(data_dir=str(data), label_file_list=[str(data / "train.txt")])
    ds = RecDataset(with_general_lines(user, str(label_file), 0.5), charset, (3, 48, 96), 25)
    n_user, n_gen = 16, len(pseudo)
    assert len(ds) == n_user + n_gen and ds.ratio_spans == [(0, 16, 1.0), (16, 16 + n_gen, 0.5)]
    sampler = MultiScaleBatchSampler(len(ds), scales=[[96, 48]], first_bs=4, fix_bs=True, seed=3,
                                     ratio_spans=ds.ratio_spans)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        ids = [k[1] for batch in sampler for k in batch]
        gen = [i for i in ids if i >= n_user]
        assert sorted(set(i for i in ids if i < n_user)) == list(range(n_user))
        assert len(set(gen)) == round(n_gen * 0.5)
        assert all(ds.items[i][2] == pseudo[i - n_user][1] and str(ds.items[i][0]) == pseudo[i - n_user][0]
                   for i in gen)  # the loader's general lines carry the pseudo-labels


def test_general_line_texts_hold_spaces_latin_and_only_the_given_characters(tmp_path):
    rng = np.random.default_rng(0)
    lines = [english_line(rng) for _ in range(200)]
    assert sum(" " in ln for ln in lines) > 150 and all(ln.isascii() for ln in lines)
    assert max(map(len, lines)) <= 20  # within max_text_length (25): no general line is skipped as too long
    chars = list(DICT_A) + [" "]
    files = render_general_lines(tmp_path, chars, 12, seed=1)
    texts = [t for _, t in read_pairs(tmp_path / "label.txt")]
    assert len(files) == 12 and all(Path(f).exists() for f in files)
    assert all(set(t) <= set(chars) for t in texts)
    again = tmp_path / "again"
    render_general_lines(again, chars, 12, seed=1)
    assert [t for _, t in read_pairs(again / "label.txt")] == texts  # a function of (seed, index)


def test_general_lines_bad_values_and_no_init_weights_are_one_line_config_errors(tmp_path):
    from test_paddleocr_extensions import V5M, load, one_line

    data = write_label_set(tmp_path / "data", DICT_A)
    with pytest.raises(ConfigError, match=r"^Global.general_lines needs init weights to label the lines"):
        run(argv(data, tmp_path / "o", "Global.general_lines=10", "Global.max_steps=1"))
    assert not (tmp_path / "o" / "general_lines").exists()
    cfg, notes = load(V5M, ["Global.general_lines=300", "Global.general_lines_ratio=0.4"])
    assert (cfg.Global.general_lines, cfg.Global.general_lines_ratio) == (300, 0.4)
    assert "Global.general_lines=300" in one_line(notes, "paddle-recipes extensions: ")
    assert load(V5M, [])[0].Global.general_lines == 0
    for opt in ("Global.general_lines=-1", "Global.general_lines=1.5", "Global.general_lines=abc",
                "Global.general_lines_ratio=0", "Global.general_lines_ratio=1.5", "Global.general_line=10"):
        with pytest.raises(ConfigError, match="general_line") as exc:
            load(V5M, [opt])
        assert "\n" not in str(exc.value)
