#!/usr/bin/env python3
"""results.jsonl + logs/*.time -> results.csv and the markdown tables of rmt-copy.md."""
import json, os, glob
here = os.path.dirname(os.path.abspath(__file__))
rows = [json.loads(l) for l in open(os.path.join(here, "results.jsonl")) if l.strip()]
times = {}
for f in glob.glob(os.path.join(here, "logs", "*.time")):
    parts = open(f).read().split()
    kv = dict(zip(parts[::2], map(float, parts[1::2])))
    times[os.path.basename(f)[:-5]] = kv
with open(os.path.join(here, "results.csv"), "w") as out:
    out.write("run,task,model,segments,zero_memory,step,examples,accuracy,exact_match,loss,cpu_s,wall_s\n")
    for r in rows:
        t = times.get(r["run"], {})
        cpu = t.get("cpu_user_s", 0) + t.get("cpu_sys_s", 0)
        out.write(f'{r["run"]},{r["task"]},{r["model"]},{r["segments"]},{int(r["zero_memory"])},{r["step"]},'
                  f'{r["examples"]},{r["accuracy"]:.4f},{r["exact_match"]:.4f},{r["loss"]:.4f},{cpu:.1f},{t.get("wall_s", 0):.1f}\n')
get = {(r["task"], r["model"], r["segments"], r["zero_memory"]): r for r in rows}
names = {"transformer": "Baseline (no memory)", "trxl": "Transformer-XL (cache = segment)", "rmt": "RMT (memory = segment)"}
for metric in ("accuracy", "exact_match"):
    for zero in (False, True):
        models = ["transformer", "trxl", "rmt"] if not zero else ["trxl", "rmt"]
        print(f"\n{metric}{' (memory zeroed between segments)' if zero else ''}\n")
        print("| model | " + " | ".join(f"{t} {n}" for t in ("copy", "reverse") for n in (1, 2, 3, 4)) + " |")
        print("|---|" + "---|" * 8)
        for m in models:
            cells = []
            for t in ("copy", "reverse"):
                for n in (1, 2, 3, 4):
                    r = get.get((t, m, n, zero))
                    cells.append(f"{r[metric]:.3f}" if r else "–")
            print(f"| {names[m]} | " + " | ".join(cells) + " |")
table = sorted({r["run"] for r in rows})
cpu = sum(times[n].get("cpu_user_s", 0) + times[n].get("cpu_sys_s", 0) for n in table)
wall = sum(times[n].get("wall_s", 0) for n in table)
print(f"\n{len(table)} training runs of the table: CPU {cpu:.0f} s ({cpu/60:.1f} min), wall {wall:.0f} s ({wall/60:.1f} min)")
for n in sorted(set(times) - set(table)):
    t = times[n]
    if t: print(f"{n}: CPU {t.get('cpu_user_s', 0) + t.get('cpu_sys_s', 0):.0f} s, wall {t.get('wall_s', 0):.0f} s")

# The 1000-step copy runs (long.sh, any MODEL): results-long*.jsonl -> results-long.csv and
# one table per metric, columns copy 1..4 (a cell is "–" where no 1000-step run exists), plus
# the computed no-memory ceiling (no_memory_ceiling.csv) and each run's CPU/wall time.
long = [json.loads(l) for f in sorted(glob.glob(os.path.join(here, "results-long*.jsonl")))
        for l in open(f) if l.strip()]
if long:
    with open(os.path.join(here, "results-long.csv"), "w") as out:
        out.write("run,task,model,segments,zero_memory,step,examples,accuracy,exact_match,loss,cpu_s,wall_s\n")
        for r in sorted(long, key=lambda r: (r["model"], r["segments"], r["zero_memory"])):
            t = times.get(r["run"], {})
            cpu = t.get("cpu_user_s", 0) + t.get("cpu_sys_s", 0)
            out.write(f'{r["run"]},{r["task"]},{r["model"]},{r["segments"]},{int(r["zero_memory"])},{r["step"]},'
                      f'{r["examples"]},{r["accuracy"]:.4f},{r["exact_match"]:.4f},{r["loss"]:.4f},{cpu:.1f},{t.get("wall_s", 0):.1f}\n')
    lget = {(r["model"], r["segments"], r["zero_memory"]): r for r in long if r["task"] == "copy"}
    ceil = {}
    for l in list(open(os.path.join(here, "no_memory_ceiling.csv")))[1:]:
        t, n, _, c = l.strip().split(",")
        if t == "copy": ceil[int(n)] = float(c)
    print("\n1000 steps, copy (results-long*.jsonl)")
    for metric, zero, title in (("accuracy", False, "per-character accuracy"), ("exact_match", False, "exact match"),
                                ("accuracy", True, "per-character accuracy, memory zeroed")):
        print(f"\n{title}\n\n| model | copy 1 | copy 2 | copy 3 | copy 4 |\n|---|---|---|---|---|")
        for m in (["transformer", "trxl", "rmt"] if not zero else ["trxl", "rmt"]):
            cells = [f"{lget[(m, n, zero)][metric]:.4f}" if (m, n, zero) in lget else "–" for n in (1, 2, 3, 4)]
            print(f"| {names[m]} | " + " | ".join(cells) + " |")
        if metric == "accuracy" and not zero:
            print("| *best possible without memory* | " + " | ".join(f"{ceil[n]:.3f}" for n in (1, 2, 3, 4)) + " |")
    print()
    for run in sorted({r["run"] for r in long}):
        t = times.get(run, {})
        print(f"{run}: CPU {t.get('cpu_user_s', 0):.1f} s user + {t.get('cpu_sys_s', 0):.1f} s system, wall {t.get('wall_s', 0):.0f} s")
    # validation curves of the 1000-step runs (64 examples every 100 steps, from the logs)
    import re
    print("\nvalid per-char accuracy / exact match (64 ex.) at steps 100, 200, ..., 1000")
    for run in sorted({r["run"] for r in long}):
        pts = re.findall(r"^  valid @ step (\d+): loss \S+  per-char accuracy (\S+)  exact match (\S+)",
                         open(os.path.join(here, "logs", run + ".log")).read(), re.M)
        print(f"{run}: " + " ".join(f"{float(a):.3f}/{float(e):.3f}" for _, a, e in pts))
