"""The verifier stage of real TB 2.1 tasks: tbflow's supplied runner against test.sh run verbatim.

    .venv/bin/python bench/tb21_verifier.py DATASET_DIR WORK_DIR [--proxy 172.17.0.1:3128]

DATASET_DIR holds TB 2.1 task dirs as published (task.toml, instruction.md, environment/,
tests/, solution/); WORK_DIR gets the adapted copies, the jobs and ``results.json``. Start
``bench/verifier_standins.py WORK_DIR/standins`` first: it serves astral.sh and github.com and is
the proxy every bench container reaches the network through, whose log counts the bytes.

Why adapted copies: this machine has no container registry and reaches only PyPI and the Debian
mirror. Each Dockerfile's FROM becomes ``tbflow-bench/base:trixie`` (Debian trixie, debootstrapped,
with python3 = 3.13 like the python:3.13-slim images; see RESULTS.md for how it is built) followed
by the stand-ins' CA, the machine's egress CA and the proxy variables; nothing else of test.sh or
the tests changes. ``pip install`` in a Dockerfile becomes Debian's pip with
``--break-system-packages`` (trixie marks its Python externally managed).

Per task, four ``tbflow run --build`` jobs at concurrency 1: oracle and nop harness, each with the
supplied runner (default) and with ``--verbatim-test-sh``; then the plain Docker CLI doing the
verbatim verifier's work on the same image (``docker run``, solve.sh, ``docker exec bash
/tests/test.sh``). Reported: verifier-stage wall time from each trial record, bytes the proxy
carried to the container while its verifier ran, and the rewards.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "tbflow-bench/base:trixie"
CA_DIR = "tbflow-bench-ca"
HOST_CAS = (Path("/usr/local/share/ca-certificates/sandboxing-egress-ca.crt"),)
MODES = (("oracle", False), ("oracle", True), ("nop", False), ("nop", True))


def bench_block(proxy: str) -> str:
    """What every adapted Dockerfile gets right after FROM (RESULTS.md lists it as a deviation)."""
    url = f"http://{proxy}"
    return (f"COPY {CA_DIR}/ /usr/local/share/ca-certificates/\n"
            "RUN update-ca-certificates\n"
            f"ENV http_proxy={url} https_proxy={url} HTTP_PROXY={url} HTTPS_PROXY={url} "
            "no_proxy=localhost,127.0.0.1 NO_PROXY=localhost,127.0.0.1 "
            "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt\n")


#: what makes the trixie base look like the image the task names, as far as the tests can tell:
#: python:3.13-slim has ``python`` (tests run ``python script.py``); ubuntu:24.04 has no python3 at
#: all, so ``python3`` goes (python3.13 stays: uvx -p 3.13 uses it where the real run downloads
#: CPython from GitHub, which this machine cannot reach)
LOOK_ALIKE = {"python:3.13": "RUN ln -s /usr/bin/python3 /usr/local/bin/python\n",
              "ubuntu:24.04": "RUN rm -f /usr/bin/python3 /usr/bin/python\n"}


def adapt_dockerfile(text: str, proxy: str) -> str:
    """FROM -> the local trixie base + bench block; ``pip install`` -> Debian's pip."""
    origin = re.search(r"^FROM\s+(\S+)", text, flags=re.M)
    extra = next((v for k, v in LOOK_ALIKE.items() if origin and origin.group(1).startswith(k)), "")
    text = re.sub(r"^FROM\s+\S+.*$", f"FROM {BASE}\n{bench_block(proxy)}{extra}".rstrip("\n"), text, count=1,
                  flags=re.M)
    pip = ("RUN apt-get update && apt-get install -y --no-install-recommends python3-pip"
           " && pip install --break-system-packages")
    return re.sub(r"^RUN pip install (.*)$", pip + r" \1", text, flags=re.M)


def adapt(dataset: Path, out: Path, proxy: str, standins: Path) -> list[str]:
    if out.exists():
        shutil.rmtree(out)
    names = []
    for task in sorted(p for p in dataset.iterdir() if (p / "task.toml").exists()):
        dst = out / task.name
        shutil.copytree(task, dst)
        dockerfile = dst / "environment" / "Dockerfile"
        dockerfile.write_text(adapt_dockerfile(dockerfile.read_text(), proxy))
        cas = dst / "environment" / CA_DIR
        cas.mkdir()
        shutil.copy(standins / "ca.crt", cas / "tbflow-bench-standin-ca.crt")
        for ca in HOST_CAS:
            shutil.copy(ca, cas / ca.name)
        names.append(task.name)
    return names


