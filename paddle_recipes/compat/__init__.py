"""Compatibility layers with PaddleOCR and PaddleDetection: their config files mapped onto ours (paddleocr.py,
paddleocr_det.py, ppdet.py), PaddleOCR's inference folder (ppocr_inference.py) and its log lines (ppocr_logs.py)."""
