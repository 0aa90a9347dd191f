"""Input normalisation of a detector's weights family (the config section and its presets).

PP-YOLOE weights were trained on ``(x / 255 - ImageNet mean) / ImageNet std``; PP-YOLOE+ weights
on plain ``x / 255`` (ppdet's reader: ``NormalizeImage {mean: [0,0,0], std: [1,1,1], norm_type: none}``,
``is_scale`` true by default). Fine-tuning official weights with the other family's input
silently costs accuracy, so the preset of the family sets it.

    DetCollate(sizes, **collate_kwargs(cfg.Architecture.normalize))
"""
from __future__ import annotations

from dataclasses import dataclass, field

from paddle_recipes.config import ConfigError


@dataclass
class NormalizeConfig:
    """Per-channel RGB ``(x / 255 - mean) / std`` (``is_scale`` false: ``(x - mean) / std`` on 0..255).

    Default = ImageNet mean/std on [0, 1] (PP-YOLOE, and this package's own presets so far).
    """
    mean: list[float] = field(default_factory=lambda: [0.485, 0.456, 0.406])
    std: list[float] = field(default_factory=lambda: [0.229, 0.224, 0.225])
    is_scale: bool = True

    def __post_init__(self):
        if len(self.mean) != 3 or len(self.std) != 3:
            raise ConfigError(f"normalize.mean/std need 3 values (RGB), got {self.mean} / {self.std}")
        if any(float(s) <= 0 for s in self.std):
            raise ConfigError(f"normalize.std must be > 0, got {self.std}")


NORMALIZE_PRESETS = {
    "imagenet": NormalizeConfig(),                                     # PP-YOLOE (ppyoloe_crn_*)
    "ppyoloe_plus": NormalizeConfig([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]),  # PP-YOLOE+ (ppyoloe_plus_crn_*)
}


def collate_kwargs(norm: NormalizeConfig) -> dict:
    """Keyword arguments of ``DetCollate`` for ``norm``."""
    return {"mean": tuple(float(v) for v in norm.mean), "std": tuple(float(v) for v in norm.std),
            "is_scale": bool(norm.is_scale)}


def deploy_normalize_op(norm: NormalizeConfig) -> dict:
    """ppdet deploy ``NormalizeImage`` entry (``norm_type`` none when it is only the /255 scale)."""
    plain = all(float(m) == 0.0 for m in norm.mean) and all(float(s) == 1.0 for s in norm.std)
    return {"type": "NormalizeImage", "mean": [float(v) for v in norm.mean], "std": [float(v) for v in norm.std],
            "is_scale": bool(norm.is_scale), "norm_type": "none" if plain else "mean_std"}
