"""torch.compile(backend='inductor') fails on elementwise arithmetic on an empty complex tensor (view as complex).
Usage: python repro.py [inductor|aot_eager|eager]"""
import sys
import torch

backend = (sys.argv[1:] or ["inductor"])[0]

def f(a):
    return a + -0.5 * (a * a)

def run(f):
    try:
        return f"returned a tensor of shape {tuple(f(torch.zeros(2, 0, dtype=torch.complex64)).shape)}"
    except Exception as e:  # what it raises is the observation
        lines = [line.strip() for line in str(e).splitlines() if "must be" in line] or str(e).splitlines()
        return f"{type(e).__name__}: {lines[0][:200]}"

expected, observed = run(f), run(torch.compile(f, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "must be" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
