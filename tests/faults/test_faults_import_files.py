"""Fault suite: every file the released-model importer reads is bounded before it is parsed (issue 53 items 1, 3).

Found (a 3,000 MiB memory cap, on 53365d6): a 200 MB inference.json of small objects and a 140 MB .pdmodel were
OOM-killed, a 55 MB inference.yml took 2.4 GB and 125 s; an alias bomb in inference.yml built the repr of its
expansion in the error message (1.5 GB at 9 levels, OOM at 10); .pdiparams dims whose int64 product wraps to 0, or
100 dims, reached numpy's reshape (a traceback, exit 1); an inference.yml refused for a python tag or an alias bomb
was reported as "character dict file not found", a FIFO named inference.pdiparams as "missing".
Now: byte caps (formats/inference_files.py: 16 MiB programs, 4 MiB .info, 1 MiB inference.yml;
$PADDLE_RECIPES_IMPORT_MAX_MIB), inference.yml through config.load_yaml, headers checked, one line, exit 2.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, _clean_env, run_cli
from paddle_recipes.formats.inference_files import (CAP_ENV, DICT_MAX_BYTES, INFO_MAX_BYTES, PARAMS_CAP_ENV,
                                                   PROGRAM_MAX_BYTES,
                                                   YML_MAX_BYTES, InferenceFormatError, find_inference_files, read_params_info,
                                                   read_pdiparams, read_program, read_inference_yml)
from paddle_recipes.tasks.ocr_rec.charset import CharDict, CharDictError, model_dict_file
from test_ppocr_import import IMAGES, KEYS, REC_DIR, REC_YAML, needs_official, without_info

ALIAS_BOMB = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] +
                       [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)] +
                       ["PostProcess:", "  name: CTCLabelDecode", "  character_dict: [blank, '0', *a9]"]) + "\n"


def _model_dir(tmp_path: Path, name: str = "m") -> Path:
    """A legacy rec inference folder: the released PP-OCRv4 rec files (no .info)."""
    return without_info(REC_DIR, tmp_path / name)


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk (only its stat is read before it is refused)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text and len(text) < 400, text[:1000]
    return text


# ------------------------------------------------------------------ byte caps
@needs_official
@pytest.mark.parametrize("name,cap", [("inference.pdmodel", PROGRAM_MAX_BYTES), ("inference.json", PROGRAM_MAX_BYTES),
                                      ("inference.pdiparams.info", INFO_MAX_BYTES)])
def test_an_oversize_importer_file_is_refused_by_its_size(tmp_path, name, cap):
    folder = _model_dir(tmp_path)
    if name == "inference.json":  # a PIR folder: the json is read, the .pdmodel is not
        (folder / "inference.pdmodel").unlink()
    _sparse(folder / name, cap + 1)
    files = find_inference_files(folder)
    with pytest.raises(InferenceFormatError) as e:
        read_params_info(files.info) if name.endswith(".info") else read_program(files)
    assert re.fullmatch(rf"{re.escape(str(folder / name))}: {cap + 1:,} bytes: a .* may have at most {cap:,} bytes "
                        rf"\({cap >> 20} MiB; \${CAP_ENV} sets another cap in MiB\): refused", _one_line(e)), str(e.value)


def test_an_oversize_inference_yml_is_refused_by_its_size(tmp_path):
    yml = _sparse(tmp_path / "inference.yml", YML_MAX_BYTES + 1)
    for read in (lambda: model_dict_file(tmp_path), lambda: CharDict.from_file(tmp_path)):
        with pytest.raises(CharDictError) as e:
            read()
        assert _one_line(e) == (f"{yml}: inference.yml refused: {YML_MAX_BYTES + 1:,} bytes: an inference.yml may have "
                                f"at most {YML_MAX_BYTES:,} bytes (1 MiB; ${CAP_ENV} sets another cap in MiB): refused")


def test_an_oversize_character_dict_is_refused_by_its_size(tmp_path):
    """A one-char-per-line dict over 1 MiB (the largest real one, ppocrv5_dict.txt, is ~0.07 MB): refused from its
    size; the old reader read it whole (a 1 GB line without a newline: 1 GB)."""
    txt = _sparse(tmp_path / "dict.txt", DICT_MAX_BYTES + 1)
    with pytest.raises(CharDictError) as e:
        CharDict.from_file(txt)
    assert _one_line(e) == (f"{txt}: {DICT_MAX_BYTES + 1:,} bytes: a character dict file may have at most "
                            f"{DICT_MAX_BYTES:,} bytes (1 MiB; ${CAP_ENV} sets another cap in MiB): refused")


@needs_official
def test_the_caps_fit_the_real_files_and_the_env_var_sets_them(tmp_path, monkeypatch):
    """The released files read under the default caps; $PADDLE_RECIPES_IMPORT_MAX_MIB replaces all three caps."""
    files = find_inference_files(REC_DIR)
    assert read_program(files).params and read_params_info(files.info)
    size = files.model.stat().st_size
    monkeypatch.setenv(CAP_ENV, str(size / 2 ** 20 / 2))
    with pytest.raises(InferenceFormatError, match=rf"inference\.pdmodel: {size:,} bytes: .* refused$"):
        read_program(files)
    monkeypatch.setenv(CAP_ENV, "64")
    assert read_program(files).params
    for bad in ("lots", "inf", "nan", "-1"):
        monkeypatch.setenv(CAP_ENV, bad)
        with pytest.raises(InferenceFormatError, match=rf"^\${CAP_ENV}='{bad}': expected a positive number of MiB$"):
            read_program(files)
    monkeypatch.delenv(CAP_ENV)
    assert CharDict.from_file(KEYS).chars  # the released dict (26 KB) under the default cap


# ------------------------------------------------------------------ inference.yml: what is refused, and why
def test_inference_yml_alias_bomb_is_refused_not_dict_not_found(tmp_path):
    """10 levels of 10 aliases in 500 bytes (10^10 values): refused by the configs' loader, named as such; the
    message never builds the expansion. Run under a 1.5 GB address-space limit: the old message OOMed."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "inference.yml").write_text(ALIAS_BOMB, encoding="utf-8")
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))\n"
            "from paddle_recipes.tasks.ocr_rec.charset import CharDict, CharDictError\n"
            "try:\n    CharDict.from_file(sys.argv[1])\nexcept CharDictError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], cwd=REPO_ROOT, env=_clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.strip() == (
        f"{tmp_path / 'm' / 'inference.yml'}: inference.yml refused: YAML aliases under 'a5' expand to more than 1,000,000 values (an alias bomb?): refused"), proc.stdout


