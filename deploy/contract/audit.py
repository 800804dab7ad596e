"""After the contract run: audit every item Schemathesis saved.

The fuzzer ordered, polled and paid through the real pipeline; once the
consumer has written everything (no reservation pending), each item's audit
(GET /api/v1/admin/items/{id}/audit, invariants I1-I7 of docs/design.md,
and I9 for an item with a waiting room) must be ok. Exits 1 naming the items
that are not, or that never settle.

Usage: audit.py BASE_URL ITEMS_FILE   (the admin token in CONTRACT_ADMIN_TOKEN)
"""

from __future__ import annotations

import os
import sys
import time

import requests

SETTLE_SECONDS = 60


def main() -> int:
    base, items_file = sys.argv[1], sys.argv[2]
    headers = {"Authorization": "Bearer " + os.environ["CONTRACT_ADMIN_TOKEN"]}
    try:
        with open(items_file, encoding="ascii") as f:
            items = sorted({int(line) for line in f if line.strip()})
    except FileNotFoundError:
        items = []
    if not items:
        print("audit: the run saved no item; nothing reached the pipeline", file=sys.stderr)
        return 1
    deadline = time.monotonic() + SETTLE_SECONDS
    left, reports = list(items), {}
    while left:
        waiting = []
        for item in left:
            r = requests.get(f"{base}/api/v1/admin/items/{item}/audit", headers=headers, timeout=10)
            if r.status_code != 200:
                reports[item] = f"HTTP {r.status_code}: {r.text.strip()}"
                waiting.append(item)
                continue
            rep = r.json()
            reports[item] = rep
            if rep["pending"] > 0 or not rep["ok"]:
                waiting.append(item)  # drift is allowed while requests are in flight
        left = waiting
        if not left or time.monotonic() > deadline:
            break
        time.sleep(1)
    orders = sum(1 for i in items if isinstance(reports[i], dict) and reports[i]["unpaid"] + reports[i]["paid"] > 0)
    paid = sum(1 for i in items if isinstance(reports[i], dict) and reports[i]["paid"] > 0)
    print(f"audit: {len(items)} items saved by the run, {orders} with orders, {paid} with paid orders; "
          f"{len(items) - len(left)} ok, {len(left)} not")
    for item in left:
        print(f"audit: item {item}: {reports[item]}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
