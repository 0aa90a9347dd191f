"""OCR task: recognition models, data, losses, metrics, post-processing (backbones: ``paddle_recipes.nn``)."""