def test_inference_yml_refusals_say_what_happened(tmp_path):
    """A python tag, bad UTF-8, a FIFO: 'inference.yml refused: <why>', never 'dict not found' (the recipe's
    fallback to the weights' folder dict raises it rather than passing over it)."""
    cases = {"tag": ("!!python/object/apply:os.system ['true']\n",
                     r"inference\.yml refused: not a readable YAML file \(could not determine a constructor for the "
                     r"tag 'tag:yaml\.org,2002:python/object/apply:os\.system' \(line 1, column 1\); safe YAML only\)$"),
             "latin1": (b"PostProcess: {character_dict: ['\xe9']}\n",
                        r"inference\.yml refused: not UTF-8 text \(at byte offset 32\)$"),
             "fifo": (None, r"inference\.yml refused: not a regular file \(a FIFO\)$")}
    for case, (text, pattern) in cases.items():
        folder = tmp_path / case
        folder.mkdir()
        (folder / "character_dict.txt").write_text("a\nb\n", encoding="utf-8")  # not taken instead: the yml is bad
        yml = folder / "inference.yml"
        if text is None:
            os.mkfifo(yml)
        elif isinstance(text, bytes):
            yml.write_bytes(text)
        else:
            yml.write_text(text, encoding="utf-8")
        with pytest.raises(CharDictError) as e:
            model_dict_file(folder)
        assert re.fullmatch(re.escape(f"{yml}: ") + pattern, _one_line(e)), (case, str(e.value))


def test_a_huge_bad_entry_is_named_in_a_bounded_message(tmp_path):
    """An entry that is a 900,000-value list (under the alias cap): the message shows a bounded repr of it."""
    yml = tmp_path / "inference.yml"
    yml.write_text("a: &a [" + ", ".join(["x"] * 1000) + "]\nb: &b [" + ", ".join(["*a"] * 400) + "]\n"
                   "PostProcess: {character_dict: [blank, x, *b]}\n", encoding="utf-8")
    with pytest.raises(CharDictError) as e:
        CharDict.from_file(yml)
    assert re.fullmatch(re.escape(f"{yml}: PostProcess.character_dict entry 3 is [['x', ") + r".{10,70}\.\.\.; "
                        r"expected a character", _one_line(e)), str(e.value)
    assert read_inference_yml(yml)["PostProcess"]["character_dict"][0] == "blank"


