"""The benchmark's terminal table, derived figures (ratios, bandwidth and peak fractions) and PNG plot."""

from __future__ import annotations

from typing import Any, Optional

#: Column order and labels of the variants.
LABELS = {
    "numpy": "numpy",
    "gt_cpu_kfirst": "gt:cpu_kfirst",
    "gt_cpu_ifirst": "gt:cpu_ifirst",
    "dace_cpu": "dace:cpu",
    "orchestrated": "orchestrated",
    "orchestrated_nopasses": "orchestrated, no CPU passes",
    "orchestrated_nosimd": "orchestrated, innermost loops not omp simd",
    "orchestrated_innersplit": "orchestrated, regions split along the innermost index only",
    "orchestrated_unfused": "orchestrated without fusion",
    "orchestrated_fused": "orchestrated with fusion and row blocking",
    "orchestrated_merged": "orchestrated, vertical merging without scratch planes",
    "orchestrated_noscratch": "orchestrated, intermediates plain arrays (not scratch)",
    "orchestrated_debug": "orchestrated + debug checks",
    "orchestrated_ymm": "orchestrated, 256-bit vectors preferred",
    "orchestrated_zmm": "orchestrated, 512-bit vectors preferred",
}

#: One colour per variant, the same in every panel.
COLORS = {
    "numpy": "tab:gray", "gt_cpu_kfirst": "tab:blue", "dace_cpu": "tab:orange", "orchestrated": "tab:red",
    "gt_cpu_ifirst": "tab:cyan", "orchestrated_nosimd": "tab:green", "orchestrated_innersplit": "black", "orchestrated_nopasses": "tab:purple", "orchestrated_fused": "tab:pink", "orchestrated_merged": "tab:olive", "orchestrated_debug": "tab:brown",
    "orchestrated_noscratch": "darkred", "orchestrated_unfused": "gold", "orchestrated_ymm": "teal", "orchestrated_zmm": "magenta",
}


def groups(rows: list[dict]) -> dict[tuple[int, int], dict[tuple[int, int], dict[str, dict]]]:
    """Rows as ``{(ranks, threads): {(n, nz): {variant: row}}}``."""
    out: dict = {}
    for row in rows:
        if "error" in row:
            continue
        out.setdefault((row["ranks"], row["threads"]), {}).setdefault((row["n"], row["nz"]), {})[row["variant"]] = row
    return out


def derive(result: dict) -> list[dict]:
    """One summary line per (ranks, threads, n, nz): medians, ratios to orchestrated, bandwidth."""
    dram_by_threads = {t["threads"]: t["best_gbs"] for t in result["triad"] if t["array_mib"] >= 64}
    peak_by_threads = {p["threads"]: p["best_gflops"] for p in result.get("peak", []) if p.get("vectorized", True)}
    lines = []
    for (ranks, threads), sizes in sorted(groups(result["rows"]).items()):
        for (n, nz), variants in sorted(sizes.items()):
            line: dict[str, Any] = {"ranks": ranks, "threads": threads, "n": n, "nz": nz}
            for variant in LABELS:
                if variant in variants:
                    line[f"{variant}_ms"] = 1e3 * variants[variant]["step"]["median"]
                    line[f"{variant}_cpu_ms"] = 1e3 * variants[variant]["step"].get("cpu_median", float("nan"))
                    line[f"{variant}_spread_ms"] = [
                        1e3 * variants[variant]["step"]["p10"], 1e3 * variants[variant]["step"]["p90"]
                    ]
            orchestrated = variants.get("orchestrated")
            if orchestrated is not None:
                t = orchestrated["step"]["median"]
                for variant in LABELS:
                    if variant != "orchestrated" and variant in variants:
                        line[f"{variant}_over_orchestrated"] = variants[variant]["step"]["median"] / t
                line["raw_call_ms"] = 1e3 * orchestrated["raw_call"]["median"]
                line["overhead_us"] = 1e6 * orchestrated["overhead_s"]
                line["closure_read_us"] = 1e6 * orchestrated.get("closure_read_s", float("nan"))
                line["halo_in_step_ms"] = 1e3 * orchestrated["halo_in_step_s"]
                line["halo_update_ms"] = 1e3 * orchestrated["halo_update"]["median"]
                line["build_s"] = orchestrated.get("build_s")
                line["load_s"] = orchestrated.get("load_s")
                # the triad with as many threads as the job runs (capped at the largest measured)
                dram = dram_by_threads.get(min(ranks * threads, max(dram_by_threads, default=1)))
                line["triad_gbs"] = dram
                traffic = result.get("traffic", {}).get(str(n), {}).get(str(nz))
                if traffic:
                    # every rank moves its own bytes; ranks share the machine's bandwidth
                    for bound in ("per_stencil", "per_stage"):
                        gbs = ranks * traffic[f"{bound}_bytes"] / t / 1e9
                        line[f"{bound}_mb"] = traffic[f"{bound}_bytes"] / 1e6
                        line[f"{bound}_gbs"] = gbs
                        if dram:
                            line[f"{bound}_fraction"] = gbs / dram
                flops = orchestrated.get("flops")
                if flops:  # counted for one rank's subdomain; every rank computes its own
                    line["mflop_step"] = flops["flops"] / 1e6
                    line["gflops"] = ranks * flops["flops"] / t / 1e9
                    peak = peak_by_threads.get(min(ranks * threads, max(peak_by_threads, default=1)))
                    line["peak_gflops"] = peak
                    if peak:
                        line["peak_fraction"] = line["gflops"] / peak
            lines.append(line)
    return lines


