"""HypoFuzz (`harness nightly`) against the plain campaign (`harness fuzz`) at equal budget, run
side by side so that both see the same load: examples checked, the branches reached in torch's
Function modules (harness.torch_coverage, coverage.py with branch=True restricted to those files)
and, with --fault, whether each found a seeded fault (harness/selfeval).

    python scripts/compare_nightly.py --paths eager,compiled,dynamo --budget 5m --out compare/
    python scripts/compare_nightly.py --paths eager,compiled,dynamo --budget 3m --out compare-fault/ \\
        --fault aot_backward_miscompiled [--keep-fuzzing]

Branches: every spec each run checked is logged (scripts/spec_log/sitecustomize.py) and replayed
afterwards under coverage.py, one run after the other (HypoFuzz's own tracer leaves coverage.py no
room during its run); the replay checks each distinct spec once on the same paths.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC_LOG_SITE = ROOT / "scripts" / "spec_log"
ENGINES = {"campaign": "fuzz", "hypofuzz": "nightly"}


def run_side_by_side(args) -> dict[str, dict]:
    procs = {}
    for name, command in ENGINES.items():
        out = args.out / name
        env = dict(os.environ)
        site = [str(ROOT)]
        if args.fault:
            from harness.selfeval import subprocess_env

            env = subprocess_env(args.fault, env)  # its sitecustomize installs the fault (no spec log then)
            site = [env["PYTHONPATH"], str(ROOT)]
        else:
            env["HARNESS_SPEC_LOG"] = str(args.out / f"{name}-specs.jsonl")
            site = [str(SPEC_LOG_SITE), str(ROOT)]
        env["PYTHONPATH"] = os.pathsep.join(site)
        cmd = [sys.executable, "-m", "harness", command, "--paths", args.paths, "--budget", args.budget,
               "--out", str(out), "--workers", "1", "--json", str(args.out / f"{name}.json")]
        if command == "nightly" and args.keep_fuzzing:
            cmd.append("--keep-fuzzing")
        print("$", " ".join(cmd), flush=True)
        procs[name] = (subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=open(args.out / f"{name}.out", "w"),
                                        stderr=subprocess.STDOUT), time.perf_counter())
    results = {}
    for name, (proc, began) in procs.items():
        code = proc.wait()
        summary = json.loads((args.out / f"{name}.json").read_text())
        results[name] = {"exit": code, "wall_s": round(time.perf_counter() - began, 1), "examples": summary["examples"],
                         "checked": {p: c["checked"] for p, c in summary["paths"].items()},
                         "failures": [f.get("cause", f.get("signature")) for f in summary["failures"]]}
    return results


def replay_coverage(spec_file: Path, paths: str) -> dict:
    """Replay the distinct specs of one run under coverage.py; its branch counts per module."""
    code = f"""
import json, sys, coverage
from harness.torch_coverage import function_module_files
files = sorted(function_module_files())
cov = coverage.Coverage(branch=True, include=files, data_file=None)
cov.start()
from harness import paths as registry
from harness.check import check
from harness.spec import GraphSpec
chosen = [registry.get(n) for n in {paths!r}.split(",")]
seen = set()
for line in open({str(spec_file)!r}):
    if line in seen:
        continue
    seen.add(line)
    try:
        check(GraphSpec.from_json(line), chosen, "cpu")
    except Exception:
        pass
cov.stop()
cov.json_report(outfile={str(spec_file.with_suffix('.coverage.json'))!r})
print(len(seen))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    report = json.loads(spec_file.with_suffix(".coverage.json").read_text())
    per_file = {name.split("site-packages/")[-1]: (f["summary"]["covered_branches"], f["summary"]["num_branches"])
                for name, f in report["files"].items()}
    arcs = {name: {tuple(a) for a in f.get("executed_branches", [])} for name, f in report["files"].items()}
    return {"distinct_specs": int(done.stdout.split()[-1]), "per_file": per_file,
            "covered_branches": sum(c for c, _ in per_file.values()),
            "num_branches": sum(n for _, n in per_file.values()), "arcs": arcs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="eager,compiled,dynamo")
    parser.add_argument("--budget", default="5m")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fault", help="a seeded fault of harness/selfeval, installed in both runs")
    parser.add_argument("--no-coverage", action="store_true", help="skip the coverage replay")
    parser.add_argument("--keep-fuzzing", action="store_true",
                        help="nightly --keep-fuzzing: HypoFuzz is not stopped by the first unknown failure")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    results = run_side_by_side(args)
    for name, r in results.items():
        print(f"{name}: exit {r['exit']}, {r['wall_s']} s, {r['examples']} examples, checked per path {r['checked']}, "
              f"failures {r['failures']}")
    if args.fault or args.no_coverage:
        (args.out / "comparison.json").write_text(json.dumps(results, indent=2) + "\n")
        return
    arcs = {}
    for name in ENGINES:
        began = time.perf_counter()
        cov = replay_coverage(args.out / f"{name}-specs.jsonl", args.paths)
        arcs[name] = cov.pop("arcs")
        results[name]["coverage"] = cov
        print(f"{name}: {cov['distinct_specs']} distinct specs replayed in {time.perf_counter() - began:.0f} s: "
              f"{cov['covered_branches']} of {cov['num_branches']} branches in the Function modules")
        for module, (covered, total) in sorted(cov["per_file"].items()):
            print(f"    {module}: {covered}/{total}")
    only = {a: sum(len(arcs[a][f] - arcs[b].get(f, set())) for f in arcs[a]) for a, b in (("campaign", "hypofuzz"),
                                                                                         ("hypofuzz", "campaign"))}
    print(f"branches reached by one run only: campaign {only['campaign']}, hypofuzz {only['hypofuzz']}")
    results["only"] = only
    (args.out / "comparison.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
