"""Safe weight loading (paddle_recipes.checkpoint.serialization): a crafted checkpoint never runs code, through
every weights path of the recipes; every format paddle.save writes still loads exactly as paddle.load
reads it; state.pkl holds plain values; safetensors round trips."""
from __future__ import annotations

import collections
import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import load_checkpoint, save_checkpoint
from paddle_recipes.checkpoint.state import rng_state, set_rng_state
from paddle_recipes.checkpoint.serialization import (UnsafeWeightsError, WeightsFileError, check_plain, load_plain,
                                                     load_safetensors, load_weights_file, save_safetensors)

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "paddle_recipes" / "configs"


# ----------------------------------------------------------------------------- crafted files
class _System:
    """Unpickling this runs `touch marker` (pickled as posix.system)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


class _EvalAbuse:
    """paddle's own DenseTensor form is eval('data', {'data': array}); this uses the same global for code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return eval, (f"open({self.marker!r}, 'w').close()", {"data": np.zeros(1)})


def crafted(path: Path, marker: Path, payload=_System, protocol: int = 4) -> Path:
    """A file shaped like paddle.save(state_dict) (arrays + name table) with one value that runs code."""
    obj = {"conv.weight": np.ones((2, 2), "float32"), "conv.bias": payload(marker),
           "StructuredToParameterName@@": {"conv.weight": "conv2d_0.w_0", "conv.bias": "conv2d_0.b_0"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    return path


def test_the_crafted_file_does_run_code_under_paddle_load(tmp_path):
    """Control: the payload of these tests is real (paddle.load runs it), so 'marker absent' below means something."""
    marker = tmp_path / "ran"
    paddle.load(str(crafted(tmp_path / "x.pdparams", marker)))
    assert marker.exists()


@pytest.mark.parametrize("payload,protocol,global_name", [(_System, 2, "posix.system"), (_System, 4, "posix.system"),
                                                          (_EvalAbuse, 4, "builtins.eval (other than paddle's DenseTensor form)")])
def test_crafted_payload_is_refused_in_one_line(tmp_path, payload, protocol, global_name):
    marker = tmp_path / "ran"
    path = crafted(tmp_path / "x.pdparams", marker, payload, protocol)
    with pytest.raises(WeightsFileError) as exc:  # the eval form: allowed name, refused arguments
        load_weights_file(path)
    msg = str(exc.value)
    assert not marker.exists()
    assert "\n" not in msg and isinstance(exc.value, UnsafeWeightsError)
    assert msg.startswith(f"refusing to load {path}: it references {global_name}, which a weights file never needs")


def test_persistent_ids_and_other_globals_are_refused(tmp_path):
    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return "storage0" if isinstance(obj, str) and obj == "pid" else None

    path = tmp_path / "pid.pdparams"
    with open(path, "wb") as f:
        P(f, protocol=2).dump({"w": "pid"})
    with pytest.raises(UnsafeWeightsError, match=rf"refusing to load {path}: it holds a persistent id"):
        load_weights_file(path)
    for name, obj in [("builtins.getattr", getattr), ("numpy.memmap", np.memmap), ("collections.Counter", collections.Counter)]:
        path.write_bytes(pickle.dumps({"w": obj}, protocol=4))
        with pytest.raises(UnsafeWeightsError, match=rf"it references {name},"):
            load_weights_file(path)
    # a name with a newline (STACK_GLOBAL takes any string) stays on one line
    path.write_bytes(b"\x80\x04\x8c\x02os\x8c\x0csystem\nhello\x93.")
    with pytest.raises(UnsafeWeightsError) as exc:
        load_weights_file(path)
    assert "\n" not in str(exc.value) and "it references 'os.system\\nhello'," in str(exc.value)


# ----------------------------------------------------------------------------- what paddle.save writes loads as before
def _same(a, b, where="obj"):
    if isinstance(a, dict):
        assert type(a) is type(b) and list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, paddle.Tensor):
        assert isinstance(b, paddle.Tensor) and a.dtype == b.dtype, where
        if not a.name.startswith("generated_tensor"):
            assert a.name == b.name, where
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, np.ndarray):
        assert type(b) is np.ndarray and a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and a == b, where


