"""Text-line orientation classification (0 / 180 degrees): PaddleOCR's ``use_angle_cls`` / PaddleX's
``use_textline_orientation`` stage."""
