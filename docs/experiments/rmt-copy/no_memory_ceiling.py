#!/usr/bin/env python3
"""Best per-character accuracy a model WITHOUT memory can reach on copy / reverse (source 24,
10 symbols) split into n segments: a target character is predictable only when the source
symbol it repeats sits at an earlier position of the same segment; otherwise the best is a
uniform guess (1/10). Mirrors core/data/tasks.cpp (segment length ceil(len / n); the query at
position g predicts token g + 1 and sees tokens <= g of its own segment)."""
import math

S, SYMBOLS = 24, 10

def ceiling(task, n):
    length = 3 * S + 1 if task == "copy" else 2 * S + 1
    ls = math.ceil(length / n)
    visible = total = 0
    for k in range(S + 1, length):           # target token positions
        g = k - 1                            # the query that predicts token k
        if task == "copy":
            j = (k - S - 1) % S
            sources = [j, S + 1 + j, 2 * S + 1 + j]
        else:
            sources = [2 * S - k]            # reverse: token k repeats src[2S - k]
        ok = any(p <= g and p // ls == g // ls for p in sources)
        visible += ok
        total += 1
    f = visible / total
    return f, f + (1 - f) / SYMBOLS

if __name__ == "__main__":
    print("task,segments,visible_fraction,ceiling_accuracy")
    for task in ("copy", "reverse"):
        for n in (1, 2, 3, 4):
            f, c = ceiling(task, n)
            print(f"{task},{n},{f:.4f},{c:.4f}")
