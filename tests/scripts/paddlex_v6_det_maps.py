"""Run PaddleX's own PP-OCRv6 det inference network on PaddleOCR-named weights; print one JSON line.

Runs inside the side venv made by .ci/setup_paddleocr_venv.sh (paddlex 3.7.2), not the project's python:
    .venv-paddleocr/bin/python tests/scripts/paddlex_v6_det_maps.py MODEL_NAME WEIGHTS.pdparams X.npy OUT.npy
The weights go through PaddleX's pdparams->safetensors steps for the released checkpoints (drop the training-only
threshold and aux branches, BN key renames, RepDWConv / DilatedReparamBlock fusion, key mapping) into PaddleX's
network (config MODEL_CONFIGS[MODEL_NAME]), cast to float64; its probability map for X is saved to OUT.
"""
import json
import os
import sys

os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")


def main(argv):
    import numpy as np
    import paddle
    from paddlex.modules.base.utils.pdparams2safetensors import mapping as M
    from paddlex.modules.base.utils.pdparams2safetensors import fusion as FU
    from paddlex.modules.base.utils.pdparams2safetensors.model_config import MODEL_CONFIGS

    name, weights, x_path, out_path = argv[:4]
    if name == "PP-OCRv6_medium_det":
        from paddlex.inference.models.text_detection.modeling.pp_ocrv6_medium_det import PPOCRV6MediumDet as Net
        key_map, fuse = M.PPOCRV6_MEDIUM_DET_MAPPING, FU.fuse_v6_medium_det_state_dict
    else:
        from paddlex.inference.models.text_detection.modeling.pp_ocrv6_small_det import PPOCRV6SmallDet as Net
        key_map, fuse = M.PPOCRV6_SMALL_DET_MAPPING, FU.fuse_v6_small_det_state_dict
    sd = paddle.load(weights)
    sd = M.rename_bn_keys({k: v for k, v in sd.items() if not k.startswith(tuple(M.PPOCRV6_DET_DROP_PREFIXES))})
    sd = M.apply_key_mapping(fuse({k: v.numpy() for k, v in sd.items()}), key_map)
    net = Net(Net.config_class(**MODEL_CONFIGS[name]))
    net.to(dtype="float64")
    hf = net.get_hf_state_dict()
    if set(hf) != set(sd) or any(list(hf[k].shape) != list(sd[k].shape) for k in hf):
        raise SystemExit(f"PaddleX's {name} does not take these weights: missing {sorted(set(hf) - set(sd))[:5]}, "
                         f"extra {sorted(set(sd) - set(hf))[:5]}")
    net.set_hf_state_dict({k: paddle.to_tensor(np.asarray(v).astype("float64")) for k, v in sd.items()})
    net.eval()
    with paddle.no_grad():
        maps = net([np.load(x_path)])[0]
    np.save(out_path, maps)
    print(json.dumps({"results": [list(maps.shape), str(maps.dtype), len(sd)]}))


if __name__ == "__main__":
    main(sys.argv[1:])
