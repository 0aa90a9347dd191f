"""Fault suite: the pre-flight (recipes/preflight.py) of the OCR system, PP-YOLOE and ERNIE entry points (issue 53
goal "one line, exit 2, within 10 s, from the first instant"). Before: these recipes had none; a bad config key or
weights file came after `import paddle` (6-12 s of CPU on 2 shared cores, ~330 MB).

Each case runs the recipe's script (or `python -m`) in a child that records at its exit whether paddle was imported
(child_run): one line naming the file (and key), exit 2, paddle absent, peak RSS < 1 GB. No timing is asserted.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, _clean_env

from paddle_recipes.recipes import preflight
from test_faults_import_files import _model_dir, _tensor_stream
from test_faults_preflight import _run
from test_ppocr_import import IMAGES, KEYS, REC_DIR, REC_YAML, needs_official

SYSTEM = "recipes/ocr_system.py"


def _one_line_before_paddle(result, recipe: str, *names: str) -> str:
    code, lines, imported, peak = result
    assert code == 2 and len(lines) == 1, (code, lines[-20:])
    assert lines[0].startswith(f"{recipe}: error: ") and all(n in lines[0] for n in names), (lines[0], names)
    assert not imported, f"paddle was imported before the error: {lines[0]}"
    assert peak < 1024, f"peak RSS {peak:.0f} MiB"
    return lines[0]


def _bad_folder(tmp: Path, name: str) -> Path:
    """An inference model folder whose .pdiparams header has 100 dims (the importer refuses it)."""
    folder = _model_dir(tmp, name)
    (folder / "inference.pdiparams").write_bytes(_tensor_stream([1] * 100))
    return folder


def _system_yml(tmp: Path, rec: Path, det: Path, cls: Path, rec_dict: Path, extra: str = "") -> Path:
    path = tmp / "system.yml"
    path.write_text(f"Global: {{output_dir: {tmp / 'out'}{extra}}}\n"
                    f"Det: {{config: recipes/configs/ocr_det.yml, weights: {det}}}\n"
                    f"Rec: {{config: {REC_YAML}, weights: {rec}, opt: [Global.character_dict_path={rec_dict}]}}\n"
                    f"Cls: {{config: recipes/configs/ocr_cls.yml, weights: {cls}}}\n"
                    f"Predict: {{images: {IMAGES / 'line.jpg'}}}\n")
    return path


# ------------------------------------------------------------------ ocr_system: its typed config (item 2)
def test_an_unknown_system_config_key_is_one_line_before_paddle_and_the_recipes_own_line(tmp_path):
    """The typed schema (SystemConfig) is checked whole before paddle's import, by the recipe's own load_config:
    with the pre-flight off ($PADDLE_RECIPES_PREFLIGHT=0) the recipe gives the very same line after paddle's."""
    cfg = tmp_path / "system.yml"
    cfg.write_text(f"Global: {{output_dir: {tmp_path / 'out'}, drop_scor: 0.3}}\n")
    argv = [SYSTEM, "-c", str(cfg), "--mode", "predict"]
    line = _one_line_before_paddle(_run(argv, tmp_path), "ocr_system", str(cfg), "drop_scor", "'drop_score'")
    late = _run(argv, tmp_path, {"PADDLE_RECIPES_PREFLIGHT": "0"})
    assert late[0] == 2 and late[2] and late[1] == [line], late


@pytest.mark.parametrize("override,names", [("Global.drop_scor=0.3", ("Global.drop_scor", "'drop_score'")),
                                            ("Det.crop=diagonal", ("Det.crop", "diagonal")),
                                            ("Global.rec_batch_num=six", ("rec_batch_num", "six"))])
def test_a_bad_system_override_is_one_line_before_paddle(tmp_path, override, names):
    argv = [SYSTEM, "--mode", "predict", "-o", f"Global.output_dir={tmp_path / 'out'}", override]
    _one_line_before_paddle(_run(argv, tmp_path), "ocr_system", *names)


def test_python_dash_m_ocr_system_runs_the_preflight_too(tmp_path):
    argv = ["-m", "paddle_recipes.recipes.ocr_system", "--mode", "eval", "-o", "Eval.iuo=0.3"]
    _one_line_before_paddle(_run(argv, tmp_path), "ocr_system", "Eval.iuo", "'iou'")


# ------------------------------------------------------------------ ocr_system: the files of the runs it loads
@needs_official
@pytest.mark.parametrize("stage", ["Rec", "Det", "Cls"])
def test_a_bad_weights_folder_of_a_system_run_is_one_line_before_paddle(tmp_path, stage):
    folders = {s: _bad_folder(tmp_path, s) if s == stage else REC_DIR for s in ("Rec", "Det", "Cls")}
    cfg = _system_yml(tmp_path, folders["Rec"], folders["Det"], folders["Cls"], KEYS,
                      ", use_angle_cls: true" if stage == "Cls" else "")
    line = _one_line_before_paddle(_run([SYSTEM, "-c", str(cfg), "--mode", "predict"], tmp_path), "ocr_system",
                                   f"Global.weights={folders[stage]}: ", "inference.pdiparams", "(rank 100)")
    assert line.startswith(f"ocr_system: error: Global.weights={folders[stage]}: "), line


