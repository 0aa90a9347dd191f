"""Networks and layers shared by several tasks (imports nothing task-specific): one file per backbone family,
shared layers in ``layers.py``, and ``catalog.py``, the one registry of networks (``build_backbone``).

Importing this package lists every backbone of ``nn/`` in the catalogue (each file registers its class, below in
catalogue order: PaddleOCR's first, then ours), then the backbones PaddleOCR has that this version does not build.
"""
from . import pplcnetv3, lcnetv4, pphgnetv2, resnet_vd, mobilenetv1_enhance, mobilenet_v3, pp_lcnet  # noqa: F401
from . import lcnetrec, resnet34vd, dense_conv, cls_head  # noqa: F401  (ours; the cls head)
from .catalog import BACKBONE, DET, REC, register

# PaddleOCR's backbones known by name, not built here (the translators name them in a clear error)
register(BACKBONE, "PPHGNet_small", (REC, DET), paddlex={REC: r"PP-OCRv4_server_rec(_doc)?$"})(None)
register(BACKBONE, "MobileNetV3", (REC, DET))(None)  # rec's is the cls class (its rec use untested), det's another
register(BACKBONE, "SVTRNet", REC)(None)
register(BACKBONE, "ResNet31", REC)(None)
register(BACKBONE, "ResNet45", REC)(None)
register(BACKBONE, "SVTRv2", REC, paddlex={REC: r"SVTRv2_rec$"})(None)
register(BACKBONE, "RepSVTR", REC, paddlex={REC: r"RepSVTR_rec$"})(None)
