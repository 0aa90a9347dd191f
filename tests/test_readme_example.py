"""The README is a front door that cannot rot: its plain-paddle example runs (1 process, and 2 under the launcher),
every import line of its blocks table imports, its test command is the one CI runs, and its links resolve (also those
of docs/, the recipe guides, the benchmarks index and its results pages; the guides and the index stay short)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import run_launch, run_python

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
GUIDES = sorted((REPO / "recipes").glob("README_*.md"))
BENCH_INDEX = REPO / "benchmarks" / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md")), *GUIDES, BENCH_INDEX,
        *sorted((REPO / "benchmarks" / "results").glob("*/README.md"))]


def _section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level (outside code blocks)."""
    level, lines, fenced = heading.split(" ", 1)[0], text.split("\n"), False
    start = lines.index(heading) + 1
    for end in range(start, len(lines)):
        fenced ^= lines[end].startswith("```")
        if not fenced and re.match(rf"#{{1,{len(level)}}} ", lines[end]):
            return "\n".join(lines[start:end])
    return "\n".join(lines[start:])


def readme_example() -> str:
    section = _section(README.read_text(encoding="utf-8"), "### The blocks in a plain paddle loop")
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "README: one python block expected under 'The blocks in a plain paddle loop'"
    return blocks[0]


def test_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    long = [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 200]
    assert len(lines) <= 150 and not long, f"README: {len(lines)} lines (<= 150), lines over 200 chars: {long}"


def test_readme_example_runs(tmp_path):
    script = tmp_path / "readme_example.py"
    script.write_text(readme_example())
    run_python([script], timeout=120)  # the block ends with its own assert on the EMA model's error


@pytest.mark.slow
def test_readme_example_runs_under_the_launcher(tmp_path):
    script = tmp_path / "readme_example.py"
    script.write_text(readme_example())
    run_launch(script, [], nproc=2, log_dir=tmp_path / "log", timeout=300)


def test_blocks_table_import_lines_import():
    table = _section(README.read_text(encoding="utf-8"), "## The blocks")
    imports = re.findall(r"^\| `\w+(?:\.py|/)` \|.*\| `((?:from|import) paddle_recipes[^`]*)`", table, flags=re.M)
    rows = re.findall(r"^\| `\w+(?:\.py|/)` \|", table, flags=re.M)
    assert len(imports) == len(rows) >= 10, "every row of README's blocks table ends with an import line"
    for line in imports:
        exec(line, {})  # noqa: S102 - the README's own import lines


def test_readme_test_command_is_what_ci_runs():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.split("# The README's test command, verbatim:\n", 1)[1].splitlines()[0]
    quickstart = _section(README.read_text(encoding="utf-8"), "## Quickstart: two commands on a fresh machine")
    assert f"\n{command}\n" in quickstart


def test_guides_and_the_benchmarks_index_stay_short():
    """Each recipes/README_*.md is a user guide (<= 300 lines; run tables live in benchmarks/results/<name>/), and
    benchmarks/README.md is an index (<= 250 lines)."""
    sizes = {d.name: len(d.read_text(encoding="utf-8").splitlines()) for d in GUIDES}
    assert len(sizes) >= 5 and all(n <= 300 for n in sizes.values()), sizes
    assert len(BENCH_INDEX.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_relative_links_resolve(doc):
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [t for t in targets if "://" not in t and not (doc.parent / t).exists()]
    assert not missing, f"{doc.name}: links to missing files: {missing}"