def _fmt(value: Optional[float], spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


#: What the table's columns mean (printed under it).
LEGEND = """\
ms per step: median over repeats of the slowest rank. raw call: the orchestrated library called with
already marshalled arguments. X/o: time of X over orchestrated. ovh us: orchestra's per-call cost
outside the library (the call timed with a no-op library); self us: of which reading the closure
arrays through `self`. halo ms: wall time per step inside halo updates (on oversubscribed ranks this
includes waiting for neighbours); upd ms: one isolated halo update of h. MB/step: minimum bytes per
step if every stencil reads and writes each field once; GB/s and %triad: that traffic over the
orchestrated time, against the compiled triad with as many threads as the job (all ranks together).
MB/stage and its %triad: the same for a schedule that fuses everything between two halo updates.
MF/step: million floating-point operations per step and rank, counted in the orchestrated build's SDFG
(one per + - * /, min, max, abs and math call); GF/s and %peak: those over the orchestrated time (all ranks
together), against the vectorized multiply-add peak of code compiled like orchestrated builds, as many
threads as the job (the scalar peak, the rate of loops the compiler leaves scalar, is on the "peak:" line)."""


def table(lines: list[dict]) -> str:
    """The terminal table: ms per step (median over repeats, slowest rank), ratios, bandwidth."""
    variants = [v for v in LABELS if any(f"{v}_ms" in line for line in lines)]
    short = {"numpy": "numpy", "gt_cpu_kfirst": "gt:kfirst", "gt_cpu_ifirst": "gt:ifirst", "orchestrated_nosimd": "orch.nosimd", "orchestrated_innersplit": "orch.inner", "dace_cpu": "dace:cpu", "orchestrated": "orch.",
             "orchestrated_nopasses": "orch.nopass", "orchestrated_fused": "orch.fused", "orchestrated_merged": "orch.merged",
             "orchestrated_debug": "orch.debug", "orchestrated_noscratch": "orch.noscr",
             "orchestrated_unfused": "orch.unfused", "orchestrated_ymm": "orch.ymm", "orchestrated_zmm": "orch.zmm"}
    others = [v for v in variants if v != "orchestrated"]
    header = (
        f"{'ranks':>5} {'thr':>3} {'per rank':>10} | "
        + " ".join(f"{short[v]:>11}" for v in variants)
        + f" {'raw call':>8} | "
        + " ".join(f"{short[v] + '/o':>13}" for v in others)
        + f" | {'ovh us':>6} {'self us':>7} {'halo ms':>7} {'upd ms':>6} | {'MB/step':>7} {'GB/s':>5} {'%triad':>6}"
        + f" | {'MB/stage':>8} {'%triad':>6} | {'MF/step':>7} {'GF/s':>5} {'%peak':>5}"
    )
    out = [header, "-" * len(header)]
    for line in lines:
        domain = f"{line['n']}x{line['n']}x{line['nz']}"
        fraction, stage_fraction = line.get("per_stencil_fraction"), line.get("per_stage_fraction")
        peak_fraction = line.get("peak_fraction")
        out.append(
            f"{line['ranks']:>5} {line['threads']:>3} {domain:>10} | "
            + " ".join(f"{_fmt(line.get(f'{v}_ms')):>11}" for v in variants)
            + f" {_fmt(line.get('raw_call_ms')):>8} | "
            + " ".join(f"{_fmt(line.get(f'{v}_over_orchestrated')):>13}" for v in others)
            + f" | {_fmt(line.get('overhead_us'), '.0f'):>6} {_fmt(line.get('closure_read_us'), '.0f'):>7}"
            f" {_fmt(line.get('halo_in_step_ms'), '.3f'):>7} {_fmt(line.get('halo_update_ms'), '.3f'):>6} | "
            f"{_fmt(line.get('per_stencil_mb'), '.1f'):>7} {_fmt(line.get('per_stencil_gbs'), '.1f'):>5} "
            f"{_fmt(None if fraction is None else 100 * fraction, '.0f'):>6} | "
            f"{_fmt(line.get('per_stage_mb'), '.1f'):>8} "
            f"{_fmt(None if stage_fraction is None else 100 * stage_fraction, '.0f'):>6} | "
            f"{_fmt(line.get('mflop_step'), '.1f'):>7} {_fmt(line.get('gflops'), '.1f'):>5} "
            f"{_fmt(None if peak_fraction is None else 100 * peak_fraction, '.1f'):>5}"
        )
    return "\n".join(out)


def plot(result: dict, path: str) -> None:
    """Time per step against cells per rank, one panel per (ranks, threads), one line per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grouped = sorted(groups(result["rows"]).items())
    fig, axes = plt.subplots(1, len(grouped), figsize=(5 * len(grouped), 4.2), squeeze=False)
    for ax, ((ranks, threads), sizes) in zip(axes[0], grouped):
        for variant, label in LABELS.items():
            points = sorted((n, nz, v[variant]["step"]) for (n, nz), v in sizes.items() if variant in v)
            if not points:
                continue
            x = [n * n * nz for n, nz, _ in points]
            y = [1e3 * s["median"] for *_, s in points]
            low = [1e3 * (s["median"] - s["p10"]) for *_, s in points]
            high = [1e3 * (s["p90"] - s["median"]) for *_, s in points]
            ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=label, color=COLORS[variant])
        ticks = sorted({(n, nz) for n, nz in sizes})
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([n * n * nz for n, nz in ticks], [f"{n}²x{nz}" for n, nz in ticks])
        ax.minorticks_off()
        ax.set_xlabel("cells per rank")
        ax.set_ylabel("ms per step (median, p10-p90)")
        ax.set_title(f"{ranks} rank{'s' if ranks > 1 else ''}, OMP_NUM_THREADS={threads}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Shallow-water dycore, Williamson case 2: time per step")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
