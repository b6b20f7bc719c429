"""Seeds per minute of one simulation sweep: multiprocessing vs Spark (local[N] or a master).

    python bench/spark_sweep.py --scenario initial-election --seeds 0:200 --workers 2 \
        [--master local[2] | --master spark://127.0.0.1:7077 | --remote sc://127.0.0.1:15002]

Spark start-up (4-10 s) is reported apart from the sweep itself, and both sweeps must give
the same (violation, events, elections, simulated ms) per seed. Check ``uptime`` first: on a
shared machine other work on the same cores skews every figure.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from pykraft.sim.runner import sweep
from pykraft.sim.scenarios import SCENARIOS
from pykraft.spark.session import spark_session
from pykraft.spark.sweep import run_result, spark_sweep


def facts(result: object) -> tuple[object, ...]:
    return tuple(getattr(result, name) for name in
                 ("scenario", "seed", "violation", "events", "elections", "simulated_ms"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="initial-election", choices=list(SCENARIOS))
    parser.add_argument("--seeds", default="0:200", help="A:B, end exclusive")
    parser.add_argument("--workers", type=int, default=2, help="multiprocessing workers")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--remote", default=None)
    parser.add_argument("--seeds-per-task", type=int, default=25)
    args = parser.parse_args()
    start, end = (int(x) for x in args.seeds.split(":"))
    seeds = range(start, end)
    tasks = [(args.scenario, seed) for seed in seeds]

    began = time.perf_counter()
    local = sorted(sweep(tasks, args.workers), key=lambda r: r.seed)
    local_s = time.perf_counter() - began

    began = time.perf_counter()
    spark = spark_session(args.master, args.remote, app_name="bench-spark-sweep")
    startup_s = time.perf_counter() - began
    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter()
        rows = spark_sweep(spark, [args.scenario], seeds, f"{out}/runs.parquet",
                           seeds_per_task=args.seeds_per_task)
        spark_s = time.perf_counter() - began
    spark.stop()
    same = [facts(run_result(r)) for r in rows] == [facts(r) for r in local]
    print(json.dumps({
        "scenario": args.scenario, "seeds": len(seeds), "same_results": same,
        "multiprocessing": {"workers": args.workers, "wall_s": round(local_s, 2),
                            "seeds_per_min": round(60 * len(seeds) / local_s)},
        "spark": {"where": args.remote or args.master, "startup_s": round(startup_s, 2),
                  "sweep_wall_s": round(spark_s, 2),
                  "seeds_per_min": round(60 * len(seeds) / spark_s)},
    }, indent=2))


if __name__ == "__main__":
    main()