def _trained_model_and_optimizer():
    paddle.seed(0)
    model = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.BatchNorm2D(4), paddle.nn.Flatten(),
                                 paddle.nn.Linear(4 * 36, 2))
    opt = paddle.optimizer.AdamW(learning_rate=paddle.optimizer.lr.CosineAnnealingDecay(0.1, 10),
                                 parameters=model.parameters(), multi_precision=True)
    model(paddle.randn([1, 3, 8, 8])).mean().backward()
    opt.step()
    return model, opt


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_paddle_save_files_load_as_paddle_load_reads_them(tmp_path, protocol):
    """state_dict, optimizer state (LR_Scheduler), a nested dict / list / lone tensor (paddle's _pickle_save with
    reduce_varbase), mixed dtypes (fp16, bf16, int64, bool), numpy scalars: same keys, dtypes, names, values."""
    model, opt = _trained_model_and_optimizer()
    objs = {"model": model.state_dict(), "opt": opt.state_dict(),
            "nested": {"model": model.state_dict(), "ema": {"w": paddle.ones([2])}},
            "list": [paddle.ones([2]), paddle.zeros([3], dtype="int64")], "tensor": paddle.arange(5),
            "dtypes": {"h": paddle.ones([2]).astype("float16"), "b": paddle.ones([2]).astype("bfloat16"),
                       "i": paddle.to_tensor([1], dtype="int64"), "t": paddle.to_tensor([True])},
            "npscalar": {"x": np.float32(1.5), "y": np.ones(2, dtype="float16"), "epoch": 3}}
    for name, obj in objs.items():
        path = tmp_path / f"{name}.pdparams"
        paddle.save(obj, str(path), protocol=protocol)
        for return_numpy in (False, True):
            _same(paddle.load(str(path), return_numpy=return_numpy), load_weights_file(path, return_numpy), name)


