"""`bench.proxy_overhead`'s report: one row per metric, direct beside gateway, the ratio and its PASS/MISS target."""

from dataclasses import dataclass, field

from bench._harness import table


@dataclass
@dataclass
class Row:
    section: str
    metric: str
    direct: str
    gateway: str
    ratio: float | None = None
    target: str = ""
    ok: bool | None = None  # None: no target, or not measurable


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list[Row])
    notes: list[str] = field(default_factory=list[str])

    def compare(
        self,
        section: str,
        metric: str,
        direct: float | None,
        gateway: float | None,
        unit: str,
        *,
        at_most: float | None = None,
        at_least: float | None = None,
        fmt: str = "{:.2f}",
    ) -> None:
        """Add a row with ratio gateway/direct, checked against `at_most` or `at_least` when given."""

        def show(v: float | None) -> str:
            return "ERROR" if v is None else f"{fmt.format(v)} {unit}".strip()

        ratio = None if direct is None or gateway is None or direct == 0 else gateway / direct
        target, ok = "", None
        if at_most is not None:
            target = f"≤ {at_most:g}×"
            ok = ratio is not None and ratio <= at_most
        elif at_least is not None:
            target = f"≥ {at_least:g}×"
            ok = ratio is not None and ratio >= at_least
        self.rows.append(Row(section, metric, show(direct), show(gateway), ratio, target, ok))

    def print(self) -> None:
        header = ("section", "metric", "direct", "gateway", "gw/direct", "target", "")
        cells = [header]
        for r in self.rows:
            verdict = "" if r.ok is None else ("PASS" if r.ok else "MISS")
            ratio = "—" if r.ratio is None else f"{r.ratio:.2f}×"
            cells.append((r.section, r.metric, r.direct, r.gateway, ratio, r.target, verdict))
        table(cells[0], cells[1:], {2, 3, 4})
        if self.notes:
            print()
            for note in self.notes:
                print(f"* {note}")
