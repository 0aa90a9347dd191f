"""Where a model's weights come from and how they are made trainable: `load` (strict weights for eval / predict /
export), `pretrained` (init weights, PaddleOCR's Global.pretrained_model), `released` (train a released model in its
fused form), `bn_calibration` (statistics of un-fused BNs), `freeze_bn` (keep a released model's BN statistics),
`merge` (WiSE-FT: a fine-tune's weights merged with its init weights, Global.finetune_merge)."""
