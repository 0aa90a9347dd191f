"""Rebuild the subset font files of datasets/fonts/ from Debian's font packages (how they were made).

    mkdir -p /tmp/fontdebs && cd /tmp/fontdebs && apt-get update && apt-get download \\
        fonts-noto-cjk fonts-arphic-ukai fonts-arphic-uming fonts-wqy-microhei fonts-wqy-zenhei \\
        fonts-lxgw-wenkai fonts-smiley-sans fonts-cwtex-fs fonts-cwtex-yen
    for d in *.deb; do dpkg-deb -x $d root; done
    python datasets/fonts/make_font_subsets.py --root /tmp/fontdebs/root

The Noto Sans CJK TC Thin and Black faces (train side, the extreme weights) come from PyPI wheels instead:

    mkdir -p /tmp/fontwheels && cd /tmp/fontwheels && pip download --no-deps \\
        cvttf-notosanscjk-thin==1.0 cvttf-notosanscjk-black==1.0
    for w in *.whl; do unzip -o -q $w -d root; done
    python datasets/fonts/make_font_subsets.py --root /tmp/fontwheels/root --pypi

Each font keeps only the glyphs of SUBSET_CHARS (GB2312 level-1 hanzi, ASCII, full-width forms,
CJK punctuation): ~1-2.4 MB a font instead of 5-27 MB. Hinting, bitmaps and layout features are
dropped (the generator renders outlines at 20-60 px). The Debian copyright files (license texts)
are copied to licenses/.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from paddle_recipes.tasks.ocr_rec.charset import gb2312_level1_hanzi  # noqa: E402
from paddle_recipes.tasks.ocr_rec.fonts import FONTS  # noqa: E402

# Debian package and path (under --root) of each shipped font's original.
ORIGINALS = {
    "noto_sans_sc_bold": ("fonts-noto-cjk", "usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc", 2),
    "noto_serif_sc": ("fonts-noto-cjk", "usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
    "noto_serif_sc_bold": ("fonts-noto-cjk", "usr/share/fonts/opentype/noto/NotoSerifCJK-Bold.ttc", 2),
    "ar_pl_ukai": ("fonts-arphic-ukai", "usr/share/fonts/truetype/arphic/ukai.ttc", 0),
    "ar_pl_uming": ("fonts-arphic-uming", "usr/share/fonts/truetype/arphic/uming.ttc", 0),
    "wqy_microhei": ("fonts-wqy-microhei", "usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),
    "wqy_zenhei": ("fonts-wqy-zenhei", "usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0),
    "lxgw_wenkai": ("fonts-lxgw-wenkai", "usr/share/fonts/truetype/lxgw-wenkai/LXGWWenKai-Regular.ttf", 0),
    "smiley_sans": ("fonts-smiley-sans", "usr/share/fonts/truetype/smiley-sans/SmileySans-Oblique.ttf", 0),
    "cwtex_fangsong": ("fonts-cwtex-fs", "usr/share/fonts/truetype/cwtex/cwfs.ttf", 0),
    "cwtex_yen": ("fonts-cwtex-yen", "usr/share/fonts/truetype/cwtex/cwyen.ttf", 0),
}

# PyPI wheel and path (under --root, the unzipped wheels) of the faces taken from PyPI (--pypi).
PYPI_ORIGINALS = {
    "noto_sans_tc_thin": ("cvttf-notosanscjk-thin", "cvttf_NotoSansCJK_Thin/NotoSansCJKtc-Thin.otf", 0),
    "noto_sans_tc_black": ("cvttf-notosanscjk-black", "cvttf_NotoSansCJK_Black/NotoSansCJKtc-Black.otf", 0),
}


def subset_chars() -> list:
    chars = set(gb2312_level1_hanzi())
    chars |= {chr(c) for c in range(0x20, 0x7F)}        # ASCII
    chars |= {chr(c) for c in range(0xFF01, 0xFF5F)}    # full-width forms
    chars |= {chr(c) for c in range(0x3000, 0x3020)}    # CJK symbols and punctuation
    chars |= set("—–…‘’“”·•×÷±°℃々￥")
    return sorted(chars)


def main(argv=None):
    from fontTools import subset
    from fontTools.ttLib import TTFont

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True, help="folder the .deb packages (or, with --pypi, the wheels) were extracted into")
    p.add_argument("--pypi", action="store_true", help="make the faces of PYPI_ORIGINALS from unzipped wheels")
    a = p.parse_args(argv)
    originals = PYPI_ORIGINALS if a.pypi else ORIGINALS
    root = Path(a.root)
    opts = subset.Options()
    opts.hinting = False
    opts.layout_features = []
    opts.notdef_outline = True
    opts.name_IDs = ["*"]
    opts.name_languages = ["*"]
    opts.drop_tables += ["EBDT", "EBLC", "EBSC", "DSIG", "vhea", "vmtx", "VORG"]
    unicodes = [ord(c) for c in subset_chars()]
    (HERE / "licenses").mkdir(exist_ok=True)
    for spec in FONTS:
        if spec.name not in originals:
            continue
        pkg, rel, index = originals[spec.name]
        font = TTFont(root / rel, fontNumber=index)
        sub = subset.Subsetter(opts)
        sub.populate(unicodes=unicodes)
        sub.subset(font)
        font.save(HERE / spec.file)
        if not a.pypi:  # the wheels carry no license file: Noto CJK is OFL-1.1 (licenses/fonts-noto-cjk.copyright)
            shutil.copyfile(root / "usr/share/doc" / pkg / "copyright", HERE / "licenses" / f"{pkg}.copyright")
        print(f"{spec.file}: {(HERE / spec.file).stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