def test_big_tensor_slices_and_numpy1_names_load(tmp_path):
    """Protocol 2/3 split tensors over 2**30 bytes into KEY@@.i slices (UnpackBigParamInfor@@; the real split was
    checked once with a 1 GiB tensor); files of numpy 1.x name numpy.core.multiarray. Both as paddle.load reads."""
    w = np.arange(12, dtype="float32").reshape(3, 4)
    flat = w.reshape(-1)
    obj = {"w@@.0": flat[:5], "w@@.1": flat[5:], "b": np.ones(2, "float32"),
           "UnpackBigParamInfor@@": {"w": {"OriginShape": (3, 4), "slices": ["w@@.0", "w@@.1"]}},
           "StructuredToParameterName@@": {"w": "linear_0.w_0", "b": "linear_0.b_0"}}
    raw = pickle.dumps(obj, protocol=2)
    assert b"numpy._core.multiarray" in raw
    for i, data in enumerate([raw, raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")]):
        path = tmp_path / f"big{i}.pdparams"
        path.write_bytes(data)
        got, ref = load_weights_file(path), paddle.load(str(path))
        _same(ref, got)
        assert list(got) == ["b", "w"] and got["w"].name == "linear_0.w_0"
        np.testing.assert_array_equal(got["w"].numpy(), w)


def test_unreadable_files_are_one_line_errors(tmp_path):
    good = tmp_path / "good.pdparams"
    paddle.save({"w": paddle.ones([64, 64])}, str(good))
    cut = tmp_path / "cut.pdparams"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    text = tmp_path / "text.pdparams"
    text.write_text("not weights\n")
    cyclic = tmp_path / "cyclic.pdparams"
    loop = [np.ones(2)]
    loop.append(loop)
    cyclic.write_bytes(pickle.dumps({"w": loop}, protocol=4))
    for path in (cut, text, tmp_path / "absent.pdparams", cyclic):
        with pytest.raises(WeightsFileError) as exc:
            load_weights_file(path)
        assert str(path) in str(exc.value) and "\n" not in str(exc.value)


# ----------------------------------------------------------------------------- memory bombs (issue 37 item 6)
_GIB6 = (6 << 30).to_bytes(5, "little")
BOMBS = {  # what the fault battery used: no code runs, but each allocated 6 GiB (or 48) from a few bytes
    "bytearray": (b"\x80\x02c__builtin__\nbytearray\nq\x00\x8a\x05" + _GIB6 + b"\x85R.", "bytearray", 6 << 30),
    "ndarray": (b"\x80\x02cnumpy\nndarray\n\x8a\x05" + _GIB6 + b"\x85\x85R.", "numpy.ndarray", 48 << 30),
    "reconstruct": (b"\x80\x02cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\n\x8a\x05" + _GIB6
                    + b"\x85U\x01b\x87R.", "numpy _reconstruct", 6 << 30),
}


def _load_capped(path: Path) -> subprocess.CompletedProcess:
    """load_weights_file in a child whose address space is capped at 1 GiB: a refusal that came after the
    allocation would be a MemoryError there (and never 6 GiB of this machine's memory)."""
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from paddle_recipes.checkpoint.serialization import load_weights_file, WeightsFileError\n"
            "try:\n    load_weights_file(__import__('sys').argv[1])\nexcept WeightsFileError as exc:\n    print(exc)")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_allocation_bombs_are_refused_before_allocating(tmp_path, name):
    data, what, nbytes = BOMBS[name]
    path = tmp_path / f"{name}.pdparams"
    path.write_bytes(data)
    done = _load_capped(path)
    assert done.returncode == 0 and done.stdout.splitlines() == [
        f"refusing to load {path}: {what} asks for {nbytes:,} bytes, more than the file's {len(data)} bytes can "
        "hold: a memory bomb, not a weights file"], (done.stdout, done.stderr[-2000:])


class _Shared:
    """Pickles as `reduce_value` (a memoized reduce tuple): many objects from one stored value."""

    def __init__(self, reduce_value):
        self.reduce_value = reduce_value

    def __reduce__(self):
        return self.reduce_value


def test_amplification_through_memoized_values_is_refused(tmp_path):
    """One stored 1 MiB buffer referenced by 300 arrays (each would become its own tensor copy: 300 MiB), or one
    stored list turned into 2000 tuples: refused in one line, as the file holds neither that many bytes."""
    arr = np.ones(1 << 20, dtype=np.uint8)
    views = tmp_path / "views.pdparams"
    shared = arr.__reduce__()
    views.write_bytes(pickle.dumps({f"w{i}": _Shared(shared) for i in range(300)}, protocol=2))
    assert views.stat().st_size < 2 << 20
    with pytest.raises(WeightsFileError, match=rf"^refusing to load {views}: its arrays hold 314,572,800 bytes, more "
                                                rf"than the file's [0-9,]+ bytes \(views of one buffer\): a memory bomb"):
        load_weights_file(views)
    tuples = tmp_path / "tuples.pdparams"
    shared = (tuple, (list(range(10_000)),))
    tuples.write_bytes(pickle.dumps([_Shared(shared) for _ in range(2000)], protocol=2))
    with pytest.raises(WeightsFileError, match=rf"^refusing to load {tuples}: builtins.tuple asks for 80,000 bytes, "
                                                "more than the file's"):
        load_weights_file(tuples)


def test_shared_tensors_and_special_files(tmp_path):
    """A tensor saved under two keys (tied weights) loads as paddle.load reads it; a FIFO or /dev/zero named as weights is
    refused in one line without being opened (a FIFO would block, /dev/zero never ends)."""
    w = paddle.ones([4, 4])
    tied = tmp_path / "tied.pdparams"
    paddle.save({"emb": w, "head": w}, str(tied))
    _same(paddle.load(str(tied)), load_weights_file(tied))
    fifo = tmp_path / "fifo.pdparams"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(WeightsFileError, match=rf"^{path}: not a weights file \(a FIFO, device or socket, not a "
                                                    r"regular file\)$"):
            load_weights_file(path)
        with pytest.raises(WeightsFileError, match="not a regular file"):
            load_plain(path)


# ----------------------------------------------------------------------------- state.pkl: plain values only
def test_checkpoint_state_is_plain_and_rng_round_trips(tmp_path):
    model = paddle.nn.Linear(2, 2)
    paddle.seed(5)
    np.random.seed(5)
    state = {"model": model.state_dict(), "rng": rng_state(), "best": np.float64(0.5), "od": collections.OrderedDict(a=1)}
    folder = save_checkpoint(tmp_path, state, "step_1")
    want = (paddle.rand([3]).numpy(), np.random.rand(3))
    loaded = load_checkpoint(folder)
    set_rng_state(loaded["rng"])
    np.testing.assert_array_equal(paddle.rand([3]).numpy(), want[0])
    np.testing.assert_array_equal(np.random.rand(3), want[1])
    check_plain({k: v for k, v in loaded.items() if k not in ("model", "path")})

    class Thing:
        pass

    with pytest.raises(TypeError, match=r"checkpoint state.extra\[1\] is a .*Thing: not a plain value"):
        save_checkpoint(tmp_path, {"model": model.state_dict(), "extra": [1, Thing()]}, "step_2")
    assert (tmp_path / "latest").read_text().strip() == "step_1" and not (tmp_path / "step_2").exists()


def test_state_pkl_of_earlier_versions_still_loads(tmp_path):
    """Before this change state.pkl pickled paddle's GeneratorState objects: those still resume (and set the RNG)."""
    folder = save_checkpoint(tmp_path, {"epoch": 1}, "step_1")
    paddle.seed(9)
    legacy = {"epoch": 1, "rng": {"python": __import__("random").getstate(), "numpy": np.random.get_state(),
                                  "paddle": paddle.get_rng_state()}}
    want = paddle.rand([2]).numpy()
    (folder / "state.pkl").write_bytes(pickle.dumps(legacy, protocol=5))
    set_rng_state(load_checkpoint(folder)["rng"])
    np.testing.assert_array_equal(paddle.rand([2]).numpy(), want)


def test_crafted_state_pkl_is_refused(tmp_path):
    marker = tmp_path / "ran"
    folder = save_checkpoint(tmp_path, {"epoch": 1}, "step_1")
    (folder / "state.pkl").write_bytes(pickle.dumps({"epoch": _System(marker)}, protocol=5))
    with pytest.raises(UnsafeWeightsError, match=rf"^refusing to load {folder / 'state.pkl'}: it references posix.system"):
        load_plain(folder / "state.pkl")
    assert not marker.exists()


# ----------------------------------------------------------------------------- safetensors
def test_safetensors_round_trip(tmp_path):
    model, _ = _trained_model_and_optimizer()
    sd = dict(model.state_dict())
    sd["half"] = paddle.ones([3]).astype("float16") * 0.5
    sd["bf16"] = paddle.to_tensor([1.5, -2.0, 3.25]).astype("bfloat16")
    sd["steps"] = paddle.to_tensor([7], dtype="int64")
    path = save_safetensors(sd, tmp_path / "model.safetensors")
    assert path.read_bytes()[8:9] == b"{"
    for got in (load_safetensors(path), load_weights_file(path)):  # load_weights_file recognises the header
        assert sorted(got) == sorted(sd)  # safetensors keeps keys sorted
        for k, v in sd.items():
            assert got[k].dtype == v.dtype, k
            np.testing.assert_array_equal(got[k].numpy(), v.numpy())
    assert load_weights_file(path, return_numpy=True)["bf16"].dtype == np.uint16  # as paddle.load(return_numpy)
    with pytest.raises(TypeError, match="flat name -> tensor"):
        save_safetensors({"LR_Scheduler": {"last_epoch": 1}}, tmp_path / "opt.safetensors")


# ----------------------------------------------------------------------------- dtypes (issue 37 item 8)
def _tiny():
    paddle.seed(1)
    return paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.BatchNorm1D(4))


