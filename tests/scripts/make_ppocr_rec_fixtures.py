"""Record PaddleOCR's own outputs for our rec parity tests, in float64 (not run by the test suite).

    python tests/scripts/make_ppocr_rec_fixtures.py --ppocr-src /path/to/PaddleOCR [--preset NAME ...]

For each preset it reads ``tests/fixtures/ppocr_manifests/<preset>.json`` (its ``architecture`` and
``num_classes_ctc``), builds the network with **PaddleOCR's** code from ``--ppocr-src`` (imported, not
copied), casts it to float64 (PaddleOCR's NRTR head hard-codes float32 while it is built), sets the
deterministic weights of ``tests/ppocr_parity.det_value``, feeds a float64 input, and writes ``<preset>.outputs.json``:
  * eval: CTC logits and softmax (``summarize``: 16-class slice, row sums of squares, argmax, max);
  * train (MultiHead presets): batch-norm in train mode, dropout off, fixed labels: CTC and NRTR
    logits, and PaddleOCR's MultiLoss (CTCLoss + NRTRLoss) on them.
It also checks that PaddleOCR's state_dict names and shapes still equal the manifest.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ppocr_parity import det_value, fixed_input, summarize  # noqa: E402

FIXTURES = HERE.parent / "fixtures" / "ppocr_manifests"
DEFAULT_PRESETS = ["PP-OCRv4_mobile_rec", "PP-OCRv5_mobile_rec", "PP-OCRv5_server_rec", "rec_r34_vd_none_bilstm_ctc"]
# PP-OCRv6 (needs a PaddleOCR checkout with ppocr/modeling/backbones/rec_lcnetv4.py and the lightsvtr neck;
# base is PaddleOCR's earlier use_rep/config_name PPLCNetV4 form)
V6_PRESETS = ["PP-OCRv6_tiny_rec", "PP-OCRv6_small_rec", "PP-OCRv6_medium_rec", "PP-OCRv6_base_rec"]
INPUT_SHAPE = {"rec_r34_vd_none_bilstm_ctc": [2, 3, 32, 100]}  # others: [2, 3, 48, 320]
FLOAT32_ONLY = {"rec_r34_vd_none_bilstm_ctc": "paddle 3.3.1's CPU LSTM kernel has no float64"}  # eval-only refs
NRTR_EXTRA = 3  # PaddleOCR tools/train.py: NRTRLabelDecode count = CTC count + 3


def train_labels(num_classes, max_len=25, lengths=(5, 9), seed=1):
    """Fixed labels as PaddleOCR's MultiLabelEncode writes them: CTC [B, max_len] (class ids >= 1,
    0-padded) and NRTR [B, max_len] = [<s>=2, id + 3 ..., </s>=3, 0 ...]; lengths [B]."""
    rng = np.random.RandomState(seed)
    ctc = np.zeros([len(lengths), max_len], "int64")
    gtc = np.zeros([len(lengths), max_len], "int64")
    for i, n in enumerate(lengths):
        ids = rng.randint(1, num_classes - 1, n)
        ctc[i, :n] = ids
        gtc[i, 0], gtc[i, 1:n + 1], gtc[i, n + 1] = 2, ids + 3, 3
    return ctc, gtc, np.array(lengths, "int64")


def build_paddleocr_model(manifest, dtype):
    import paddle
    from ppocr.modeling.architectures import build_model

    arch = copy.deepcopy(manifest["architecture"])
    n = manifest["num_classes_ctc"]
    if arch["Head"]["name"] == "MultiHead":
        arch["Head"]["out_channels_list"] = {"CTCLabelDecode": n, "NRTRLabelDecode": n + NRTR_EXTRA}
    else:
        arch["Head"]["out_channels"] = n
    model = build_model(arch)
    sd = model.state_dict()
    got = {k: list(v.shape) for k, v in sd.items()}
    if got != manifest["tensors"]:
        raise SystemExit(f"{manifest['preset']}: PaddleOCR's state_dict no longer equals the manifest")
    # PaddleOCR's NRTR head hard-codes float32 in its constructor: build in float32, cast to float64.
    if dtype != "float32":  # (.to() breaks the LSTM's flattened weight buffer, so only when needed)
        model.to(dtype=dtype)
    model.set_state_dict({k: (v if k.endswith(".pe") else paddle.to_tensor(det_value(k, v.shape, dtype)))
                          for k, v in model.state_dict().items()})
    bad = [k for k, v in model.state_dict().items() if str(v.dtype).split(".")[-1] != dtype]
    if bad:
        raise SystemExit(f"{manifest['preset']}: tensors not in {dtype} after the cast: {bad[:5]}")
    return model


def ctc_fc(model):
    head = model.head.ctc_head if hasattr(model.head, "ctc_head") else model.head
    return head.fc2 if getattr(head, "mid_channels", None) else head.fc


def record(preset):
    import paddle
    from ppocr.losses import build_loss

    manifest = json.loads((FIXTURES / f"{preset}.json").read_text(encoding="utf-8"))
    dtype = "float32" if preset in FLOAT32_ONLY else "float64"
    model = build_paddleocr_model(manifest, dtype)
    shape = INPUT_SHAPE.get(preset, [2, 3, 48, 320])
    x = paddle.to_tensor(fixed_input(shape, dtype))
    logits = {}
    hook = ctc_fc(model).register_forward_post_hook(lambda layer, inp, out: logits.__setitem__("ctc", out))
    model.eval()
    with paddle.no_grad():
        probs = model(x)
    hook.remove()
    out = {"format": 2, "dtype": dtype, "input_shape": shape,
           "source": f"PaddleOCR's own code, {dtype}, deterministic weights (tests/ppocr_parity.det_value)"
                     + (f"; float32 because {FLOAT32_ONLY[preset]}" if preset in FLOAT32_ONLY else ""),
           "eval_probs": summarize(probs.numpy()), "eval_logits": summarize(logits["ctc"].numpy())}
    if manifest["architecture"]["Head"]["name"] == "MultiHead" and dtype == "float64":
        ctc_lab, gtc_lab, length = train_labels(manifest["num_classes_ctc"])
        model.train()
        for layer in model.sublayers():
            if isinstance(layer, paddle.nn.Dropout):
                layer.eval()
        data = [paddle.to_tensor(a) for a in (ctc_lab, gtc_lab, length)]
        with paddle.no_grad():
            preds = model(x, data=data)
            loss = build_loss({"name": "MultiLoss", "loss_config_list": [{"CTCLoss": None}, {"NRTRLoss": None}]})(
                preds, [x, *data])
        out.update({"train_label_ctc": ctc_lab.tolist(), "train_label_gtc": gtc_lab.tolist(),
                    "train_length": length.tolist(), "train_ctc": summarize(preds["ctc"].numpy()),
                    "train_gtc": summarize(preds["gtc"].numpy()),
                    "train_loss": {k: float(v) for k, v in loss.items()}})
    path = FIXTURES / f"{preset}.outputs.json"
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{preset}: wrote {path.name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True, help="a PaddleOCR source checkout (its ppocr/ package)")
    ap.add_argument("--preset", action="append", help=f"default: {', '.join(DEFAULT_PRESETS)}; "
                    f"also: {', '.join(V6_PRESETS)}")
    args = ap.parse_args()
    src = Path(args.ppocr_src).resolve()
    if not (src / "ppocr" / "modeling").is_dir():
        raise SystemExit(f"--ppocr-src {src}: no ppocr/modeling there (a PaddleOCR source checkout is needed)")
    sys.path.insert(0, str(src))
    for preset in args.preset or DEFAULT_PRESETS:
        record(preset)


if __name__ == "__main__":
    main()