@needs_official
def test_a_missing_rec_dict_of_the_system_is_the_recipes_own_line_before_paddle(tmp_path):
    absent = tmp_path / "absent_dict.txt"
    cfg = _system_yml(tmp_path, REC_DIR, REC_DIR, REC_DIR, absent)
    argv = [SYSTEM, "-c", str(cfg), "--mode", "predict"]
    line = _one_line_before_paddle(_run(argv, tmp_path), "ocr_system", str(absent))
    late = _run(argv, tmp_path, {"PADDLE_RECIPES_PREFLIGHT": "0"})
    assert late[0] == 2 and late[2] and late[1] == [line], late


def _reported(recipe: str, argv: list[str]) -> str | None:
    """The line the pre-flight of ``recipe`` reports on ``argv`` (it then exits 2), or None when it passes."""
    lines: list[str] = []
    try:
        preflight.check(f"paddle_recipes.recipes.{recipe}", argv, report=lines.append)
    except SystemExit as exc:
        assert exc.code == 2 and len(lines) == 1, (exc.code, lines)
        return lines[0]
    assert not lines, lines
    return None


@needs_official
def test_the_system_preflight_checks_only_the_runs_it_loads(tmp_path):
    """Cls only with the orientation stage on; Det not with Det.oracle (eval; predict refuses oracle itself); only
    the system's own modes (another is argparse's error, the recipe's)."""
    bad = _bad_folder(tmp_path, "bad")
    cls_bad = ["-c", str(_system_yml(tmp_path, REC_DIR, REC_DIR, bad, KEYS)), "--mode", "predict"]
    assert _reported("ocr_system", cls_bad) is None
    assert str(bad) in _reported("ocr_system", [*cls_bad, "-o", "Global.use_textline_orientation=true"])
    det_bad = ["-c", str(_system_yml(tmp_path, REC_DIR, bad, REC_DIR, KEYS))]
    assert str(bad) in _reported("ocr_system", [*det_bad, "--mode", "eval"])
    for mode in ("eval", "predict"):
        assert _reported("ocr_system", [*det_bad, "--mode", mode, "-o", "Det.oracle=true"]) is None
    for mode in ("train", "export"):
        assert _reported("ocr_system", [*det_bad, "--mode", mode]) is None


# ------------------------------------------------------------------ det_ppyoloe and ernie_multitask
@needs_official
@pytest.mark.parametrize("recipe,mode", [("det_ppyoloe", "predict"), ("det_ppyoloe", "eval"),
                                         ("ernie_multitask", "eval")])
def test_a_bad_inference_weights_folder_is_one_line_before_paddle(tmp_path, recipe, mode):
    folder = _bad_folder(tmp_path, "w")
    argv = [f"recipes/{recipe}.py", "--mode", mode, "-o", f"Global.output_dir={tmp_path / 'out'}",
            f"Global.weights={folder}"]
    line = _one_line_before_paddle(_run(argv, tmp_path), recipe, "inference.pdiparams", "(rank 100)")
    assert line.startswith(f"{recipe}: error: Global.weights={folder}: "), line


@needs_official
def test_ernie_train_and_foreign_configs_pass_through_to_the_recipe(tmp_path):
    """ernie_multitask's train refuses every weights key in its own words (its eval reads them); a PaddleDetection
    YAML (no Global: a translator maps its keys) is not read raw, our own det_ppyoloe config is."""
    bad = _bad_folder(tmp_path, "bad")
    weights = ["-o", f"Global.weights={bad}"]
    assert _reported("ernie_multitask", ["--mode", "train", *weights]) is None
    assert str(bad) in _reported("ernie_multitask", ["--mode", "eval", *weights])
    ppdet = tmp_path / "ppyoloe_ppdet.yml"
    ppdet.write_text(f"weights: {bad}\nepoch: 80\n")
    assert _reported("det_ppyoloe", ["-c", str(ppdet), "--mode", "eval"]) is None
    assert _reported("det_ppyoloe", ["-c", str(ppdet), "--mode", "eval", *weights]) is None
    assert str(bad) in _reported("det_ppyoloe", ["--mode", "eval", *weights])


def test_every_recipe_has_a_preflight_entry_and_every_script_runs_it():
    from paddle_recipes.recipes import RECIPES
    assert set(preflight.RECIPES) == set(RECIPES)
    for name in RECIPES:
        text = (Path(__file__).resolve().parents[2] / "recipes" / f"{name}.py").read_text()
        assert 'preflight="paddle_recipes.recipes.preflight"' in text, name


@needs_official
def test_a_released_folder_with_its_info_is_checked_without_importing_paddle():
    """A real download has inference.pdiparams.info, read by serialization.load_plain, whose allowlist held paddle's
    GeneratorState (old checkpoints' RNG state): building it imported paddle, so the pre-flight of every real folder
    imported paddle (signals not held). Now paddle is imported only for a pickle that names a paddle global."""
    code = ("import sys\nfrom paddle_recipes.formats.inference_files import check_inference_files\n"
            f"check_inference_files({str(REC_DIR)!r})\nprint('paddle' in sys.modules)")
    assert (REC_DIR / "inference.pdiparams.info").is_file()
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=_clean_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", (proc.stdout, proc.stderr[-2000:])
