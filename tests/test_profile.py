import json
import types

from harness.cli import main
from harness.profile import StageTimer

STAGES = ["generation", "build", "math oracle", "error bounds", "path eager", "path owned", "path borrowed",
          "lifetime tracking", "compare", "lifetimes", "workarounds", "twins", "gradcheck", "other"]


def test_profile_writes_every_stage(tmp_path, capsys):
    out = tmp_path / "profile.json"
    assert main(["profile", "--examples", "20", "--json", str(out)]) == 0
    profile = json.loads(out.read_text())
    assert profile["examples"] == 20
    assert list(profile["stages"]) == STAGES
    assert all(ms >= 0 for ms in profile["stages"].values())
    # every stage of check() ran on each example (the error bounds only where a comparison
    # found two sides that are not bit-identical, a workaround variant only past a known issue: in few examples)
    assert all(profile["stages"][s] > 0 for s in STAGES if s not in ("other", "error bounds", "workarounds"))
    assert profile["lifetimes_in_paths_ms"] == profile["stages"]["lifetime tracking"]
    assert abs(sum(profile["stages"].values()) - profile["ms_per_example"]) < 0.01
    assert profile["examples_per_second"] > 0 and profile["cpu_examples_per_second"] > 0
    assert set(profile["raw_ms"]) == {"eager", "owned", "borrowed"} and profile["check_over_raw"] > 1
    # the twin-form oracle is one stage: the same examples without it cost the rest
    assert profile["without_twins_ms_per_example"] < profile["ms_per_example"]
    assert profile["with_over_without_twins"] > 1
    assert "examples/s" in capsys.readouterr().out


def test_stage_timer_counts_a_nested_stage_once(monkeypatch):
    """Exclusive seconds per stage, on a clock the test moves (no sleeping, no wall-clock margins)."""
    from harness import profile

    now = [100.0]
    monkeypatch.setattr(profile, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    timer = StageTimer()
    with timer.stage("outer"):
        now[0] += 2.0
        with timer.stage("inner"):
            now[0] += 3.0
            with timer.stage("innermost"):
                now[0] += 0.5
        now[0] += 1.0
    with timer.stage("inner"):  # a stage entered again adds up
        now[0] += 4.0
    assert dict(timer.seconds) == {"outer": 3.0, "inner": 7.0, "innermost": 0.5}
    assert sum(timer.seconds.values()) == now[0] - 100.0  # every second counted once


def test_a_whole_stage_takes_in_the_stages_entered_inside_it(monkeypatch):
    """harness.stages.whole_stage (a workaround variant's check): its nested stages are its own time."""
    from harness import profile, stages

    now = [0.0]
    monkeypatch.setattr(profile, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    timer = StageTimer()
    token = stages.STAGE_TIMER.set(timer)
    try:
        with stages.stage("compare"):
            now[0] += 1.0
            with stages.whole_stage("workarounds"):
                now[0] += 2.0
                with stages.stage("path eager"):
                    now[0] += 3.0
            with stages.stage("path eager"):  # outside it, a stage counts for itself again
                now[0] += 0.5
    finally:
        stages.STAGE_TIMER.reset(token)
    assert dict(timer.seconds) == {"compare": 1.0, "workarounds": 5.0, "path eager": 0.5}


def test_the_side_by_side_script_alternates_two_checkouts_and_prints_the_ratio():
    """scripts/profile_side_by_side.sh as docs/profile.md shows it (this checkout against itself)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["bash", str(root / "scripts/profile_side_by_side.sh"), str(root), str(root), "eager", "2", "1"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    assert "round 1 base" in done.stdout and "round 1 cand" in done.stdout, done.stdout
    assert "wall ms/example, baseline: [" in done.stdout and "median ratio baseline/candidate: " in done.stdout


def test_the_readme_job_script_alternates_two_option_sets_and_prints_their_counts():
    """scripts/readme_job_side_by_side.sh as docs/profile.md shows it: one checkout, --workers 1
    against the default, with a short budget and the eager path only (the README job's form)."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["bash", str(root / "scripts/readme_job_side_by_side.sh"), str(root), str(root), "1",
                           "--workers 1 --paths eager --no-seeds", "--paths eager --no-seeds"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHON": sys.executable, "BUDGET": "20s"})
    assert done.returncode == 0, done.stderr
    for side in ("a", "b"):
        line = next(x for x in done.stdout.splitlines() if x.startswith(f"round 1 {side} "))
        assert "exit 0" in line, done.stdout
        assert int(re.search(r"eager (\d+),", line).group(1)) > 0, done.stdout  # it did check examples