def _loaders():
    from paddle_recipes.weights.load import load_weights
    from paddle_recipes.weights.pretrained import load_pretrained

    return {"load_weights": load_weights, "load_pretrained": load_pretrained}


@pytest.mark.parametrize("loader", ["load_weights", "load_pretrained"])
def test_dtype_mismatch_converts_exactly_or_is_one_line(tmp_path, loader, capsys):
    """fp16 .pdparams / bf16 safetensors into an fp32 model: converted (every value exact; paddle stopped with
    `AssertionError: Variable dtype not match`). F64 / I32 / U8 safetensors with the right names: one line naming
    the file, the tensor and both dtypes, exit 2 through the recipes' CLI wrapper."""
    from paddle_recipes.cli import exit_on_user_error

    load = _loaders()[loader]
    src = {k: v * 1.337 for k, v in _tiny().state_dict().items()}
    half = tmp_path / "half.pdparams"
    paddle.save({k: v.astype("float16") for k, v in src.items()}, str(half))
    bf16 = save_safetensors({k: v.astype("bfloat16") for k, v in src.items()}, tmp_path / "bf16.safetensors")
    for path, dtype in ((half, "float16"), (bf16, "bfloat16")):
        model = _tiny()
        load(model, path)
        for k, v in model.state_dict().items():
            assert v.dtype == paddle.float32, k
            np.testing.assert_array_equal(v.numpy(), src[k].astype(dtype).astype("float32").numpy())
    for dtype in ("float64", "int32", "uint8"):
        path = tmp_path / f"{dtype}.safetensors"
        save_safetensors({k: v.numpy().astype(dtype) for k, v in src.items()}, path)
        with pytest.raises(SystemExit) as stop:
            exit_on_user_error(lambda: load(_tiny(), path), "tiny")
        assert stop.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"tiny: error: {path}: tensor '0.weight' is {dtype} in the file but float32 in the model; only exact "
            f"conversions are made (a float or int to a wider one of its kind): convert the file to float32 where "
            "that is what you mean"]


