"""Run PaddleX's own PP-OCRv6 rec inference network on PaddleOCR-named weights; print one JSON line.

Runs inside the side venv made by .ci/setup_paddleocr_venv.sh (paddlex 3.7.2), not the project's python:
    .venv-paddleocr/bin/python tests/scripts/paddlex_v6_rec_probs.py MODEL_NAME WEIGHTS.pdparams X.npy OUT.npy [EPS]
The weights go through PaddleX's pdparams->safetensors steps for the released checkpoints (drop the training-only
NRTR branch, BN key renames, RepDWConv fusion, key mapping; Linear weights are kept in Paddle's layout) into
PaddleX's network (config MODEL_CONFIGS[MODEL_NAME] with head_out_channels from the weights), cast to float64;
its softmax output for X is saved to OUT. EPS: epsilon of the SVTR blocks' LayerNorms (PaddleX uses 1e-6
everywhere; PaddleOCR's Block uses 1e-5), default PaddleX's own.
"""
import json
import os
import sys

os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")


def main(argv):
    import numpy as np
    import paddle
    from paddlex.modules.base.utils.pdparams2safetensors import mapping as M
    from paddlex.modules.base.utils.pdparams2safetensors.fusion import fuse_v6_rec_state_dict
    from paddlex.modules.base.utils.pdparams2safetensors.model_config import MODEL_CONFIGS

    name, weights, x_path, out_path = argv[:4]
    if name == "PP-OCRv6_tiny_rec":
        from paddlex.inference.models.text_recognition.modeling.pp_ocrv6_tiny_rec import PPOCRV6TinyRec as Net
        key_map = M.PPOCRV6_TINY_REC_MAPPING
    else:
        from paddlex.inference.models.text_recognition.modeling.pp_ocrv6_small_rec import PPOCRV6SmallRec as Net
        key_map = M.PPOCRV6_SMALL_REC_MAPPING
    sd = paddle.load(weights)
    sd = M.rename_bn_keys({k: v for k, v in sd.items() if not k.startswith(tuple(M.PPOCRV6_REC_DROP_PREFIXES))})
    sd = M.apply_key_mapping(fuse_v6_rec_state_dict({k: v.numpy() for k, v in sd.items()}), key_map)
    head = "head.fc2.bias" if name == "PP-OCRv6_tiny_rec" else "head.head.bias"
    net = Net(Net.config_class(**{**MODEL_CONFIGS[name], "head_out_channels": int(sd[head].shape[0])}))
    net.to(dtype="float64")
    hf = net.get_hf_state_dict()
    if set(hf) != set(sd) or any(list(hf[k].shape) != list(sd[k].shape) for k in hf):
        raise SystemExit(f"PaddleX's {name} does not take these weights: missing {sorted(set(hf) - set(sd))[:5]}, "
                         f"extra {sorted(set(sd) - set(hf))[:5]}")
    net.set_hf_state_dict({k: paddle.to_tensor(v.astype("float64")) for k, v in sd.items()})
    net.eval()
    if len(argv) > 4:
        for block in net.head.encoder.svtr_block:
            block.layer_norm1._epsilon = block.layer_norm2._epsilon = float(argv[4])
    with paddle.no_grad():
        probs = net([np.load(x_path)])[0]
    np.save(out_path, probs)
    print(json.dumps({"results": [list(probs.shape), str(probs.dtype)]}))


if __name__ == "__main__":
    main(sys.argv[1:])
