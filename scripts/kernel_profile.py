#!/usr/bin/env python3
"""Sums kernel durations by name from `ncu --csv --metrics gpu__time_duration.sum` output.

    ncu --csv --metrics gpu__time_duration.sum ... > prof.csv; kernel_profile.py prof.csv
"""
import csv
import sys
from collections import defaultdict


def main(path):
    total = defaultdict(float)
    count = defaultdict(int)
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split("(")[0][:90]
        v = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
        total[name] += v * scale
        count[name] += 1
    grand = sum(total.values())
    print(f"{'kernel':90s} {'calls':>6s} {'us':>10s} {'%':>6s}")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[:25]:
        print(f"{name:90s} {count[name]:6d} {us:10.1f} {100 * us / grand:6.1f}")
    print(f"total {grand:.1f} us over {sum(count.values())} kernels")


if __name__ == "__main__":
    main(sys.argv[1])