# ------------------------------------------------------------------ .pdiparams headers
def _tensor_stream(dims, dtype: str = "FP32", data: bytes = b"\0" * 64, levels: int = 0) -> bytes:
    from paddle.base.proto import framework_pb2 as fpb

    desc = fpb.VarType.TensorDesc(data_type=getattr(fpb.VarType, dtype), dims=dims).SerializeToString()
    return (np.uint32(0).tobytes() + np.uint64(levels).tobytes() + np.uint32(0).tobytes()
            + np.int32(len(desc)).tobytes() + desc + data)


HEADERS = {"int64 wrap": ([1 << 32, 1 << 32], r"truncated or corrupt at tensor 'w' \(1 of 1\) data \(FP32 "
                                              r"\[4294967296, 4294967296\]\) \(byte \d+: needs 73786976294838206464 "
                                              r"bytes, 64 left\)"),
           "100 dims": ([1] * 100, r"tensor 'w' \(1 of 1\): shape \[1, 1, 1, 1, 1, 1, \.\.\.\] \(rank 100\): a tensor "
                                   r"has at most 9 dims, each > 0: corrupt"),
           "zero dim": ([4, 0], r"tensor 'w' \(1 of 1\): shape \[4, 0\] \(rank 2\): a tensor has at most 9 dims, each > "
                                r"0: corrupt"),
           "negative dim": ([-1, 16], r"tensor 'w' \(1 of 1\): shape \[-1, 16\] \(rank 2\): .*: corrupt")}


@pytest.mark.parametrize("case", list(HEADERS))
def test_a_bad_pdiparams_header_is_one_line_before_any_allocation(tmp_path, case):
    dims, pattern = HEADERS[case]
    (tmp_path / "x.pdiparams").write_bytes(_tensor_stream(dims))
    with pytest.raises(InferenceFormatError) as e:
        read_pdiparams(tmp_path / "x.pdiparams", ["w"])
    assert re.fullmatch(re.escape(f"{tmp_path / 'x.pdiparams'}: ") + pattern, _one_line(e)), str(e.value)


def test_lod_levels_and_tensor_desc_sizes_are_bounded(tmp_path):
    (tmp_path / "lod.pdiparams").write_bytes(_tensor_stream([2], levels=1 << 40))
    with pytest.raises(InferenceFormatError, match=r"tensor 'w' \(1 of 1\): 1,099,511,627,776 LoD levels"):
        read_pdiparams(tmp_path / "lod.pdiparams", ["w"])
    blob = np.uint32(0).tobytes() + np.uint64(0).tobytes() + np.uint32(0).tobytes() + np.int32(1 << 30).tobytes()
    (tmp_path / "desc.pdiparams").write_bytes(blob + b"\0" * 64)
    with pytest.raises(InferenceFormatError, match=r"a TensorDesc of 1,073,741,824 bytes \(at most 1,024\): corrupt"):
        read_pdiparams(tmp_path / "desc.pdiparams", ["w"])


@needs_official
def test_a_huge_sparse_pdiparams_is_read_piece_by_piece_under_a_memory_limit(tmp_path):
    """The released weights followed by an 8 GiB hole (no disk used): refused for its trailing bytes under a 1.5 GB
    address-space limit (the old reader read the whole file first: MemoryError, a traceback). The .pdiparams cap
    (2 GiB, test_faults_preflight) is raised here to 16 GiB: this is about the reader under it."""
    folder = _model_dir(tmp_path)
    with open(folder / "inference.pdiparams", "r+b") as f:
        f.truncate(f.seek(0, os.SEEK_END) + (8 << 30))
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))\n"
            "from paddle_recipes.formats.inference_files import InferenceFormatError, find_inference_files, "
            "read_pdiparams, read_program\n"
            "files = find_inference_files(sys.argv[1])\n"
            "try:\n    read_pdiparams(files.params, read_program(files).param_names)\n"
            "except InferenceFormatError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=REPO_ROOT,
                          env=_clean_env({PARAMS_CAP_ENV: "16384"}), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == (f"{folder / 'inference.pdiparams'}: {8 << 30:,} bytes after the "
                                                    "234 tensors the program names (weights of another model?)\n"), \
        (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])


