"""Compatibility layers: other projects' config files mapped onto ours (see paddleocr.py)."""
