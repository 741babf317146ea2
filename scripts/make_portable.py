"""Make run folders written before runs were portable (issue 40) portable, in place.

    python scripts/make_portable.py results/real_models/real_small_wtq_17763499bf5a [RUN_DIR ...]

Drops ``paths.*`` from ``overrides.yaml``, stores ``config.yaml``'s locations as placeholders
(``${paths.data}/wtq-html-qa``) and renames the runs in old ``provenance.csv`` files relative to the results root
(values printed as the tables print them). Then ``htmlrag-paper verify --write-tables RUN_DIR`` rewrites the
tables that verify can recompute, and ``htmlrag-paper verify RUN_DIR`` checks the result.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from htmlrag_bench.eval.portable import make_portable


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    for run in ap.parse_args().runs:
        for path in make_portable(run):
            print(f"rewrote {path}")


if __name__ == "__main__":
    main()
