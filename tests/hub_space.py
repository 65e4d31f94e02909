"""A Space of this repository served as the Hugging Face Hub serves one, on 127.0.0.1, for the Hub tests.

`evaluate.load("<owner>/<name>")` builds its download URL from `HF_ENDPOINT`:
`{HF_ENDPOINT}/spaces/<owner>/<name>/resolve/<revision>/<name>.py`, asked with HEAD (for the ETag)
and then GET. It first asks for the revision `v<evaluate's version>` and, on a 404, for `main`. Pointing
HF_ENDPOINT at `FakeHub` changes that download step and nothing else: every other line that runs is
evaluate's own (its import check, its module cache `<owner>--<name>/<hash>/`, its import of the file).

`space_files` is what a push of this checkout puts in a Space: the files git lists (tracked, and
untracked ones it does not ignore), so the tests see the working tree as it would be pushed.
"""

from __future__ import annotations

import hashlib
import secrets
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

REPO_ROOT = Path(__file__).resolve().parents[1]
SPACE_NAME = "bertscore_metric"  # evaluate fetches `<space name>.py`: the module's file name


def random_owner() -> str:
    """A Space owner the tests do not fix in advance (Hub ids: letters, digits, '-', no '--')."""
    return f"owner-{secrets.token_hex(4)}"


def space_files(root: Path = REPO_ROOT) -> list[str]:
    """The paths a push of this checkout puts in the Space (as `git ls-files` lists them; in a copy
    without git, as tests/test_docs.py makes one, every file but caches)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True)
    if listed.returncode != 0 or not (root / ".git").exists():
        return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()
                      and not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(root).parts))
    return [name for name in listed.stdout.decode("utf-8").split("\0") if name and (root / name).is_file()]


class FakeHub:
    """Serves one Space's files at `main` (other revisions: 404), and records every request."""

    def __init__(self, space: str, files: dict[str, bytes]):
        self.space, self.files, self.requests = space, files, []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, with_body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                prefix = f"/spaces/{hub.space}/resolve/main/"
                body = hub.files.get(unquote(self.path[len(prefix):])) if self.path.startswith(prefix) else None
                if body is None:
                    self.send_error(404, "Entry not found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()}"')
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def do_HEAD(self) -> None:  # noqa: N802 - the http.server spelling
                self._answer(with_body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(with_body=True)

            def log_message(self, *args) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @classmethod
    def of_checkout(cls, owner: str, replace: dict[str, bytes] | None = None) -> FakeHub:
        """This checkout as the Space `<owner>/bertscore_metric`, with some files' bytes replaced."""
        files = {name: (REPO_ROOT / name).read_bytes() for name in space_files()}
        return cls(f"{owner}/{SPACE_NAME}", {**files, **(replace or {})})

    def env(self, cache: Path) -> dict[str, str]:
        """What a process loading from this Hub needs: the endpoint, its own caches, no proxy for
        loopback, no download-count ping (evaluate's `increase_load_count`: not the download)."""
        return {"HF_ENDPOINT": self.endpoint, "HF_HOME": str(cache / "hf-home"),
                "HF_MODULES_CACHE": str(cache / "modules"), "HF_UPDATE_DOWNLOAD_COUNTS": "0",
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


# Run as `python -c LOAD_SCRIPT <owner>/<name> allow|block '<json [candidates, references]>'` by the
# Python under test: loads the metric through evaluate's Hub path and prints one JSON line, the
# ImportError's message (exit code 3), or compute()'s and the package's score()'s numbers side by side.
LOAD_SCRIPT = """
import importlib.abc, json, sys

space, mode, pairs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])


class BlockBertscore(importlib.abc.MetaPathFinder):
    # first on sys.meta_path: no finder after it (site-packages, an editable install) finds the package
    def find_spec(self, name, path=None, target=None):
        if name == "bertscore" or name.startswith("bertscore."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if mode == "block":
    sys.meta_path.insert(0, BlockBertscore())
import evaluate

try:
    metric = evaluate.load(space)
except ImportError as error:
    print(json.dumps({"error": str(error)}))
    sys.exit(3)
import bertscore
from bertscore import EMBEDDED_MODEL_NAME, score

candidates, references = pairs
options = dict(model_type=EMBEDDED_MODEL_NAME, idf=True)
computed = metric.compute(predictions=candidates, references=references, **options)
scored = score(candidates, references, **options)
print(json.dumps({
    "module": type(metric).__module__, "module_file": sys.modules[type(metric).__module__].__file__,
    "bertscore_from": bertscore.__file__, "bertscore_version": bertscore.__version__,
    "compute": {name: computed[name] for name in ("precision", "recall", "f1")},
    "score": {name: values.tolist() for name, values in zip(("precision", "recall", "f1"), scored)},
    "hashcode": computed["hashcode"],
}))
"""

# Three pairs with one or two references each.
CANDIDATES = ["The cat sat on the mat.", "It is raining heavily today.", "He bought three apples at the market."]
REFERENCES = [["A cat was sitting on the mat."], ["Today it rains a lot.", "There is heavy rain today."],
              ["At the market he purchased three apples."]]
