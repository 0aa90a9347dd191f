"""PaddleOCR and PaddleDetection config files mapped onto ours (paddleocr.py, paddleocr_det.py, ppdet.py). They sit
above the tasks they map to; PaddleOCR's file and log formats are in ``paddle_recipes.formats``."""