@pytest.mark.parametrize("stored", [np.array(1.5, np.float32), np.ones(3, np.uint8), np.ones(4, np.float32)])
def test_bf16_metadata_on_a_tensor_not_stored_as_uint16_is_one_line(tmp_path, stored):
    """bf16 metadata naming a 0-d, odd-length or float32 tensor (ValueError from numpy's view, or a silent
    reinterpretation as 8 bfloat16 values) is one line naming the tensor."""
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file({"w": stored}, str(path), metadata={"paddle_recipes.bfloat16": '["w"]'})
    with pytest.raises(WeightsFileError) as exc:
        load_weights_file(path)
    assert str(exc.value) == (f"{path}: tensor 'w' is listed as bfloat16 in the metadata but stored as {stored.dtype} "
                              f"{list(stored.shape)}, not as uint16 bits: not a file save_safetensors wrote")
    save_file({"w": stored}, str(path), metadata={"paddle_recipes.bfloat16": '{"w": 1}'})
    with pytest.raises(WeightsFileError, match="metadata paddle_recipes.bfloat16 is not a JSON list of tensor names$"):
        load_weights_file(path)


# ----------------------------------------------------------------------------- every recipe weights path
def _fresh_logging():
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
        root.removeHandler(h)
        h.close()


def _refused(capsys, recipe_cls, argv, path: Path, marker: Path, name: str = "posix.system"):
    """The recipe CLI exits 2 with one stderr line naming the file and the global; the payload never ran."""
    _fresh_logging()
    with pytest.raises(SystemExit) as exc:
        recipe_cls.cli(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2, err
    assert not marker.exists()
    assert len(err) == 1 and err[0].startswith(f"{recipe_cls.name}: error: refusing to load {path}: it references {name},"), err


def _checkpoint_folder(root: Path, tag: str = "step_00000001") -> Path:
    """A complete checkpoint folder layout (state.pkl, model, optimizer, ema) of legit-looking files."""
    folder = save_checkpoint(root, {"model": {"w": paddle.ones([2])}, "optimizer": {"m": paddle.ones([2])},
                                    "ema": {"w": paddle.ones([2])}, "epoch": 0, "global_step": 0}, tag)
    return folder


@pytest.fixture(scope="module")
def ocr_data(tmp_path_factory):
    return tmp_path_factory.mktemp("ocr_data")


OCR_PATHS = ["pretrained_model", "weights_train", "weights_eval", "weights_export", "ema_eval", "pretrained_folder_ema",
             "resume_state.pkl", "resume_model.pdparams", "resume_optimizer.pdopt", "resume_ema.pdparams", "resume_auto"]


@pytest.mark.parametrize("case", OCR_PATHS)
def test_ocr_recipe_weight_paths_refuse_crafted_files(tmp_path, ocr_data, capsys, case):
    from paddle_recipes.recipes.ocr_rec import OcrRec

    marker, out = tmp_path / "ran", tmp_path / "out"
    base = ["-c", str(CONFIGS / "ocr_rec_smoke.yml"), "-o", f"Global.output_dir={out}", f"Synthetic.root={ocr_data}",
            "Synthetic.num_heldout=0", "Synthetic.format=label_file"]  # an LMDB stays open after an in-process error
    mode, opts = [], []
    if case.startswith("resume") or case in ("ema_eval", "pretrained_folder_ema"):
        folder = _checkpoint_folder(out / "checkpoints" if case == "resume_auto" else tmp_path / "ckpt")
        fname = {"ema_eval": "ema.pdparams", "pretrained_folder_ema": "ema.pdparams",
                 "resume_auto": "model.pdparams"}.get(case, case[len("resume_"):])
        path = folder / fname
        if fname == "state.pkl":
            path.write_bytes(pickle.dumps({"epoch": _System(marker)}, protocol=5))
        else:
            crafted(path, marker)
        opts = {"ema_eval": [f"Global.weights={folder}"], "pretrained_folder_ema": [f"Global.pretrained_model={folder}"],
                "resume_auto": ["Global.resume=auto"]}.get(case, [f"Global.resume={folder}"])
        mode = ["--mode", "eval"] if case == "ema_eval" else []
    else:
        path = crafted(tmp_path / "dl" / "best_accuracy.pdparams", marker)
        key, m = {"pretrained_model": ("pretrained_model", "train")}.get(case, case.split("_"))
        opts = [f"Global.{key}={path}"]
        mode = ["--mode", m]
    _refused(capsys, OcrRec, mode + base + opts, path, marker)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_det_recipe_weight_paths_refuse_crafted_files(tmp_path, capsys, mode):
    """det pretrained_model (read first to tell a ppdet checkpoint by its names) and det eval Global.weights."""
    from paddle_recipes.recipes.det_ppyoloe import DetPPYOLOE

    marker = tmp_path / "ran"
    path = crafted(tmp_path / "ppyoloe_plus_crn_s_80e_coco.pdparams", marker, protocol=2)
    key = "pretrained_model" if mode == "train" else "weights"
    _refused(capsys, DetPPYOLOE, ["--mode", mode, "-c", str(CONFIGS / "det_ppyoloe_smoke.yml"), "-o",
                                  f"Global.output_dir={tmp_path / 'out'}", f"Synthetic.root={tmp_path / 'data'}",
                                  "Synthetic.num_train=4", "Synthetic.num_val=2", f"Global.{key}={path}"], path, marker)


@pytest.mark.parametrize("phase", ["distill", "quant"])
def test_ernie_phase_weights_refuse_crafted_files(tmp_path, capsys, phase):
    """ERNIE's teacher (Distill.teacher_path) and the distilled student read by the quant phase."""
    pytest.importorskip("paddlenlp")
    from paddle_recipes.recipes.ernie_multitask import ErnieMultitask

    marker, out = tmp_path / "ran", tmp_path / "out"
    path = crafted(tmp_path / "teacher.pdparams" if phase == "distill" else out / "distill" / "model.pdparams", marker)
    opts = [f"Distill.teacher_path={path}"] if phase == "distill" else []
    _refused(capsys, ErnieMultitask, ["-c", str(CONFIGS / "ernie_multitask_smoke.yml"), "-o", f"Global.output_dir={out}",
                                      f"Global.phases=[{phase}]", "Data.num_tasks=2", "Data.train_size=8",
                                      "Data.eval_size=8", *opts], path, marker)


def test_export_safetensors_round_trip_through_the_recipe(tmp_path, ocr_data):
    """Export.safetensors=true writes the exported (EMA) weights as model.safetensors: exactly the weights the
    export loaded, and Global.weights=model.safetensors evaluates exactly as the checkpoint does."""
    from paddle_recipes.recipes.ocr_rec import OcrRec

    out = tmp_path / "out"
    base = ["-c", str(CONFIGS / "ocr_rec_smoke.yml"), "-o", f"Global.output_dir={out}", f"Synthetic.root={ocr_data}",
            "Synthetic.num_heldout=0", "Synthetic.format=label_file", "Global.epochs=1"]

    def run(argv):
        _fresh_logging()
        return OcrRec.main(argv)

    run(base)
    report = run(["--mode", "export", *base, "Export.safetensors=true"])
    path = Path(report["safetensors"])
    assert path == out / "inference" / "model.safetensors" and report["weights"].endswith("ema.pdparams")
    exported, source = load_weights_file(path), load_weights_file(report["weights"])
    assert sorted(exported) == sorted(source)
    for k, v in source.items():
        assert exported[k].dtype == v.dtype, k
        np.testing.assert_array_equal(exported[k].numpy(), v.numpy())
    from_ckpt = run(["--mode", "eval", *base])
    from_st = run(["--mode", "eval", *base, f"Global.weights={path}"])
    assert from_st.pop("weights") == str(path) and from_ckpt.pop("weights") == report["weights"]
    for k in ("acc", "norm_edit_dis", "num_samples"):
        assert from_st[k] == from_ckpt[k], k


def test_det_export_safetensors_holds_the_weights_before_fusion(tmp_path):
    """Det export fuses RepVGG blocks (in place in the native layout, on a copy in ppdet's); model.safetensors is
    written before, so in both layouts it holds exactly the checkpoint's EMA weights (the names Global.weights loads)."""
    from paddle_recipes.recipes.det_ppyoloe import DetPPYOLOE

    base = ["-c", str(CONFIGS / "det_ppyoloe_smoke.yml"), "-o", f"Global.output_dir={tmp_path / 'out'}",
            f"Synthetic.root={tmp_path / 'data'}", "Synthetic.num_train=4", "Synthetic.num_val=2", "Global.epochs=1",
            "Train.sizes=[64]", "Eval.size=64", "Train.loader.batch_size_per_card=4"]
    _fresh_logging()
    DetPPYOLOE.main(base)
    source = load_weights_file(tmp_path / "out" / "checkpoints" / "best" / "ema.pdparams")
    for layout in ("native", "ppdet"):
        _fresh_logging()
        report = DetPPYOLOE.main(["--mode", "export", *base, f"Export.layout={layout}", "Export.safetensors=true"])
        assert report["safetensors"] == str(tmp_path / "out" / "inference" / "model.safetensors"), layout
        assert layout == "ppdet" or report["repvgg_fused"] > 0
        exported = load_weights_file(report["safetensors"])
        assert sorted(exported) == sorted(source), layout
        for k, v in source.items():
            np.testing.assert_array_equal(exported[k].numpy(), v.numpy())
