"""Text detection (DB) with PaddleOCR's det models weight for weight: backbones are shared with rec
(``tasks/ocr/ppocr_backbones.py``), the det-only ResNet_vd, necks and heads live here, together with
DB's label maps, loss, crop/resize transforms, post-processing, metric and label-file reader."""
