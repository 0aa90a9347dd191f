"""Write tests/fixtures/ppocr_import/{line.jpg, page.jpg}: a photo-like text line (48x320) and page (320x480)
with Chinese text (Noto Sans CJK, paper texture, uneven light, slight blur and JPEG noise), the inputs of the
inference-import fidelity tests. Run from the checkout: python3 tests/scripts/make_import_fixtures.py"""
from pathlib import Path

import numpy as np
from noto_cjk_sans_otc import FONT_PATH
from PIL import Image, ImageDraw, ImageFilter, ImageFont

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "ppocr_import"


def paper(w, h, rng):
    yy, xx = np.mgrid[0:h, 0:w]
    light = 200 + 40 * np.sin(xx / w * 2.5 + 0.7) * np.cos(yy / h * 1.7)
    img = light[..., None] * np.array([1.0, 0.97, 0.9]) + rng.normal(0, 6, (h, w, 3))
    return Image.fromarray(np.clip(img, 0, 255).astype("uint8"))


def draw(size, lines, seed):
    rng = np.random.default_rng(seed)
    img = paper(*size, rng)
    d = ImageDraw.Draw(img)
    for (x, y, text, px, color) in lines:
        d.text((x, y), text, font=ImageFont.truetype(str(FONT_PATH), px), fill=color)
    img = img.rotate(0.8, resample=Image.BICUBIC, fillcolor=(190, 185, 170)).filter(ImageFilter.GaussianBlur(0.6))
    return img


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    draw((320, 48), [(6, 6, "营业执照编号：9144030071", 28, (30, 30, 40))], 0).save(OUT / "line.jpg", quality=85)
    draw((320, 480), [(20, 30, "上海市浦东新区世纪大道", 24, (20, 20, 20)), (20, 90, "电话：021-58881234", 22, (40, 40, 90)),
                      (20, 160, "营业时间 9:00-21:00", 26, (120, 20, 20)), (20, 240, "欢迎光临 谢谢惠顾", 30, (10, 10, 10)),
                      (20, 330, "合计：¥128.50 元", 24, (20, 60, 20)), (40, 410, "PaddleOCR 2026", 22, (0, 0, 0))],
         1).save(OUT / "page.jpg", quality=85)
