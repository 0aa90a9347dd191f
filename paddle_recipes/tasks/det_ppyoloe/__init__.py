"""PP-YOLOE detection task package (own implementation on paddle.nn; no paddledet dependency)."""
