#!/usr/bin/env python3
"""Scores how an irqwise build reads the IRQ names of tests/data/irq_names/drivers.txt.

Usage: score.py IRQWISE_BINARY ROOT  (ROOT written by
`IRQWISE_CORPUS_ROOT=ROOT cargo test --test driver_names -- --ignored write_corpus_root`).

Per driver: "right" when every vector reads as the corpus says; "partly" when every vector
read wrong is left alone (action skip: harmless); "wrong" when a misread vector would be placed.
"""
import json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
binary, root = sys.argv[1], sys.argv[2]

devices = []
for line in open(os.path.join(here, "drivers.txt")):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    if line.startswith("device "):
        f = line.split()
        devices.append({"driver": f[1], "bdf": f[3], "vectors": []})
        continue
    body = line.strip()
    cut = body.rfind("  ")
    name, tail = body[:cut].rstrip(), body[cut:].split()
    devices[-1]["vectors"].append((name, tail[0], int(tail[1]) if len(tail) > 1 else None))

with tempfile.TemporaryDirectory() as config:
    out = subprocess.run([binary, "--root", root, "--config", config, "plan", "--json"],
                         capture_output=True, text=True, check=True).stdout
plan = {d["bdf"]: d for d in json.loads(out)["devices"]}

verdicts = {}
for d in devices:
    got = plan[d["bdf"]]["irqs"]
    verdict = "right"
    for (name, role, queue), p in zip(d["vectors"], got):
        assert p["name"] == name, (p["name"], name)
        if (p["role"], p.get("queue")) == (role, queue):
            continue
        verdict = max(verdict, "wrong" if p["action"] != "skip" else "partly",
                      key=["right", "partly", "wrong"].index)
    prev = verdicts.get(d["driver"], "right")
    verdicts[d["driver"]] = max(prev, verdict, key=["right", "partly", "wrong"].index)

for v in ["right", "partly", "wrong"]:
    names = sorted(k for k, x in verdicts.items() if x == v)
    print(f"{v:6} {len(names):2}: {' '.join(names)}")
print(f"{len(verdicts)} drivers")