def run_job(adapted: Path, jobs: Path, harness: str, verbatim: bool, name: str = "") -> Path:
    name = name or f"{harness}-{'verbatim' if verbatim else 'supplied'}"
    argv = [str(ROOT / "tbflow"), "run", str(adapted), "--build", "--harness", harness, "--concurrency", "1",
            "--jobs-dir", str(jobs), "--job-name", name, "--force-new", "--order", "name"]
    if verbatim:
        argv.append("--verbatim-test-sh")
    subprocess.run(argv, check=False)
    return jobs / name


def proxy_bytes(log: Path, start: float, end: float, client: str | None = None) -> int:
    """Bytes the proxy sent to containers on connections opened inside [start, end]."""
    total = 0
    if not log.exists():
        return 0
    for line in log.read_text().splitlines():
        c = json.loads(line)
        if start <= c["t0"] <= end and (client is None or c["client"] == client):
            total += c["down"]
    return total


def trial_rows(job: Path, proxy_log: Path) -> list[dict]:
    """One row per trial record. The record has the verifier's duration, not its start; tbflow
    copies ``verifier/`` out the moment test.sh exits, so that copy's mtime is the verifier's end
    (``ended_at`` comes ~2 s later). Bytes count on connections opened in [end - duration - 1 s,
    end]: after the agent's own downloads (the oracle's apt in nginx-request-logging)."""
    rows = []
    for path in sorted(job.glob("trials/*/trial.json")):
        rec = json.loads(path.read_text())
        ver = rec.get("verifier") or {}
        copied = path.parent / "verifier" / "test-stdout.txt"
        end = copied.stat().st_mtime if copied.exists() else _epoch(rec["ended_at"])
        dur = (ver.get("duration_sec") or 0.0) + 1.0
        rows.append({"task": rec["spec"]["task_name"], "harness": rec["spec"]["harness"],
                     "validity": rec["validity"]["status"], "reward": ver.get("reward"),
                     "verifier_sec": ver.get("duration_sec") or 0.0, "runner": (ver.get("runner") or {}).get("source"),
                     "why": (ver.get("runner") or {}).get("why"), "digest": (ver.get("runner") or {}).get("digest"),
                     "image": (rec.get("image") or {}).get("tag"),
                     "bytes": proxy_bytes(proxy_log, end - dur, end)})
    return rows


