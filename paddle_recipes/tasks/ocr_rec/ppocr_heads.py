"""PaddleOCR's recognition necks and heads, parameter for parameter (own code, PaddleOCR's names).

* ``SequenceEncoder`` (neck): ``reshape`` | ``fc`` | ``rnn`` (2-layer BiLSTM, ``encoder.lstm``) |
  ``svtr`` (conv -> 2 global-attention blocks -> conv, with the input concatenated back) |
  ``lightsvtr`` (PP-OCRv6: 1x1 reduce + local depthwise 1xk conv -> global blocks, + a 1x1 skip).
* ``CTCHead``: linear (optionally via ``mid_channels``) to ``out_channels`` classes; ``use_guide``
  (PP-OCRv6 tiny) first runs a depthwise-separable 1-D conv ``guide_layer`` along the sequence.
  Train mode returns logits [B, T, C]; eval mode returns softmax probabilities like
  PaddleOCR (set ``return_logits = True`` to get logits in eval mode too, e.g. for an eval loss).
* ``MultiHead`` (PP-OCRv4/v5): a CTC branch (SVTR neck + CTCHead, used for inference and export)
  and an NRTR branch (``before_gtc`` flatten + linear to ``nrtr_dim``, then a 4-layer transformer
  decoder, ``gtc_head``) that only runs in training as guidance (GTC).

Each registers in ``nn.catalog`` (as PaddleOCR's rec neck / head, not ``ours``), with the arguments the model builder
passes itself (``fixed``) and the keys it reads besides (``extra``: init_blank_prob, ours).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle import ParamAttr
from paddle.nn.initializer import (Constant, KaimingNormal, KaimingUniform, Normal, TruncatedNormal, Uniform,
                                   XavierNormal)
from paddle.regularizer import L2Decay

from ...config import check_name
from ...nn.catalog import HEAD, NECK, REC, init_annotations, register

_trunc_normal = TruncatedNormal(std=0.02)
_zeros, _ones = Constant(0.0), Constant(1.0)


# ---------------------------------------------------------------------- necks
class Im2Seq(nn.Layer):
    """[B, C, 1, W] -> [B, W, C]."""

    def __init__(self, in_channels: int, **_):
        super().__init__()
        self.out_channels = in_channels

    def forward(self, x):
        if x.shape[2] != 1:
            raise ValueError(f"Im2Seq needs a feature map of height 1, got shape {list(x.shape)}")
        return x.squeeze(axis=2).transpose([0, 2, 1])


class EncoderWithRNN(nn.Layer):
    """2-layer bidirectional LSTM; output 2 * hidden_size."""

    def __init__(self, in_channels: int, hidden_size: int):
        super().__init__()
        self.out_channels = hidden_size * 2
        self.lstm = nn.LSTM(in_channels, hidden_size, direction="bidirectional", num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


class EncoderWithFC(nn.Layer):
    def __init__(self, in_channels: int, hidden_size: int):
        super().__init__()
        self.out_channels = hidden_size
        bound = 1.0 / math.sqrt(in_channels)
        self.fc = nn.Linear(in_channels, hidden_size,
                            weight_attr=ParamAttr(regularizer=L2Decay(1e-5), initializer=Uniform(-bound, bound)),
                            bias_attr=ParamAttr(regularizer=L2Decay(1e-5), initializer=Uniform(-bound, bound)))

    def forward(self, x):
        return self.fc(x)


class SVTRConvBN(nn.Layer):
    """Conv (no bias) + BN + swish; sub-layers ``conv`` / ``norm`` / ``act``."""

    def __init__(self, in_channels, out_channels, kernel_size=3, padding=0):
        super().__init__()
        self.conv = nn.Conv2D(in_channels, out_channels, kernel_size, padding=padding, bias_attr=False,
                              weight_attr=ParamAttr(initializer=KaimingUniform()))
        self.norm = nn.BatchNorm2D(out_channels)
        self.act = nn.Swish()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class GlobalAttention(nn.Layer):
    """Multi-head self-attention over all positions; fused ``qkv`` and ``proj`` linears."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads, self.dim = num_heads, dim
        self.head_dim = dim // num_heads
        self.scale = qk_scale or self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias_attr=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        qkv = self.qkv(x).reshape((0, -1, 3, self.num_heads, self.head_dim)).transpose((2, 0, 3, 1, 4))
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = self.attn_drop(F.softmax(q.matmul(k.transpose((0, 1, 3, 2))), axis=-1))
        x = attn.matmul(v).transpose((0, 2, 1, 3)).reshape((0, -1, self.dim))
        return self.proj_drop(self.proj(x))


