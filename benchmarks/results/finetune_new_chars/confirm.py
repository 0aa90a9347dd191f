# a fit's saved weights through the recipe's --mode predict (every crop at its own width): new-character val lines
# and the held-out general crops (agreement with the released predict readings, per source)
import json, sys
from pathlib import Path
from benchmarks import finetune_forgetting as ff
from benchmarks.harness.new_chars import new_char_scores
name = sys.argv[1]
root = Path("/tmp/nc2")
key = f"Global.pretrained_model={root / 'fits' / (name + '.pdparams')}"
ext = root / "dict_ext.txt"
rel = json.loads((root / "released_reads.json").read_text(encoding="utf-8"))
out = root / "confirm" / name
res = {"name": name}
for split in sys.argv[2:]:
    if split == "weak_val":
        reads = ff.predict(key, root / "weak/val/images", out / "weak_val", ext)
        res["weak_val"] = new_char_scores(ff.label_map(root / "weak/val"), reads, ff.new_chars_of(root))
    else:
        gen = Path("/tmp/forget/general")
        reads = ff.predict(key, gen / split / "images", out / split, ext)
        base = rel[f"general_{split}"]
        src = {(r.split("\t")[1], r.split("\t")[0]): r.split("\t")[2] for r in (gen / "sources.tsv").read_text(encoding="utf-8").splitlines()[1:]}
        groups = {}
        for k in base:
            groups.setdefault(src[(split, k)], []).append(reads.get(k) == base[k])
        res[split] = {"agree": round(sum(reads.get(k) == base[k] for k in base) / len(base), 4),
                      "per_source": {s: [round(sum(v) / len(v), 4), len(v)] for s, v in sorted(groups.items())},
                      "changed": {k: [base[k], reads.get(k)] for k in base if reads.get(k) != base[k]}}
with open(root / "confirm.jsonl", "a", encoding="utf-8") as f:
    f.write(json.dumps(res, ensure_ascii=False) + "\n")
print(json.dumps({k: (v.get("new_exact") or v.get("agree")) if isinstance(v, dict) else v for k, v in res.items()}))
