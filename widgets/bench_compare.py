"""The differences between two runs, level by level (from console.bench.results.compare_runs)."""
from __future__ import annotations

from rich.text import Text

from console.safe_text import safe_text

from .safe_table import SafeDataTable

from console.fmt import UNKNOWN, number

# metric name -> (column label, higher is better)
SHOWN = {"output_throughput": ("out tok/s", True), "ttft_ms.median": ("TTFT p50", False),
         "ttft_ms.p99": ("TTFT p99", False), "tpot_ms.median": ("TPOT p50", False),
         "tpot_ms.p99": ("TPOT p99", False), "e2el_ms.median": ("E2EL p50", False)}


def change_cell(metric: dict, higher_is_better: bool) -> Text:
    base, other, change = metric.get("base"), metric.get("other"), metric.get("change_pct")
    if base is None and other is None:
        return Text(UNKNOWN, style="dim", justify="right")
    text = f"{number(base)} → {number(other)}"
    if change is None:
        return Text(text, justify="right")
    if metric.get("noise") == "within noise":  # no colour for a change the runs' own spread explains
        return Text(f"{text} ({change:+.1f}% ≈)", style="dim", justify="right")
    better = change > 0 if higher_is_better else change < 0
    style = "green" if better and abs(change) >= 1 else ("red" if abs(change) >= 1 else "")
    return Text(f"{text} ({change:+.1f}%)", style=style, justify="right")


class BenchCompareTable(SafeDataTable):
    DEFAULT_CSS = "BenchCompareTable { height: auto; max-height: 12; width: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("conc", key="conc")
        self.add_column("status", key="status")
        for key, (label, _) in SHOWN.items():
            self.add_column(label, key=key)

    def show(self, rows: list[dict]) -> None:
        self.clear()
        for row in rows:
            cells = [Text(str(row["concurrency"]), justify="right"),
                     safe_text(f"{row['status'][0]} → {row['status'][1]}")]
            cells += [change_cell(row["metrics"].get(key, {}), better) for key, (_, better) in SHOWN.items()]
            self.add_row(*cells, key=str(row["concurrency"]))