def test_a_tensor_whose_shape_differs_from_the_program_is_refused_before_its_data(tmp_path):
    """A header within the file but not the program's shape (another model's weights, or a header rewritten to
    claim the whole file): refused before its data is allocated."""
    (tmp_path / "x.pdiparams").write_bytes(_tensor_stream([4, 4]))
    with pytest.raises(InferenceFormatError) as e:
        read_pdiparams(tmp_path / "x.pdiparams", ["w"], {"w": (2, 8)})
    assert _one_line(e) == (f"{tmp_path / 'x.pdiparams'}: tensor 'w' (1 of 1): shape [4, 4] here, [2, 8] in the "
                            "program: corrupt, or the weights of another model")
    assert read_pdiparams(tmp_path / "x.pdiparams", ["w"], {"w": (4, 4)})["w"].shape == (4, 4)


# ------------------------------------------------------------------ not regular files
@needs_official
@pytest.mark.parametrize("name", ["inference.pdiparams", "inference.pdmodel", "inference.pdiparams.info"])
def test_a_fifo_in_an_inference_folder_is_named_as_a_fifo(tmp_path, name):
    folder = _model_dir(tmp_path)
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    with pytest.raises(InferenceFormatError) as e:
        find_inference_files(folder)
    assert _one_line(e) == f"{folder / name}: not a regular file (a FIFO)"
    if name == "inference.pdiparams":  # read directly, too
        with pytest.raises(InferenceFormatError, match=re.escape(f"{folder / name}: not a regular file (a FIFO)")):
            read_pdiparams(folder / name, ["w"])


# ------------------------------------------------------------------ the recipe: one line, exit 2, eval / predict / train
def _bad_header_dir(tmp_path: Path, dims) -> Path:
    """The released rec files whose first tensor's header claims `dims` (the rest of the file dropped)."""
    folder = _model_dir(tmp_path, "bad_header")
    (folder / "inference.pdiparams").write_bytes(_tensor_stream(dims))
    return folder


@needs_official
@pytest.mark.parametrize("mode,key", [("eval", "Global.weights"), ("predict", "Global.pretrained_model"),
                                      ("train", "Global.pretrained_model")])
