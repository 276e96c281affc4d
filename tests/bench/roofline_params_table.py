"""The parameter table: every real config the roofline is tested on, against its maker's published figures.

Prints one Markdown row per config (total and active parameters, the
published figures and the difference, the convention of the active figure)
and one row per refused config with its message. Reads the lists the tests
assert, so the table and the tests cannot drift apart.

    .venv/bin/python tests/bench/roofline_params_table.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console import roofline  # noqa: E402
from tests.test_roofline_params import PUBLISHED as SHARED  # noqa: E402
from tests.test_roofline_real_configs import FIXTURES, PUBLISHED, REFUSED  # noqa: E402

SHARED_DIR = ROOT / "tests" / "fixtures" / "shared" / "model-configs"


def _active(facts, convention: str) -> float:
    return {"head": facts.active_params, "with_embedding": facts.active_params_with_embedding,
            "no_tables": facts.active_params_without_embeddings, "dense": facts.total_params}[convention]


def _diff(value: float, published: float | None) -> str:
    return f"{100 * (value / published - 1):+.1f}%" if published else "N/A"


def main() -> int:
    rows = [(name, SHARED_DIR / f"{name}.json", total, active, conv, "shared") for name, total, active, conv in SHARED]
    rows += [(name, FIXTURES / f"{name}.json", float(total) * 1e9, float(active) * 1e9 if active else None, conv, "fixture")
             for name, total, active, conv in PUBLISHED]
    print("| config | from | total (B) | published | diff | active (B) | published | diff | convention | layers |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, path, total, active, conv, origin in rows:
        f = roofline.load_model(path)
        kinds = f.attention.kinds
        mix = ", ".join(f"{kinds.count(k)} {k}" for k in ("attention", "linear", "mamba", "none") if kinds.count(k))
        windows = sum(1 for w in f.attention.windows if w)
        mix += f" ({windows} windowed)" if windows else ""
        act = _active(f, conv)
        print(f"| {name} | {origin} | {f.total_params / 1e9:.2f} | {total / 1e9:g} | {_diff(f.total_params, total)} | "
              f"{act / 1e9:.2f} | {active / 1e9 if active else 'N/A'} | {_diff(act, active)} | {conv} | {mix} |")
    print()
    print("| refused config | message |")
    print("|---|---|")
    for name, _needles in REFUSED:
        try:
            roofline.load_model(FIXTURES / f"{name}.json")
            message = "NOT REFUSED"
        except roofline.RooflineError as exc:
            message = str(exc).replace(str(FIXTURES) + "/", "")
        print(f"| {name} | {message} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
