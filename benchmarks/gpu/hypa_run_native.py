"""Run each program built by hypa_run_native.sh on the GPU three times: exit status, stdout and
stderr of the last run, wall seconds of each, into $OUT/native.json."""
import glob, json, os, subprocess, sys, time
out = os.environ["OUT"]; B = "/tmp/b"; res = {}
for exe in sorted(glob.glob(B + "/*")):
    n = os.path.basename(exe); runs = [[]]
    if n == "b_matmul": runs = [["256"], ["1024"]]
    if n == "b_bfs": runs = [[], ["200000"]]
    for args in runs:
        walls = []
        for _ in range(3):
            t = time.perf_counter(); p = subprocess.run([exe, *args], capture_output=True, text=True); walls.append(time.perf_counter() - t)
        res[" ".join([n, *args])] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr[-2000:], "wall_s": sorted(walls)}
json.dump(res, open(out + "/native.json", "w"), indent=1)
print(len(res), "programs")
