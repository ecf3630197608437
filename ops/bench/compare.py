"""One benchmark run alternately in another checkout and in this one, the same figure of
each run side by side, and their medians: the same-run comparison a change is judged by.

    git worktree add ../base 9d934d2 && (cd ../base && python3 -m venv .venv && .venv/bin/pip install -q -e .)
    python -m ops.bench.compare ../base --pairs 10 --figure ratio -- projection_bench --repeat 3
    python -m ops.bench.compare ../base --pairs 3 --figure replay_1_worker_vs_raw -- replay_bench

The benchmark must print JSON with `--json` (projection_bench, replay_bench, memory_bench);
`--figure` names the field to compare (dotted for a nested one). Runs alternate, base
first, so that a machine growing busier slows both sides alike. The other checkout runs
with its own `.venv/bin/python`. Exit 0 when this checkout's median is at least the other's
(or at most, with `--lower-is-better`), 1 when it is not, 2 when a run fails.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2]

Runner = Callable[[Path, Path, list[str]], str]


def figure_of(report: dict[str, Any], dotted: str) -> float:
    """The number at `dotted` ("a.b.c") in a benchmark's JSON report; a number indexes a list
    ("steps.ingest.ratio.0": memory_bench's ratio at its first larger size)."""
    value: Any = report
    for name in dotted.split("."):
        if isinstance(value, list) and name.isdigit() and int(name) < len(value):
            value = value[int(name)]
            continue
        if not isinstance(value, dict) or name not in value:
            raise KeyError(f"the report has no field {dotted!r} (at {name!r})")
        value = value[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{dotted!r} is not a number: {value!r}")
    return float(value)


def run_once(checkout: Path, python: Path, argv: list[str]) -> str:
    """The benchmark's standard output, run from `checkout` with `python`."""
    done = subprocess.run([str(python), "-m", *argv], cwd=checkout, capture_output=True, text=True, check=False)
    # Exit 1 is a benchmark's "goal not met": its report is still the figure compared.
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"{checkout}: {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def compare(base: Path, argv: list[str], pairs: int, figure: str,
            runner: Runner = run_once, also: dict[str, dict[str, list[float]]] | None = None) -> dict[str, list[float]]:
    """`pairs` alternating runs (base, then this checkout): each side's figures in run order.
    `also` (figure -> {}): more figures of the same runs, filled in alike."""
    sides = {"base": (base, base / ".venv" / "bin" / "python"), "this": (HERE, Path(sys.executable))}
    found: dict[str, list[float]] = {"base": [], "this": []}
    for _ in range(pairs):
        for side, (checkout, python) in sides.items():
            report = json.loads(runner(checkout, python, argv))
            found[side].append(figure_of(report, figure))
            for name, more in (also or {}).items():
                more.setdefault(side, []).append(figure_of(report, name))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path, help="the other checkout (a git worktree of the commit to compare with)")
    parser.add_argument("--pairs", type=int, default=5, help="alternating runs of each side (default 5)")
    parser.add_argument("--figure", default="ratio", help="the JSON field compared, dotted if nested (default ratio)")
    parser.add_argument("--lower-is-better", action="store_true", help="for times and memory")
    parser.add_argument("--also", action="append", default=[], metavar="FIELD",
                        help="another figure of the same runs to show (repeatable); the verdict is --figure's")
    parser.epilog = "After --: MODULE [ARGS], a module of ops/bench and its options."
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    bench = argv[split + 1:]
    if not bench:
        parser.error("name the benchmark after --, e.g. -- projection_bench --repeat 3")
    if not (args.base / ".venv" / "bin" / "python").exists():
        print(f"compare: {args.base} has no .venv/bin/python (make one there: python3 -m venv .venv "
              f"&& .venv/bin/pip install -q -e .)", file=sys.stderr)
        return 2
    module = bench[0] if bench[0].startswith("ops.bench.") else f"ops.bench.{bench[0]}"
    argv_run = [module, *bench[1:], *([] if "--json" in bench else ["--json"])]
    also: dict[str, dict[str, list[float]]] = {name: {} for name in args.also}
    try:
        found = compare(args.base, argv_run, args.pairs, args.figure, also=also)
    except (RuntimeError, KeyError, ValueError, json.JSONDecodeError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    medians = {side: statistics.median(values) for side, values in found.items()}
    for side, values in found.items():
        print(f"{side:>4}: {', '.join(f'{v:g}' for v in values)}   median {medians[side]:g}")
    for name, more in also.items():
        print(f"{name}: this checkout {statistics.median(more['this']):g} against {statistics.median(more['base']):g} "
              f"(this {', '.join(f'{v:g}' for v in more['this'])}; base {', '.join(f'{v:g}' for v in more['base'])})")
    better = medians["this"] <= medians["base"] if args.lower_is_better else medians["this"] >= medians["base"]
    print(f"{args.figure}: this checkout {medians['this']:g} against {medians['base']:g} "
          f"({'same or better' if better else 'worse'}, medians of {args.pairs} pairs)")
    return 0 if better else 1


if __name__ == "__main__":
    sys.exit(main())
