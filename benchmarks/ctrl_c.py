"""How often a Ctrl-C is lost while scoring: SIGINTs at random moments, without and with the CLI's guard.

Python drops a KeyboardInterrupt raised inside a finalizer; `bertscore.cli.io.ctrl_c_stops` (its
docstring says why that hung the command) sends it again. One process scores one short pair after
another (the embedded MiniLM at layer 4) in alternating blocks without and with the guard, while a
thread sends SIGINT at random moments and waits up to --wait seconds for it to surface; one that never
does is lost. Python's reports of dropped ones (sys.unraisablehook) name the function they fell in.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ctrl_c.py [--seconds 300] [--block 30]  # ctrl_c.md, .json
"""

import argparse
import collections
import contextlib
import os
import random
import signal
import sys
import threading
import time

from harness import table
from machine import begin, command, header, write_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300, help="scoring time per mode (default 300)")
    parser.add_argument("--block", type=float, default=30, help="the modes alternate in blocks of this many seconds")
    parser.add_argument("--wait", type=float, default=10, help="seconds an interrupt may take to surface")
    args, folder, info = begin(parser)
    # Started in the background by a shell without job control, SIGINT is ignored: every interrupt would
    # read as lost. Python's own handler, as an interactive start has it.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
    from bertscore.cli.io import ctrl_c_stops

    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    modes = ("without the guard", "with the guard")
    counts, dropped_in = ({mode: collections.Counter() for mode in modes} for _ in range(2))
    state = {"mode": modes[0], "armed": False, "stop": False}
    surfaced, in_flight = threading.Event(), threading.Lock()

    def recording(inner):
        """A hook that counts each KeyboardInterrupt Python drops, then hands it to `inner` (the
        guard's hook, which sends it again) or, without the guard, drops it quietly."""
        def record(unraisable) -> None:
            dropped = unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt)
            if dropped:
                dropped_in[state["mode"]][getattr(unraisable.object, "__qualname__", repr(unraisable.object))] += 1
            if not dropped or state["mode"] == modes[1]:
                inner(unraisable)
        return record

    def sender() -> None:
        while not state["stop"]:
            time.sleep(random.uniform(0.0, 0.05))
            with in_flight:
                if not state["armed"]:
                    continue
                mode = state["mode"]
                surfaced.clear()
                os.kill(os.getpid(), signal.SIGINT)  # to the process, as Ctrl-C and Popen.send_signal do
                counts[mode]["sent"] += 1
                if not surfaced.wait(args.wait):
                    counts[mode]["lost"] += 1

    def score_until(condition) -> None:
        """Score pairs while `condition()` holds, catching every interrupt that surfaces (the sender
        waits until the loop is back inside its try before it sends the next one)."""
        nonlocal index
        caught = False
        while True:
            try:
                if caught:
                    caught = False
                    surfaced.set()
                while condition():
                    index += 1
                    scorer.score([f"candidate {index}"], [[f"reference number {index}"]])
                return
            except KeyboardInterrupt:
                counts[state["mode"]]["surfaced"] += 1
                caught = True

    index = 0
    threading.Thread(target=sender, daemon=True).start()
    for block in range(2 * max(1, round(args.seconds / args.block))):
        mode = modes[block % 2]
        with ctrl_c_stops() if mode == modes[1] else contextlib.nullcontext():
            outer, sys.unraisablehook = sys.unraisablehook, recording(sys.unraisablehook)
            state["mode"], state["armed"] = mode, True
            end = time.monotonic() + args.block
            score_until(lambda: time.monotonic() < end)
            state["armed"] = False
            score_until(in_flight.locked)  # the interrupt in flight surfaces (or times out) in this mode
            sys.unraisablehook = outer
    state["stop"] = True

    result = {"machine": info, "seconds_per_mode": args.seconds, "block_seconds": args.block,
              "modes": {mode: {**counts[mode], "dropped_in": dict(dropped_in[mode])} for mode in counts}}
    markdown = [
        *header("Ctrl-C while scoring: interrupts lost, without and with the CLI's guard", info,
                command("ctrl_c.py", ["--seconds", f"{args.seconds:g}", "--block", f"{args.block:g}"])),
        f"SIGINTs sent at random moments while scoring one short pair after another, {args.seconds:.0f} s per mode "
        f"in alternating {args.block:.0f} s blocks; lost: no KeyboardInterrupt within {args.wait:.0f} s.", "",
        *table(["mode", "sent", "surfaced", "lost", "dropped by Python in"], [
            [mode, counts[mode]["sent"], counts[mode]["surfaced"], counts[mode]["lost"],
             ", ".join(f"{name} ({n})" for name, n in dropped_in[mode].items()) or "-"] for mode in counts])]
    write_results(folder, "ctrl_c", result, markdown)


if __name__ == "__main__":
    main()