def _epoch(stamp: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def docker(*argv: str, check: bool = True) -> str:
    return subprocess.run(["docker", *argv], check=check, capture_output=True, text=True).stdout.strip()


def docker_floor(image: str, task: Path, solve: bool, proxy_log: Path) -> dict:
    """The plain Docker CLI doing the verbatim verifier's work on the same image, as a user would."""
    cid = docker("run", "-d", "--init", "--label", "tbflow-bench=tb21", image, "sleep", "infinity")
    try:
        if solve:
            docker("cp", str(task / "solution"), f"{cid}:/solution")
            docker("exec", cid, "bash", "/solution/solve.sh")
        docker("cp", str(task / "tests"), f"{cid}:/tests")
        docker("exec", cid, "mkdir", "-p", "/logs/verifier")
        t0 = time.time()
        subprocess.run(["docker", "exec", cid, "bash", "/tests/test.sh"], capture_output=True, check=False)
        t1 = time.time()
        reward = docker("exec", cid, "cat", "/logs/verifier/reward.txt", check=False)
    finally:
        docker("rm", "-f", cid, check=False)
    return {"verifier_sec": t1 - t0, "reward": float(reward) if reward else None,
            "bytes": proxy_bytes(proxy_log, t0, t1)}


def runner_dir(digest: str) -> Path | None:
    from tasks_lib.container.supplied_runner.manifest import MANIFEST, digest_of
    from tasks_lib.container.supplied_runner.prepare import runner_cache
    for manifest in runner_cache().glob(f"builds/*/{MANIFEST}"):
        if digest_of(manifest.read_text()) == digest:
            return manifest.parent
    return None


def mount_cost(image: str, runner: Path, n: int = 5) -> dict:
    """``docker run --rm IMAGE true`` with and without the runner's read-only bind mount, median s."""
    def once(extra: list[str]) -> float:
        t = time.perf_counter()
        docker("run", "--rm", "--network", "none", *extra, image, "true")
        return time.perf_counter() - t
    mount = ["-v", f"{runner}:/opt/tbflow/runner:ro"]
    without = sorted(once([]) for _ in range(n))[n // 2]
    with_mount = sorted(once(mount) for _ in range(n))[n // 2]
    return {"without_sec": without, "with_sec": with_mount}


def _row(rows: list[dict], task: str) -> dict:
    return next((r for r in rows if r["task"] == task), {})


def table(out: dict) -> str:
    """RESULTS.md's per-task table: verifier seconds, MB through the proxy, reward; oracle | nop."""
    head = ("| task | supplied: s, MB, reward | verbatim: s, MB, reward | docker CLI verbatim: s, MB, reward "
            "| verbatim / CLI | supplied / CLI | nop supplied, verbatim, CLI |\n|---|---|---|---|---|---|---|\n")
    lines, tot = [], {"s": 0.0, "v": 0.0, "d": 0.0, "sb": 0, "vb": 0, "db": 0}
    for task in out["tasks"]:
        s, v = _row(out["jobs"]["oracle-supplied"], task), _row(out["jobs"]["oracle-verbatim"], task)
        ns, nv = _row(out["jobs"]["nop-supplied"], task), _row(out["jobs"]["nop-verbatim"], task)
        d, nd = out["docker"].get(task, {}).get("oracle", {}), out["docker"].get(task, {}).get("nop", {})
        if not (s and v and d):
            continue
        for key, src in (("s", s), ("v", v), ("d", d)):
            tot[key] += src["verifier_sec"]
            tot[key + "b"] += src["bytes"]
        lines.append(f"| {task} | {_cell(s)} | {_cell(v)} | {_cell(d)} | {v['verifier_sec'] / d['verifier_sec']:.2f}× "
                     f"| {s['verifier_sec'] / d['verifier_sec']:.2f}× "
                     f"| {ns.get('reward')}, {nv.get('reward')}, {nd.get('reward')} |")
    total = (f"| **total** | **{tot['s']:.1f} s, {tot['sb'] / 1e6:.1f} MB** "
             f"| **{tot['v']:.1f} s, {tot['vb'] / 1e6:.1f} MB** "
             f"| **{tot['d']:.1f} s, {tot['db'] / 1e6:.1f} MB** | **{tot['v'] / tot['d']:.2f}×** "
             f"| **{tot['s'] / tot['d']:.2f}×** | |")
    return head + "\n".join(lines) + "\n" + total + "\n"


def _cell(r: dict) -> str:
    return f"{r['verifier_sec']:.2f}, {r['bytes'] / 1e6:.2f}, {r['reward']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--proxy", default="172.17.0.1:3128")
    ap.add_argument("--table", action="store_true", help="print the table of WORK_DIR/results.json and stop")
    args = ap.parse_args()
    work = args.work.resolve()
    if args.table:
        print(table(json.loads((work / "results.json").read_text())))
        return
    standins, proxy_log = work / "standins", work / "standins" / "proxy.jsonl"
    adapted = work / "adapted"
    names = adapt(args.dataset.resolve(), adapted, args.proxy, standins)
    # every image first, in a job of its own: the build lane's downloads must not run next to a
    # measured verifier (they go through the same proxy)
    run_job(adapted, work / "jobs", "nop", False, name="images")
    jobs = {f"{h}-{'verbatim' if v else 'supplied'}": run_job(adapted, work / "jobs", h, v) for h, v in MODES}
    out: dict = {"tasks": names, "jobs": {k: trial_rows(j, proxy_log) for k, j in jobs.items()}, "docker": {}}
    images = {r["task"]: r["image"] for r in out["jobs"]["oracle-supplied"] if r["image"]}
    for name, image in images.items():
        out["docker"][name] = {"oracle": docker_floor(image, adapted / name, True, proxy_log),
                               "nop": docker_floor(image, adapted / name, False, proxy_log)}
    digests = {r["task"]: r["digest"] for r in out["jobs"]["oracle-supplied"] if r["digest"]}
    out["mount"] = {}
    for name, digest in digests.items():
        rdir = runner_dir(digest)
        if rdir is not None:
            out["mount"][name] = mount_cost(images[name], rdir)
    (work / "results.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
