"""PaddleOCR's file and log formats, below the tasks and the recipe base: its inference folder
(``ppocr_inference.py`` writes it: inference.json/.pdmodel + .pdiparams + inference.yml; ``inference_files.py``
reads it; ``ppocr_import.py`` maps a released inference model onto our networks as trainable weights) and its
training log lines (``ppocr_logs.py``); PaddleDetection's YAML files (``ppdet_yaml.py``: ``_BASE_`` includes, tags).
Config translators (PaddleOCR / ppdet YAML -> ours) are in ``compat/``, above the tasks."""
