"""The Space under load: N simultaneous /compute clients against a real server, next to sequential.

For each app given (this checkout's app.py; with `--before DIR` also another checkout's, measured in
the same run, interleaved), `python DIR/app.py` serves the embedded MiniLM offline on a free loopback
port. For each N of --clients, N clients start at once (threads behind a barrier, gradio_client), each
asking `/compute` for --pairs WMT17 de-en pairs (tests/data), tagged so that no request is served from
another's cached embeddings. Recorded per N: served, refused (and the queue's message), failed, p50/p95
latency, pairs per second; next to --sequential requests sent one after another. The servers stop at
the end (also on Ctrl-C). docs/space.md quotes the report (space_load.md).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/space_load.py [--before ../main] [--clients 1 10 60 200]
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from harness import FIXTURE, revision, table, timed, wmt17_pairs  # noqa: E402
from machine import ROOT, begin, command, header, write_results  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


# ----- inputs ----------------------------------------------------------------------------------
class Requests:
    """Request bodies: `pairs` consecutive fixture pairs each, tagged so that no two share a text."""

    def __init__(self, pairs: int):
        self.pairs, self.count, self.lock = pairs, 0, threading.Lock()
        self.data = list(zip(*wmt17_pairs(FIXTURE)))

    def next(self) -> tuple[list[str], list[str]]:
        with self.lock:
            number, self.count = self.count, self.count + 1
        start, tag = (number * self.pairs) % len(self.data), f" (request {number})"
        chosen = [self.data[(start + i) % len(self.data)] for i in range(self.pairs)]
        return [c + tag for c, _ in chosen], [r + tag for _, r in chosen]


# ----- a server --------------------------------------------------------------------------------
class Server:
    """`python <folder>/app.py` on a free loopback port, in a scratch working folder; stopped on exit."""

    def __init__(self, folder: Path, log: Path):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.folder, self.port = folder, sock.getsockname()[1]
        self.scratch = Path(tempfile.mkdtemp(prefix="space-load-"))
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
               "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(self.port), "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONPATH": str(folder), "BERTSCORE_APP_MODELS": MODEL, "GRADIO_TEMP_DIR": str(self.scratch / "tmp")}
        self.log = log.open("w")
        self.process = subprocess.Popen([sys.executable, str(folder / "app.py")], cwd=self.scratch, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}/"

    def wait_ready(self, timeout: float) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server in {self.folder} exited with {self.process.returncode}; see {self.log.name}")
            try:
                with urllib.request.urlopen(self.url + "config", timeout=2) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"the server in {self.folder} did not answer within {timeout} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


# ----- clients ---------------------------------------------------------------------------------
def call(client: Any, predictions: list[str], references: list[str], timeout: float) -> tuple[str, Any]:
    """("served", result) / ("refused", message) / ("failed", message)."""
    import json

    from gradio_client.utils import QueueError

    try:
        result = client.submit(json.dumps(predictions), json.dumps(references), MODEL, "", False, False, "",
                               api_name="/compute").result(timeout=timeout)
    except QueueError as error:  # gradio's own refusal (the queue's max_size)
        return "refused", str(error)
    except Exception as error:  # noqa: BLE001 - counted and reported, the run goes on
        return "failed", f"{type(error).__name__}: {error}"
    if isinstance(result, dict) and "error" in result:
        return "refused" if "retry_after_s" in result else "failed", result["error"]
    if not (isinstance(result, dict) and len(result.get("f1", [])) == len(predictions)):
        return "failed", f"unexpected answer: {str(result)[:200]}"
    return "served", result


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_level(url: str, clients: int, requests: Requests, timeout: float) -> dict[str, Any]:
    from gradio_client import Client

    shared = [Client(url, verbose=False) for _ in range(min(clients, 8))]  # connections shared by the threads
    bodies = [requests.next() for _ in range(clients)]
    outcomes: list[tuple[str, Any, float, float] | None] = [None] * clients
    barrier = threading.Barrier(clients + 1)

    def client_thread(index: int) -> None:
        barrier.wait()
        started = time.monotonic()
        kind, value = call(shared[index % len(shared)], *bodies[index], timeout)
        outcomes[index] = (kind, value, started, time.monotonic())

    threads = [threading.Thread(target=client_thread, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    released = time.monotonic()
    for thread in threads:
        thread.join(timeout + 60)
    done = [o for o in outcomes if o is not None]
    served, refused, failed = ([o for o in done if o[0] == kind] for kind in ("served", "refused", "failed"))
    latencies, refusal_times = ([o[3] - o[2] for o in outcome] for outcome in (served, refused))
    wall = max((o[3] for o in done), default=released) - released
    pairs = len(served) * requests.pairs
    for client in shared:
        client.close()
    return {"clients": clients, "served": len(served), "refused": len(refused), "failed": len(failed),
            "unfinished": clients - len(done), "p50_s": percentile(latencies, 0.5),
            "p95_s": percentile(latencies, 0.95), "max_s": max(latencies, default=None), "wall_s": wall,
            "pairs_per_s": pairs / wall if wall > 0 and pairs else 0.0,
            "refusal_p95_s": percentile(refusal_times, 0.95), "refusal_example": refused[0][1] if refused else None,
            "failure_example": failed[0][1] if failed else None}


def run_sequential(url: str, count: int, requests: Requests, timeout: float) -> dict[str, Any]:
    from gradio_client import Client

    client = Client(url, verbose=False)
    latencies = []
    for _ in range(count):
        seconds, (kind, value) = timed(lambda: call(client, *requests.next(), timeout))
        if kind != "served":
            raise RuntimeError(f"a sequential request was not served: {value}")
        latencies.append(seconds)
    client.close()
    mean = statistics.fmean(latencies)
    return {"requests": count, "mean_s": mean, "pairs_per_s": requests.pairs / mean}


def measure(apps: list[tuple[str, Path]], args: argparse.Namespace, log_dir: Path) -> list[dict[str, Any]]:
    """Every app's server up at once; each level (and the sequential run) measured app after app, so
    that the apps see the machine in the same state (an idle server costs next to nothing)."""
    requests = Requests(args.pairs)
    servers = [Server(folder, log_dir / f"{label}.log") for label, folder in apps]
    runs = [{"label": label, "folder": str(folder), "commit": revision("HEAD", folder), "levels": []} for label, folder in apps]
    try:
        for (label, _), server in zip(apps, servers):
            ready = server.wait_ready(args.start_timeout)
            warm = run_sequential(server.url, 1, requests, args.timeout)  # loads the model (if the app did not)
            print(f"[{label}] ready after {ready:.1f} s; warm-up request {warm['mean_s']:.1f} s", flush=True)
        for run, server in zip(runs, servers):
            run["sequential"] = sequential = run_sequential(server.url, args.sequential, requests, args.timeout)
            print(f"[{run['label']}] sequential: {sequential['mean_s']:.2f} s per request, "
                  f"{sequential['pairs_per_s']:.1f} pairs/s", flush=True)
        for clients in args.clients:
            rounds: list[list[dict[str, Any]]] = [[] for _ in runs]
            for _ in range(args.rounds):
                for index, (run, server) in enumerate(zip(runs, servers)):
                    level = run_level(server.url, clients, requests, args.timeout)
                    rounds[index].append(level)
                    print(f"[{run['label']}] {clients} clients: served {level['served']}, refused {level['refused']}, "
                          f"failed {level['failed']}, p50 {fmt(level['p50_s'])} s, p95 {fmt(level['p95_s'])} s, "
                          f"{level['pairs_per_s']:.1f} pairs/s in {level['wall_s']:.1f} s", flush=True)
                    time.sleep(args.pause)  # let a refused burst's queue drain before the next level
            for run, measured in zip(runs, rounds):  # the round with the median pairs/s
                run["levels"].append({**sorted(measured, key=lambda m: m["pairs_per_s"])[(len(measured) - 1) // 2],
                                      "sequential_s": clients * run["sequential"]["mean_s"], "rounds": measured})
    finally:
        for server in servers:
            server.stop()
    return runs


def fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def merge_check(count: int, pairs: int, rounds: int) -> dict[str, Any]:
    """`count` requests scored in this process one by one, and submitted at once to a RequestQueue."""
    from bertscore import EMBEDDED_MODEL_NAME
    from bertscore.pool import ScorerPool
    from bertscore.space.serving import RequestQueue

    requests = Requests(pairs)
    requests.count = 10**6  # tags of their own: nothing cached from the servers' texts
    scorer = ScorerPool().get(model_type=EMBEDDED_MODEL_NAME)
    scorer.score(*requests.next())
    alone, queued, merged_calls = [], [], 0
    for _ in range(rounds):
        bodies = [requests.next() for _ in range(count)]
        alone.append(timed(lambda: [scorer.score(c, r, notes=[]) for c, r in bodies])[0])
        bodies = [requests.next() for _ in range(count)]
        queue = RequestQueue(max_wait_s=3600, pairs_per_s=100)
        queued.append(timed(lambda: [future.result() for future in [queue.submit(scorer, c, r, notes=[])
                                                                    for c, r in bodies]])[0])
        merged_calls = queue.merged_calls
    return {"requests": count, "rounds": rounds, "one_by_one_s": min(alone), "queue_s": min(queued),
            "merged_calls": merged_calls, "all_one_by_one_s": alone, "all_queue_s": queued}


def report(runs: list[dict[str, Any]], args: argparse.Namespace, info: dict[str, Any],
           merge: dict[str, Any] | None) -> list[str]:
    argv = list(args.argv)
    if "--before" in argv[:-1]:  # a path of this machine: name one every clone can make
        argv[argv.index("--before") + 1] = "../before"
    lines = [
        *header("The Space under load (`benchmarks/space_load.py`)", info, command("space_load.py", argv),
                " after `git worktree add ../before <the before commit above>`" if args.before else ""),
        f"N clients at once, each one `/compute` request of {args.pairs} WMT17 de-en pairs (the embedded MiniLM, "
        f"CPU, default app settings); sequential: {args.sequential} requests one after another, "
        "its mean latency x N = the time N requests take one by one. Each level ran "
        f"{args.rounds} time(s), apps interleaved; the round with the median pairs/s is shown.", "",
        *table(["app", "clients", "served", "refused", "failed", "p50 s", "p95 s", "wall s", "pairs/s",
                "one by one: s (pairs/s)"],
               [[f"{run['label']} ({run['commit']})", level["clients"], level["served"], level["refused"],
                 level["failed"] + level["unfinished"], fmt(level["p50_s"]), fmt(level["p95_s"]), f"{level['wall_s']:.1f}",
                 f"{level['pairs_per_s']:.1f}", f"{level['sequential_s']:.1f} ({run['sequential']['pairs_per_s']:.1f})"]
                for run in runs for level in run["levels"]]),
    ]
    lines += ["", "Refusal messages (first of each run and level with refusals):", ""]
    lines += [f"- {run['label']}, {level['clients']} clients (answered within {fmt(level['refusal_p95_s'], 2)} s, "
              f"p95): {level['refusal_example']}" for run in runs for level in run["levels"]
              if level["refusal_example"]]
    failures = [(run["label"], level) for run in runs for level in run["levels"] if level["failure_example"]]
    if failures:
        lines += ["", "Failures:", ""] + [f"- {label}, {level['clients']} clients: {level['failure_example']}"
                                          for label, level in failures]
    if merge:
        lines += ["", f"In-process, no HTTP: {merge['requests']} requests of {args.pairs} pairs scored one by one "
                  f"{fmt(merge['one_by_one_s'], 2)} s, through `RequestQueue` (merged) {fmt(merge['queue_s'], 2)} s: "
                  f"{merge['one_by_one_s'] / merge['queue_s']:.2f}x ({merge['merged_calls']} merged call(s); best of "
                  f"{merge['rounds']} interleaved rounds each)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10, 60, 200])
    parser.add_argument("--pairs", type=int, default=20, help="pairs per request")
    parser.add_argument("--sequential", type=int, default=10, help="requests of the sequential run")
    parser.add_argument("--before", type=Path, help="a checkout whose app.py to measure first (e.g. ../main)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
    parser.add_argument("--start-timeout", type=float, default=180.0)
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between levels")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each level (the median one is reported)")
    parser.add_argument("--merge-check", type=int, default=10,
                        help="requests scored in-process one by one and through the merging queue (0: skip)")
    args, _, info = begin(parser, argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if max(args.clients) > 500 or min(args.clients) < 1:
        parser.error("--clients: between 1 and 500 each")
    log_dir = Path(tempfile.mkdtemp(prefix="space-load-logs-"))
    apps = ([("before", args.before.resolve())] if args.before else []) + [("after" if args.before else "this", ROOT)]
    runs = measure(apps, args, log_dir)
    merge = merge_check(args.merge_check, args.pairs, max(1, args.rounds)) if args.merge_check else None
    result = {"pairs_per_request": args.pairs, "clients": args.clients, "rounds": args.rounds, "runs": runs,
              "merge_check": merge, "machine": info, "server_logs": str(log_dir)}
    write_results(args.out, "space_load", result, report(runs, args, info, merge))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