class Mlp(nn.Layer):
    """fc1 -> act -> dropout -> fc2 -> dropout."""

    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class SVTRBlock(nn.Layer):
    """Pre-norm transformer block: x + attn(norm1 x), then x + mlp(norm2 x)."""

    def __init__(self, dim, num_heads, mlp_ratio, qkv_bias, qk_scale, drop, attn_drop, epsilon=1e-5):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, epsilon=epsilon)
        self.mixer = GlobalAttention(dim, num_heads, qkv_bias, qk_scale, attn_drop, drop)
        self.norm2 = nn.LayerNorm(dim, epsilon=epsilon)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=nn.Swish, drop=drop)

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class EncoderWithSVTR(nn.Layer):
    """SVTR neck: conv (kxk, C/8) -> 1x1 (hidden_dims) -> ``depth`` global blocks -> LN ->
    1x1 (C) -> concat with the input -> conv (kxk, C/8) -> 1x1 (dims). ``use_guide``: the
    neck does not back-propagate into the backbone (input detached). Output [B, dims, H, W]."""

    def __init__(self, in_channels: int, dims: int = 64, depth: int = 2, hidden_dims: int = 120,
                 use_guide: bool = False, num_heads: int = 8, qkv_bias: bool = True, mlp_ratio: float = 2.0,
                 drop_rate: float = 0.1, attn_drop_rate: float = 0.1, drop_path: float = 0.0,
                 kernel_size: Sequence[int] = (3, 3), qk_scale: Optional[float] = None):
        super().__init__()
        if drop_path:
            raise ValueError("EncoderWithSVTR: drop_path > 0 is not supported")
        self.use_guide = use_guide
        pad = [kernel_size[0] // 2, kernel_size[1] // 2]
        self.conv1 = SVTRConvBN(in_channels, in_channels // 8, list(kernel_size), padding=pad)
        self.conv2 = SVTRConvBN(in_channels // 8, hidden_dims, 1)
        self.svtr_block = nn.LayerList([
            SVTRBlock(hidden_dims, num_heads, mlp_ratio, qkv_bias, qk_scale, drop_rate, attn_drop_rate)
            for _ in range(depth)])
        self.norm = nn.LayerNorm(hidden_dims, epsilon=1e-6)
        self.conv3 = SVTRConvBN(hidden_dims, in_channels, 1)
        self.conv4 = SVTRConvBN(2 * in_channels, in_channels // 8, list(kernel_size), padding=pad)
        self.conv1x1 = SVTRConvBN(in_channels // 8, dims, 1)
        self.out_channels = dims
        _init_transformer_weights(self)

    def forward(self, x):
        if self.use_guide:
            x = x.detach()
        z = self.conv2(self.conv1(x))
        _, c, h, w = z.shape
        z = z.flatten(2).transpose([0, 2, 1])
        for block in self.svtr_block:
            z = block(z)
        z = self.norm(z).reshape([0, h, w, c]).transpose([0, 3, 1, 2])
        z = paddle.concat((x, self.conv3(z)), axis=1)
        return self.conv1x1(self.conv4(z))


class EncoderWithLightSVTR(nn.Layer):
    """LightSVTR neck (PP-OCRv6): z = conv_reduce(x) (1x1 to ``dims``); z += local_conv(z) (depthwise
    1 x ``local_kernel`` conv-BN-swish); ``depth`` global blocks; LayerNorm; + skip_conv(x) (1x1 to
    ``dims``). ``use_guide``: the neck does not back-propagate into the backbone. Output [B, dims, H, W]."""

    def __init__(self, in_channels: int, dims: int = 64, depth: int = 1, num_heads: int = 8, qkv_bias: bool = True,
                 mlp_ratio: float = 4.0, drop_rate: float = 0.1, attn_drop_rate: float = 0.1, drop_path: float = 0.0,
                 qk_scale: Optional[float] = None, local_kernel: int = 7, use_guide: bool = False):
        super().__init__()
        if drop_path:
            raise ValueError("EncoderWithLightSVTR: drop_path > 0 is not supported")
        self.use_guide = use_guide
        self.conv_reduce = SVTRConvBN(in_channels, dims, 1)
        self.local_conv = nn.Sequential(
            nn.Conv2D(dims, dims, [1, local_kernel], padding=[0, local_kernel // 2], groups=dims, bias_attr=False,
                      weight_attr=ParamAttr(initializer=KaimingNormal())),
            nn.BatchNorm2D(dims), nn.Swish())
        self.svtr_block = nn.LayerList([
            SVTRBlock(dims, num_heads, mlp_ratio, qkv_bias, qk_scale, drop_rate, attn_drop_rate)
            for _ in range(depth)])
        self.norm = nn.LayerNorm(dims, epsilon=1e-6)
        self.skip_conv = SVTRConvBN(in_channels, dims, 1)
        self.out_channels = dims
        _init_transformer_weights(self)

    def forward(self, x):
        if self.use_guide:
            x = x.detach()
        skip = self.skip_conv(x)
        z = self.conv_reduce(x)
        z = z + self.local_conv(z)
        _, c, h, w = z.shape
        z = z.flatten(2).transpose([0, 2, 1])
        for block in self.svtr_block:
            z = block(z)
        return self.norm(z).reshape([0, h, w, c]).transpose([0, 3, 1, 2]) + skip


def _init_transformer_weights(layer: nn.Layer) -> None:
    """Linear: truncated normal (std 0.02) + zero bias; LayerNorm: ones / zeros (PaddleOCR's SVTR init)."""
    for m in layer.sublayers():
        if isinstance(m, nn.Linear):
            _trunc_normal(m.weight)
            if m.bias is not None:
                _zeros(m.bias)
        elif isinstance(m, nn.LayerNorm):
            _ones(m.weight)
            _zeros(m.bias)


# encoder types that work on the [B, C, H, W] map before the reshape to a sequence
IMAGE_ENCODERS = {"svtr": EncoderWithSVTR, "lightsvtr": EncoderWithLightSVTR}


@register(NECK, "SequenceEncoder", REC)
class SequenceEncoder(nn.Layer):
    """Neck by ``encoder_type``: reshape | fc | rnn (hidden_size per direction) | svtr / lightsvtr (kwargs
    of EncoderWithSVTR / EncoderWithLightSVTR). Output [B, T, out_channels]."""

    ENCODER_TYPES = ("reshape", "fc", "rnn", *IMAGE_ENCODERS)

    @classmethod
    def config_keys(cls, section: Dict[str, Any]) -> List[str]:
        """The keys of a Neck section with this `section`'s encoder_type (nn.catalog.Network.config_keys): those of
        its image encoder, else hidden_size; an unknown encoder_type is a one-line UnknownNameError."""
        etype = section.get("encoder_type")
        if etype is not None:  # a missing one: nn.catalog.check_args says it is needed
            check_name("Architecture.Neck.encoder_type", etype, cls.ENCODER_TYPES)
        image = IMAGE_ENCODERS.get(etype)
        own = list(init_annotations(image, ("in_channels",))) if image else ["hidden_size"]
        return ["encoder_type", *own]

    @classmethod
    def config_types(cls) -> Dict[str, Any]:
        """The keys of a Neck section of any encoder_type -> their annotations (nn.catalog.Network.config_types)."""
        found: Dict[str, Any] = {"encoder_type": str, "hidden_size": int}
        for encoder in IMAGE_ENCODERS.values():
            found.update(init_annotations(encoder, ("in_channels",)))
        return found

    def __init__(self, in_channels: int, encoder_type: str, hidden_size: int = 48, **kwargs):
        super().__init__()
        self.encoder_reshape = Im2Seq(in_channels)
        self.encoder_type = encoder_type
        self.out_channels = in_channels
        if encoder_type not in IMAGE_ENCODERS and kwargs:
            raise ValueError(f"SequenceEncoder({encoder_type}): unknown options {sorted(kwargs)}")
        if encoder_type == "reshape":
            self.encoder = None
        elif encoder_type == "rnn":
            self.encoder = EncoderWithRNN(in_channels, hidden_size)
        elif encoder_type == "fc":
            self.encoder = EncoderWithFC(in_channels, hidden_size)
        elif encoder_type in IMAGE_ENCODERS:
            self.encoder = IMAGE_ENCODERS[encoder_type](in_channels, **kwargs)
        else:
            raise ValueError(f"SequenceEncoder: unknown encoder_type {encoder_type!r}; "
                             "choose reshape, fc, rnn, svtr or lightsvtr")
        if self.encoder is not None:
            self.out_channels = self.encoder.out_channels

    def forward(self, x):
        if self.encoder_type in IMAGE_ENCODERS:
            return self.encoder_reshape(self.encoder(x))
        x = self.encoder_reshape(x)
        return x if self.encoder is None else self.encoder(x)


# ---------------------------------------------------------------------- heads
def _uniform_attr(fan_in: int, decay: float) -> ParamAttr:
    bound = 1.0 / math.sqrt(fan_in)
    return ParamAttr(regularizer=L2Decay(decay), initializer=Uniform(-bound, bound))


@register(HEAD, "CTCHead", REC, fixed=("in_channels", "out_channels"), extra=("init_blank_prob",))
class CTCHead(nn.Layer):
    """Per-step classifier to ``out_channels`` (= CTC classes incl. blank). ``fc_decay``: L2 on its
    weights (overrides the optimizer's). ``mid_channels``: optional hidden linear (fc1 -> fc2).
    ``use_guide`` (PP-OCRv6 tiny): ``guide_layer`` = depthwise 5-tap 1-D conv, BN, hardswish, 1x1 1-D
    conv, BN, hardswish along the sequence, before the linears.
    Train: logits [B, T, C]. Eval: softmax(logits) unless ``return_logits``."""

    def __init__(self, in_channels: int, out_channels: int, fc_decay: float = 0.0004,
                 mid_channels: int | None = None, use_guide: bool = False):
        super().__init__()
        self.out_channels, self.mid_channels = out_channels, mid_channels
        self.return_logits = False
        self.use_guide = use_guide
        if use_guide:
            self.guide_layer = nn.Sequential(
                nn.Conv1D(in_channels, in_channels, 5, padding=2, groups=in_channels, bias_attr=False),
                nn.BatchNorm1D(in_channels), nn.Hardswish(),
                nn.Conv1D(in_channels, in_channels, 1, bias_attr=False),
                nn.BatchNorm1D(in_channels), nn.Hardswish())
        if mid_channels is None:
            self.fc = nn.Linear(in_channels, out_channels, weight_attr=_uniform_attr(in_channels, fc_decay),
                                bias_attr=_uniform_attr(in_channels, fc_decay))
        else:
            self.fc1 = nn.Linear(in_channels, mid_channels, weight_attr=_uniform_attr(in_channels, fc_decay),
                                 bias_attr=_uniform_attr(in_channels, fc_decay))
            self.fc2 = nn.Linear(mid_channels, out_channels, weight_attr=_uniform_attr(mid_channels, fc_decay),
                                 bias_attr=_uniform_attr(mid_channels, fc_decay))

    @property
    def class_layer(self) -> str:
        """Name of the sub-layer whose shape depends on the number of classes."""
        return "fc" if self.mid_channels is None else "fc2"

    def forward(self, x, targets=None):
        if self.use_guide:
            x = self.guide_layer(x.transpose([0, 2, 1])).transpose([0, 2, 1])
        logits = self.fc(x) if self.mid_channels is None else self.fc2(self.fc1(x))
        if self.training or self.return_logits:
            return logits
        return F.softmax(logits, axis=2)


class FCTranspose(nn.Layer):
    """[B, C, N] -> [B, N, out] by a bias-free linear."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.fc = nn.Linear(in_channels, out_channels, bias_attr=False)

    def forward(self, x):
        return self.fc(x.transpose([0, 2, 1]))


class NRTRAttention(nn.Layer):
    """Multi-head attention: fused ``qkv`` for self-attention, ``q`` + ``kv`` for cross-attention."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, self_attn=False):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.self_attn = self_attn
        if self_attn:
            self.qkv = nn.Linear(embed_dim, embed_dim * 3)
        else:
            self.q = nn.Linear(embed_dim, embed_dim)
            self.kv = nn.Linear(embed_dim, embed_dim * 2)
        self.attn_drop = nn.Dropout(dropout)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key=None, attn_mask=None):
        n_q = query.shape[1]
        if self.self_attn:
            q, k, v = self.qkv(query).reshape((0, n_q, 3, self.num_heads, self.head_dim)).transpose((2, 0, 3, 1, 4))
        else:
            q = self.q(query).reshape([0, n_q, self.num_heads, self.head_dim]).transpose([0, 2, 1, 3])
            k, v = self.kv(key).reshape((0, key.shape[1], 2, self.num_heads, self.head_dim)).transpose((2, 0, 3, 1, 4))
        attn = q.matmul(k.transpose((0, 1, 3, 2))) * self.scale
        if attn_mask is not None:
            attn = attn + attn_mask
        attn = self.attn_drop(F.softmax(attn, axis=-1))
        x = attn.matmul(v).transpose((0, 2, 1, 3)).reshape((0, n_q, self.embed_dim))
        return self.out_proj(x)


class NRTRDecoderLayer(nn.Layer):
    """Post-norm decoder layer: self-attn (norm1), cross-attn (norm2), relu MLP (norm3)."""

    def __init__(self, d_model, nhead, dim_feedforward, attention_dropout_rate=0.0, residual_dropout_rate=0.1,
                 epsilon=1e-5):
        super().__init__()
        self.self_attn = NRTRAttention(d_model, nhead, attention_dropout_rate, self_attn=True)
        self.norm1 = nn.LayerNorm(d_model, epsilon=epsilon)
        self.dropout1 = nn.Dropout(residual_dropout_rate)
        self.cross_attn = NRTRAttention(d_model, nhead, attention_dropout_rate)
        self.norm2 = nn.LayerNorm(d_model, epsilon=epsilon)
        self.dropout2 = nn.Dropout(residual_dropout_rate)
        self.mlp = Mlp(d_model, dim_feedforward, act_layer=nn.ReLU, drop=residual_dropout_rate)
        self.norm3 = nn.LayerNorm(d_model, epsilon=epsilon)
        self.dropout3 = nn.Dropout(residual_dropout_rate)

    def forward(self, tgt, memory, self_mask=None):
        tgt = self.norm1(tgt + self.dropout1(self.self_attn(tgt, attn_mask=self_mask)))
        tgt = self.norm2(tgt + self.dropout2(self.cross_attn(tgt, key=memory)))
        return self.norm3(tgt + self.dropout3(self.mlp(tgt)))


class TokenEmbedding(nn.Layer):
    """Token embedding (padding id 0) scaled by sqrt(d_model); sub-layer ``embedding``."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model, padding_idx=0,
                                      weight_attr=ParamAttr(initializer=Normal(0.0, d_model ** -0.5)))
        self.d_model = d_model

    def forward(self, x):
        return self.embedding(x) * math.sqrt(self.d_model)


class SinusoidalPositions(nn.Layer):
    """Adds the sine/cosine table ``pe`` [max_len, 1, dim] (a persistable buffer, as in PaddleOCR's
    checkpoints) to [B, N, dim] inputs, then dropout."""

    def __init__(self, dropout, dim, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = np.arange(max_len, dtype="float32")[:, None]
        div = np.exp(np.arange(0, dim, 2).astype("float32") * (-math.log(10000.0) / dim))
        pe = np.zeros([max_len, dim], dtype="float32")
        pe[:, 0::2] = np.sin(position * div)
        pe[:, 1::2] = np.cos(position * div)
        self.register_buffer("pe", paddle.to_tensor(pe[:, None, :]))

    def forward(self, x):
        x = x.transpose([1, 0, 2]) + self.pe[: x.shape[1], :]
        return self.dropout(x).transpose([1, 0, 2])


class NRTRDecoder(nn.Layer):
    """NRTR transformer decoder used as GTC guidance (no encoder). ``out_channels``: NRTR classes
    (PaddleOCR's ``NRTRLabelDecode`` count); the vocabulary is ``out_channels + 1``.
    Train forward(memory [B, N, d], (label_gtc [B, L], length [B])) -> logits [B, max(length)+1, vocab]."""

    def __init__(self, d_model=384, nhead=12, num_decoder_layers=4, max_len=25, dim_feedforward=1536,
                 attention_dropout_rate=0.0, residual_dropout_rate=0.1, out_channels=0):
        super().__init__()
        self.out_channels = out_channels + 1
        self.max_len = max_len
        self.embedding = TokenEmbedding(d_model, self.out_channels)
        self.positional_encoding = SinusoidalPositions(residual_dropout_rate, d_model)
        self.decoder = nn.LayerList([
            NRTRDecoderLayer(d_model, nhead, dim_feedforward, attention_dropout_rate, residual_dropout_rate)
            for _ in range(num_decoder_layers)])
        self.tgt_word_prj = nn.Linear(d_model, self.out_channels, bias_attr=False)
        for m in self.sublayers():
            if isinstance(m, nn.Linear):
                XavierNormal()(m.weight)
                if m.bias is not None:
                    _zeros(m.bias)

    @staticmethod
    def causal_mask(n: int):
        return paddle.triu(paddle.full([n, n], float("-inf"), dtype="float32"), diagonal=1).unsqueeze([0, 1])

    def forward(self, memory, targets):
        label, length = targets[0], targets[1]
        tgt = label[:, : 2 + int(length.max())][:, :-1]
        tgt = self.positional_encoding(self.embedding(tgt))
        mask = self.causal_mask(tgt.shape[1])
        for layer in self.decoder:
            tgt = layer(tgt, memory, self_mask=mask)
        return self.tgt_word_prj(tgt)


@register(HEAD, "MultiHead", REC, fixed=("in_channels", "out_channels_list"), extra=("init_blank_prob",))
class MultiHead(nn.Layer):
    """PP-OCRv4/v5 head. ``head_list``: PaddleOCR's list form, e.g.
    ``[{"CTCHead": {"Neck": {"name": "svtr", ...}, "Head": {"fc_decay": 1e-5}}},
    {"NRTRHead": {"nrtr_dim": 384, "max_text_length": 25}}]``.
    ``out_channels_list``: {"CTCLabelDecode": n_ctc, "NRTRLabelDecode": n_ctc + 3}.
    Train: forward(feat, targets=[label_ctc, label_gtc, length, ...]) -> {"ctc": logits, "ctc_neck": seq,
    "gtc": nrtr logits} ("gtc" absent after ``drop_training_branches``). Eval: CTC probabilities [B, T, n_ctc] only
    (logits if ``return_logits``)."""

    BRANCHES = ("CTCHead", "NRTRHead")  # the head_list entries built here

    def __init__(self, in_channels: int, out_channels_list: Dict[str, int], head_list: List[Dict[str, Any]],
                 use_pool: bool = False, use_pos: bool = False):
        super().__init__()
        if use_pool or use_pos:
            raise ValueError("MultiHead: use_pool / use_pos are not supported (PP-OCRv4/v5 use neither)")
        names = [next(iter(h)) for h in head_list]
        if sorted(names) != sorted(self.BRANCHES):
            raise ValueError(f"MultiHead: head_list must hold one CTCHead and one NRTRHead, got {names}")
        for entry in head_list:
            name, args = next(iter(entry.items()))
            args = dict(args or {})
            if name == "CTCHead":
                unknown = set(args) - {"Neck", "Head"}
                if unknown:
                    raise ValueError(f"MultiHead CTCHead: unknown keys {sorted(unknown)} (use Neck, Head)")
                neck = dict(args.get("Neck") or {})
                self.encoder_reshape = Im2Seq(in_channels)
                self.ctc_encoder = SequenceEncoder(in_channels, encoder_type=neck.pop("name"), **neck)
                self.ctc_head = CTCHead(self.ctc_encoder.out_channels, out_channels_list["CTCLabelDecode"],
                                        **dict(args.get("Head") or {}))
            else:
                unknown = set(args) - {"nrtr_dim", "max_text_length", "num_decoder_layers"}
                if unknown:
                    raise ValueError(f"MultiHead NRTRHead: unknown keys {sorted(unknown)}")
                dim = args.get("nrtr_dim", 256)
                self.before_gtc = nn.Sequential(nn.Flatten(2), FCTranspose(in_channels, dim))
                self.gtc_head = NRTRDecoder(d_model=dim, nhead=dim // 32,
                                            num_decoder_layers=args.get("num_decoder_layers", 4),
                                            max_len=args.get("max_text_length", 25), dim_feedforward=dim * 4,
                                            out_channels=out_channels_list["NRTRLabelDecode"])

    GTC_BRANCH = ("before_gtc", "gtc_head")  # the NRTR branch: training-only guidance, not in inference files

    def training_branches(self) -> list:
        """Names of the sub-layers only training runs (the GTC branch) that this head still has."""
        return [n for n in self.GTC_BRANCH if getattr(self, n, None) is not None]

    def drop_training_branches(self) -> list:
        """Remove the GTC branch (training then runs the CTC branch only: {"ctc", "ctc_neck"}) and turn the CTC
        neck's ``use_guide`` off, so that the CTC loss trains the backbone. Returns the names removed."""
        dropped = self.training_branches()
        for name in dropped:
            delattr(self, name)
        encoder = getattr(self.ctc_encoder, "encoder", None)
        if getattr(encoder, "use_guide", False):
            encoder.use_guide = False
        return dropped

    def forward(self, x, targets=None):
        seq = self.ctc_encoder(x)
        ctc = self.ctc_head(seq)
        if not self.training:
            return ctc
        if getattr(self, "gtc_head", None) is None:  # drop_training_branches: CTC only
            return {"ctc": ctc, "ctc_neck": seq}
        if targets is None:
            raise ValueError("MultiHead in training mode needs targets [label_ctc, label_gtc, length, ...]")
        return {"ctc": ctc, "ctc_neck": seq, "gtc": self.gtc_head(self.before_gtc(x), targets[1:])}


# PaddleOCR's rec heads known by name, not built here as a head of their own (NRTRHead is built as a MultiHead branch)
register(HEAD, "NRTRHead", REC)(None)
register(HEAD, "SARHead", REC)(None)
