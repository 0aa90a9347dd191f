"""How many of a run's disagreements with the released model on the general crops are only spaces (the reading
equals the released one once spaces are removed). Reads the prep root's released_reads.json and each run's
--mode predict result files (runs/NAME/general_{tune,heldout}.txt, merges: runs/NAME/merged/aXXX/...).

    python benchmarks/results/finetune_merge/space_only.py /tmp/forget/ft U B K U/merged/a060 B/merged/a080
"""
import json
import sys
from pathlib import Path


def reads(path: Path) -> dict:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        out[Path(parts[0]).name] = parts[1] if len(parts) > 1 else ""
    return out


def main(root: str, *runs: str) -> None:
    root = Path(root)
    released = json.loads((root / "released_reads.json").read_text(encoding="utf-8"))
    print("| run | part | agree | differ | of which only spaces | agreement ignoring spaces |\n|---|---|---|---|---|---|")
    for run in runs:
        for part in ("tune", "heldout"):
            path = root / "runs" / run / f"general_{part}.txt"
            if not path.exists():
                continue
            got, base = reads(path), released[f"general_{part}"]
            differ = [k for k in base if got.get(k) != base[k]]
            spaces = [k for k in differ if (got.get(k) or "").replace(" ", "") == base[k].replace(" ", "")]
            print(f"| {run} | {part} | {len(base) - len(differ)}/{len(base)} | {len(differ)} | {len(spaces)} | "
                  f"{(len(base) - len(differ) + len(spaces)) / len(base):.3f} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
