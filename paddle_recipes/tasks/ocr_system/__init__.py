"""The OCR system: detector -> perspective crops in reading order -> recognizer (recipes/ocr_system.py)."""
