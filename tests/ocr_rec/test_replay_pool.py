"""datasets/make_replay_pool.py: bad input is one line naming it, exit 2, before any model runs."""
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


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


def _git(repo: Path, *args) -> str:
    import subprocess
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, check=True, text=True).stdout.strip()


def test_mirror_reads_a_photo_at_the_named_commit_not_head(tmp_path, capsys):
    """A fork whose HEAD dropped a photo still gives it at DIR@COMMIT; an unknown commit is one line, exit 2."""
    sys.path.insert(0, str(REPO_ROOT / "datasets"))
    from make_replay_pool import Mirror, main, split_revision

    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    (work / "doc").mkdir()
    (work / "doc/a.jpg").write_bytes(b"first")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "one")
    first = _git(work, "rev-parse", "HEAD")
    (work / "doc/a.jpg").unlink()
    _git(work, "commit", "-q", "-am", "two: drops the photo")
    gitdir = work / ".git"
    assert split_revision(f"{gitdir}@{first[:8]}") == (str(gitdir), first[:8])
    assert split_revision(str(gitdir)) == (str(gitdir), "HEAD")
    assert Mirror(gitdir).read("doc/a.jpg") is None
    at_first = Mirror(gitdir, first[:8])
    assert at_first.commit == first and at_first.read("doc/a.jpg") == b"first"
    with pytest.raises(SystemExit) as code:
        main(["--mirror", f"{gitdir}@deadbeef", "--out", str(tmp_path / "out")])
    assert code.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"make_replay_pool.py: error: --mirror: no commit deadbeef in {gitdir}"]
    with pytest.raises(SystemExit):
        main(["--mirror", f"{work / 'doc'}@{first}", "--out", str(tmp_path / "out")])
    assert capsys.readouterr().err.strip() == (
        f"make_replay_pool.py: error: --mirror: @{first} needs a git dir, {work / 'doc'} is a plain folder")
    assert not (tmp_path / "out").exists()
