"""Summary of dataloader_side_by_side.sh: the capture's cost on the DataLoader
epoch, per capture variant, from rounds where two copies (A, B) ran an epoch
at the same time and one of them, or neither, was traced.

Per traced round d = log(traced copy's epoch / untraced copy's epoch); with
several copies per side (a list of epochs per side), d is the mean over the
pairs (copy i of the traced side against copy i of the other). A
lasting difference between the copies adds +k to the A-traced rounds and -k
to the B-traced ones, so the cost is exp((mean_A + mean_B) / 2) - 1, with a
95% bootstrap interval (each side resampled apart, 4,000 draws). The same
for the main thread's time on a CPU (schedstat run_ns), which the copies'
waiting cannot move, and its user ticks. Null rounds (neither traced) give
log(A/B): their spread is what one round's noise is.

Usage: side_by_side_summary.py side-rounds.jsonl
"""
import json
import math
import random
import statistics
import sys


def load(path):
    rounds = []
    for line in open(path):
        line = line.strip()
        if line:
            rounds.append(json.loads(line))
    return rounds


def measure(epoch, what):
    if what == "wall":
        return epoch["seconds"]
    if what == "on_cpu":
        return epoch["main"]["run_ns"] / 1e9
    return epoch["main"]["user_ticks"]


def copies(r, side):
    """The epochs of a side's copies in round r (one copy: a single object)."""
    e = r[side]
    return e if isinstance(e, list) else [e]


def irq_rate(r):
    """The machine's interrupts per second over copy A1's epoch of round r."""
    a = copies(r, "A")[0]
    return a["host"].get("interrupts", 0) / a["seconds"]


def pair_log_ratio(r, first, second, what):
    """Mean over the copy pairs of log(first side's epoch / second side's)."""
    logs = []
    for a, b in zip(copies(r, first), copies(r, second)):
        x, y = measure(a, what), measure(b, what)
        if x <= 0 or y <= 0:
            return None
        logs.append(math.log(x / y))
    return statistics.mean(logs) if logs else None


def log_ratio(r, what):
    t, o = ("A", "B") if r["traced"] == "A" else ("B", "A")
    return pair_log_ratio(r, t, o, what)


def estimate(side_a, side_b, draws=4000, seed=7):
    """Cost (a fraction) and its 95% interval from the two sides' log ratios."""
    point = (statistics.mean(side_a) + statistics.mean(side_b)) / 2
    rng = random.Random(seed)
    boots = []
    for _ in range(draws):
        ma = statistics.mean(rng.choices(side_a, k=len(side_a)))
        mb = statistics.mean(rng.choices(side_b, k=len(side_b)))
        boots.append((ma + mb) / 2)
    boots.sort()
    lo, hi = boots[int(0.025 * draws)], boots[int(0.975 * draws) - 1]
    return math.expm1(point), math.expm1(lo), math.expm1(hi)


def main():
    rounds = load(sys.argv[1])
    bad = [r["round"] for r in rounds if not r["ok"]]
    if bad:
        print(f"rounds left out (the capture did not start or ended early): {bad}")
    rounds = [r for r in rounds if r["ok"]]
    null = [pair_log_ratio(r, "A", "B", "wall") for r in rounds if r["traced"] == "-"]
    null = [x for x in null if x is not None]
    walls = [e["seconds"] for r in rounds for c in ("A", "B") for e in copies(r, c)]
    pairs = len(copies(rounds[0], "A")) if rounds else 0
    if walls:
        print(f"{len(rounds)} rounds, {pairs} pair(s) of copies; epochs {min(walls):.3f}-{max(walls):.3f} s "
              f"(median {statistics.median(walls):.3f})")
    if pairs > 1:
        single = [math.log(a["seconds"] / b["seconds"]) for r in rounds if r["traced"] == "-"
                  for a, b in zip(copies(r, "A"), copies(r, "B"))]
        if len(single) >= 2:
            print(f"null rounds, one pair's log(A/B) sd {statistics.stdev(single):.4f} "
                  f"(the mean of {pairs} pairs is what a round carries)")
    if len(null) >= 2:
        print(f"null rounds (neither traced), {len(null)}: A/B wall ratio median "
              f"{math.exp(statistics.median(null)):.4f}, spread of log(A/B) sd {statistics.stdev(null):.4f} "
              f"(one round's noise); each: {' '.join(f'{math.exp(x):.3f}' for x in null)}")
    variants = []
    for r in rounds:
        if r["traced"] != "-" and r["variant"] not in variants:
            variants.append(r["variant"])
    for v in variants:
        print(f"variant {v!r}:")
        for what, label in (("wall", "epoch wall time"),
                            ("on_cpu", "main thread on a CPU"),
                            ("user", "main thread user ticks")):
            sides = {}
            for r in rounds:
                if r["variant"] == v and r["traced"] in ("A", "B"):
                    d = log_ratio(r, what)
                    if d is not None:
                        sides.setdefault(r["traced"], []).append(d)
            a, b = sides.get("A", []), sides.get("B", [])
            if len(a) < 2 or len(b) < 2:
                print(f"  {label}: too few rounds (A {len(a)}, B {len(b)})")
                continue
            cost, lo, hi = estimate(a, b)
            each = " ".join(f"{math.exp(x):.3f}" for x in a + b)
            print(f"  {label}: traced/untraced {1 + cost:.4f} ({cost * 100:+.2f}%, 95% interval "
                  f"{lo * 100:+.2f}% to {hi * 100:+.2f}%; {len(a)} A-traced + {len(b)} B-traced rounds; "
                  f"each: {each})")
        rate = [irq_rate(r) for r in rounds if r["variant"] == v and r["traced"] != "-"]
        base = [irq_rate(r) for r in rounds if r["traced"] == "-"]
        if rate and base:
            print(f"  machine interrupts: {statistics.median(rate):,.0f}/s in these rounds, "
                  f"{statistics.median(base):,.0f}/s in the null rounds (all CPUs)")
        ticks = [r["ingero_ticks"] for r in rounds if r["variant"] == v and r["traced"] != "-"]
        if ticks:
            print(f"  ingero's own CPU over a capture: median {statistics.median(ticks)} ticks")


if __name__ == "__main__":
    main()
