"""PaddleOCR's file and log formats, below the tasks and the recipe base: its inference folder
(``ppocr_inference.py``: inference.json/.pdmodel + .pdiparams + inference.yml) and its training log lines
(``ppocr_logs.py``). Config translators (PaddleOCR / ppdet YAML -> ours) are in ``compat/``, above the tasks."""