@pytest.mark.parametrize("dims", [[1 << 32, 1 << 32], [1] * 100], ids=["wrap", "rank100"])
def test_bad_pdiparams_header_is_one_line_exit_2_in_every_mode(tmp_path, capsys, monkeypatch, mode, key, dims):
    """...before the network is built (Recipe.check_weights_files: headers only, milliseconds; the build of the
    PP-OCRv4 rec network takes seconds)."""
    from paddle_recipes.recipes.ocr_rec import OcrRec

    def never(self):
        raise AssertionError("the network was built before the weights' files were checked")

    monkeypatch.setattr(OcrRec, "build_model", never)

    from test_paddleocr_recipe import DICT_A, data_opts, write_label_set

    folder = _bad_header_dir(tmp_path, dims)
    data = write_label_set(tmp_path / "data", DICT_A, n=4)  # eval and train build their data sets first
    opts = [o for o in data_opts(data, tmp_path / "out", "PP-OCRv4/PP-OCRv4_mobile_rec.yml")
            if not o.startswith("Global.pretrained_model")]
    code, err = run_cli(OcrRec, ["-c", str(REC_YAML), "--mode", mode, "-o", *opts, f"{key}={folder}",
                                 f"Global.infer_img={IMAGES / 'line.jpg'}",
                                 f"Global.save_res_path={tmp_path / 'out' / 'res.txt'}"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err[-3000:])
    # eval / predict name the key ("Global.weights=<folder>: <file>: ..."), train the file; a long line is cut
    # in its middle by the CLI, the start and the reason kept
    assert lines[0].startswith((f"ocr_rec: error: {key}={folder}: ", f"ocr_rec: error: {folder}/inference.pdiparams: "))
    # the importer knows the program's shapes: a wrapped product is refused as not the program's shape
    assert lines[0].endswith("in the program: corrupt, or the weights of another model" if dims[0] > 1 else
                             "(rank 100): a tensor has at most 9 dims, each > 0: corrupt"), lines


# The child reports its own peak (VmHWM of its own address space, written at exit): os.wait4's ru_maxrss keeps the
# high-water mark of the address space the child was forked from, i.e. the pytest worker's (measured: 1.1 GB under
# the suite for a child whose own peak was 0.3 GB).
_PEAK_WRAPPER = ("import atexit, os, re, runpy, sys\n"
                 "def _peak():\n"
                 "    with open('/proc/self/status') as f:\n"
                 "        kib = re.search(r'VmHWM:\\s+(\\d+)', f.read()).group(1)\n"
                 "    with open(os.environ['PEAK_RSS_FILE'], 'w') as f:\n"
                 "        f.write(f\"{kib} {int('paddle' in sys.modules)}\")\n"
                 "atexit.register(_peak)\n"
                 "sys.argv = sys.argv[1:]\n"
                 "if sys.argv[0] == '-m':  # as python -m: sys.argv[0] is '-m' while the packages import\n"
                 "    module, sys.argv = sys.argv[1], ['-m', *sys.argv[2:]]\n"
                 "    runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
                 "else:\n"
                 "    runpy.run_path(sys.argv[0], run_name='__main__')\n")


def child_run(cmd: list[str], env: dict | None = None, tmp: Path | None = None) -> tuple[int, str, float, bool]:
    """(exit code, stderr, peak RSS in MiB, whether paddle was imported) of the python script `cmd` = [python,
    script or -m module, args...], the peak and the imports read by the child itself at its exit (_PEAK_WRAPPER)."""
    peak_file = Path(tmp or REPO_ROOT) / f".peak_rss_{os.getpid()}"
    peak_file.unlink(missing_ok=True)
    proc = subprocess.run([cmd[0], "-c", _PEAK_WRAPPER, *cmd[1:]], cwd=REPO_ROOT,
                          env=_clean_env({**(env or {}), "PEAK_RSS_FILE": str(peak_file)}), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=600)
    assert peak_file.is_file(), f"the child wrote no peak (exit {proc.returncode}): {proc.stderr[-2000:]}"
    kib, paddle = peak_file.read_text().split()
    peak_file.unlink()
    return proc.returncode, proc.stderr, int(kib) / 1024, paddle == "1"


def _peak_run(cmd: list[str], env: dict | None = None, tmp: Path | None = None) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MiB) of child_run."""
    return child_run(cmd, env, tmp)[:3]


@needs_official
def test_oversize_files_end_the_recipe_in_one_line_with_small_peak_memory(tmp_path):
    """A 64 MB inference.json of empty objects (old: parsed, ~2 GB) and a 24 MB inference.yml (old: ~1 GB, a minute)
    as the weights' folder: one line naming the file, exit 2, peak RSS of the process under 1 GB."""
    pir = _model_dir(tmp_path, "pir")
    (pir / "inference.pdmodel").unlink()
    with open(pir / "inference.json", "w") as f:
        f.write('{"program": [' + "{}," * ((64 << 20) // 3) + "{}]}")
    yml_dir = _model_dir(tmp_path, "yml")  # its dict is looked for: Global.character_dict_path does not exist
    with open(yml_dir / "inference.yml", "w") as f:
        f.write("PostProcess:\n  character_dict:\n" + "  - a\n" * (4 << 20))
    for folder, key, name, dict_path in ((pir, "Global.weights", "inference.json", KEYS),
                                         (yml_dir, "Global.pretrained_model", "inference.yml", tmp_path / "absent")):
        cmd = [sys.executable, "recipes/ocr_rec.py", "-c", str(REC_YAML), "--mode", "predict", "-o", f"{key}={folder}",
               f"Global.character_dict_path={dict_path}", f"Global.save_model_dir={tmp_path / 'out'}",
               f"Global.infer_img={IMAGES / 'line.jpg'}", f"Global.save_res_path={tmp_path / 'out' / 'res.txt'}"]
        code, err, peak = _peak_run(cmd, tmp=tmp_path)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and f"{folder / name}:" in lines[0] and "refused" in lines[0], \
            (code, err[-3000:])
        assert peak < 1024, f"{name}: peak RSS {peak:.0f} MiB"
