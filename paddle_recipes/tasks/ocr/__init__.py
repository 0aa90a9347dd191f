"""OCR task: recognition models, data, losses, metrics, post-processing."""
# Components that register themselves into the model registries of models.py.
from . import dense_backbone  # noqa: F401
