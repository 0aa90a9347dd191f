"""Text detection (DB) with PaddleOCR's det models weight for weight: backbones come from the catalogue of
networks (``paddle_recipes.nn``, shared with rec); necks and heads live here, together with
DB's label maps, loss, crop/resize transforms, post-processing, metric and label-file reader."""
