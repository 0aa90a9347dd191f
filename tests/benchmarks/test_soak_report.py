"""benchmarks/soak.py's bookkeeping (the soak itself runs for 30 minutes, outside CI): the RSS readings it compares
and the bad lines it injects."""
from __future__ import annotations

import sys

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))

from benchmarks import soak  # noqa: E402


def _row(epoch, rss, loaders=1, extra=50.0):
    return {"t": 0.0, "epoch": epoch, "step": epoch * 2, "rss_mib": rss, "with_loaders_mib": rss + extra * loaders,
            "loaders": loaders}


def test_rss_report_compares_after_the_first_epoch_with_the_end():
    rows = [_row(0, 300.0), _row(1, 380.0), _row(2, 400.0), _row(5, 410.0), _row(9, 420.0), _row(9, 430.0, loaders=0)]
    r = soak.rss_report({"rank0:pid1": rows, "rank1:pid2": [_row(3, 400.0), _row(4, 401.0)]})["rank0:pid1"]
    assert r["after_first_epoch"]["rss_mib"] == 400.0  # the first reading two log epochs after the first one
    assert r["end"]["rss_mib"] == 430.0 and r["growth_pct"] == 7.5
    assert r["end_with_loaders"]["with_loaders_mib"] == 470.0  # the loader workers had ended at the last reading
    assert r["growth_with_loaders_pct"] == round(100 * (470 / 450 - 1), 2) and r["max_rss_mib"] == 430.0
    short = soak.rss_report({"rank1:pid2": [_row(3, 400.0), _row(4, 401.0)]})["rank1:pid2"]
    assert short == {"samples": 2, "note": "ended within its first epoch"}


def test_make_data_injects_the_counted_bad_lines(tmp_path, monkeypatch):
    src = tmp_path / "smoke"
    (src / "images").mkdir(parents=True)
    for i in range(4):
        (src / "images" / f"{i}.jpg").write_bytes(b"jpeg")
    (src / "label.txt").write_text("".join(f"images/{i}.jpg\t字{i}\n" for i in range(4)), encoding="utf-8")
    monkeypatch.setattr(soak, "SMOKE_DATA", src)
    data = tmp_path / "data"
    data.mkdir()
    counts = soak.make_data(data, lines=200, bad_frac=0.1, seed=3)
    lines = (data / "train.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200 and counts["corrupt_image"] + counts["missing_image"] == 20
    corrupt = [ln for ln in lines if "/corrupt_" in ln]
    missing = [ln for ln in lines if "/missing_" in ln]
    assert len(corrupt) == counts["corrupt_image"] and len(missing) == counts["missing_image"]
    assert all((data / ln.split("\t")[0]).is_file() for ln in corrupt)
    assert not any((data / ln.split("\t")[0]).exists() for ln in missing)
    assert soak.make_data(data, lines=200, bad_frac=0.1, seed=3) == counts  # seeded


def test_faults_are_chosen_by_name_and_an_unknown_one_is_refused(tmp_path, capsys):
    """--faults picks the injected faults (the RSS study ran sigstop_rank1 alone); a typo stops before any run."""
    import pytest

    assert list(soak.FAULTS) == ["sigstop_rank1", "sigstop_loader", "kill9_rank1"]
    with pytest.raises(SystemExit) as stop:
        soak.main(["--faults", "sigstop_rank1,kill9", "--out", str(tmp_path / "out")])
    assert stop.value.code == 2 and "unknown ['kill9']" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
