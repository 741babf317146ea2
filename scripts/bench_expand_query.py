"""Time the table/figure expansion's graph lookup on a built corpus: the hops one at a time
(:func:`htmlrag.superrag.graph.cypher.related_tables_figures`, ours) against the two-hop pattern over unlabelled
nodes it replaced (the peer), on the same ids, and check that both return the same rows.

Usage::

    python scripts/bench_expand_query.py --db <corpus folder or its graph.kuzu> [--ids 50]            # both, ratio
    python scripts/bench_expand_query.py --db ... --only one-hop    # one of them (for a whole-process timer)

The ids are the first ``--ids`` SectionChunk and TableChunk ids in id order (4:1), what a retriever's evidence
holds. Measured on FinanceBench's 22 10-K/10-Q filings (docs/superrag.md, issue 35 seventh round).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

TWO_HOP = ("UNWIND $ids AS i MATCH (c)-[:IS_UNDER]->(s)<-[:IS_UNDER]-(t) WHERE c.id = i AND t.kind IN ['Table', 'Figure'] "
           "RETURN DISTINCT c.id AS source, t.id AS id, 'section' AS via UNION "
           "UNWIND $ids AS i MATCH (c)-[:ON_PAGE]->(p)<-[:ON_PAGE]-(t) WHERE c.id = i AND t.kind IN ['Table', 'Figure'] "
           "RETURN DISTINCT c.id AS source, t.id AS id, 'page' AS via")


def main() -> int:
    from htmlrag.superrag.graph.cypher import related_tables_figures
    from htmlrag.superrag.graph.store import KuzuStore

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="a corpus folder (holding graph.kuzu) or the graph.kuzu itself")
    ap.add_argument("--ids", type=int, default=50)
    ap.add_argument("--only", choices=("one-hop", "two-hop"))
    args = ap.parse_args()
    path = args.db / "graph.kuzu" if (args.db / "graph.kuzu").exists() else args.db
    if not path.exists():
        print(f"bench_expand_query: no graph at {args.db}", file=sys.stderr)
        return 2
    store = KuzuStore(path, read_only=True)
    n_table = max(1, args.ids // 5)
    ids = [r["id"] for r in store.query(f"MATCH (n:SectionChunk) RETURN n.id AS id ORDER BY id LIMIT {args.ids - n_table}")]
    ids += [r["id"] for r in store.query(f"MATCH (n:TableChunk) RETURN n.id AS id ORDER BY id LIMIT {n_table}")]
    runs = {"one-hop": lambda: related_tables_figures(store, ids), "two-hop": lambda: store.query(TWO_HOP, {"ids": ids})}
    took, rows = {}, {}
    for name in (args.only,) if args.only else ("one-hop", "two-hop"):
        t0 = time.perf_counter()
        rows[name] = {(r["source"], r["id"], r["via"]) for r in runs[name]()}
        took[name] = time.perf_counter() - t0
        print(f"{name:8s} {len(ids)} ids -> {len(rows[name])} rows in {took[name]:.2f} s", flush=True)
    if len(rows) == 2:
        same = rows["one-hop"] == rows["two-hop"]
        print(f"same rows: {same}; two-hop / one-hop = {took['two-hop'] / took['one-hop']:.0f}x")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
