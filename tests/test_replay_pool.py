"""datasets/make_replay_pool.py: bad input is one line naming it, exit 2, before any model runs."""
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("case", ["no_folder", "no_photos", "no_measurement", "broken_git_dir"])
def test_make_replay_pool_bad_input_is_one_line_exit_2(tmp_path, capsys, case):
    sys.path.insert(0, str(REPO_ROOT / "datasets"))
    from make_replay_pool import PHOTOS, main

    mirror = tmp_path / "checkout"
    if case != "no_folder":
        mirror.mkdir()  # a plain checkout dir without any of the listed photos
    if case == "broken_git_dir":  # looks like a git dir, git cannot read it
        (mirror / "objects").mkdir()
        (mirror / "HEAD").write_text("garbage")
    extra = ["--measurement", str(tmp_path / "none.txt")] if case == "no_measurement" else []
    with pytest.raises(SystemExit) as code:
        main(["--mirror", str(mirror), "--out", str(tmp_path / "out"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code.value.code == 2
    expected = {"no_folder": f"make_replay_pool.py: error: --mirror: not a folder: {mirror}",
                "no_measurement": f"make_replay_pool.py: error: --measurement: file not found: {tmp_path / 'none.txt'}",
                "broken_git_dir": f"make_replay_pool.py: error: --mirror: not a readable git dir: {mirror}",
                "no_photos": f"make_replay_pool.py: error: --mirror: none of the {len(PHOTOS)} listed photos is in {mirror}"}
    assert err == [expected[case]]
    assert not (tmp_path / "out").exists()
