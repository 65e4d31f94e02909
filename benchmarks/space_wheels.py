"""What a Space build downloads: the wheels of requirements.txt on the Hub's platform, with torch's default
(CUDA) build from PyPI next to its CPU build.

pip resolves requirements.txt plus gradio at the front matter's `sdk_version` for Linux x86_64 and its
`python_version` without installing anything (`pip install --dry-run --report`, PyPI only, this
machine's pip configuration left out), with each torch build; wheel sizes come from PyPI's JSON index
(PEP 691), the CPU torch wheel's from its index where reachable, else from a local copy (`--cpu-wheel`).
docs/deploy.md quotes the report.

    .venv/bin/python benchmarks/space_wheels.py [--torch 2.13.0 --cpu-wheel /opt/wheels/torch-2.13.0+cpu-...whl]

Needs PyPI (https://pypi.org); writes space_wheels.md and .json.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from harness import table
from machine import ROOT, begin, write_results

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The Hub's build image (Debian, glibc >= 2.28) takes every manylinux wheel up to manylinux_2_28.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
GPU_STACK = re.compile(r"^(nvidia-|cuda-|triton$)")  # what torch's CUDA build brings besides itself


def front_matter() -> dict[str, str]:
    import yaml

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("\n---\n", 1)[0][4:])


def requirement_lines() -> list[str]:
    """requirements.txt without comments and option lines (its index line is what is compared here)."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()
            and not line.lstrip().startswith("-")]


def resolve(requirements: list[str], python_version: str) -> list[dict]:
    """pip's resolution for Linux x86_64 from PyPI alone: [{name, version, url}], nothing installed."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
        for name in [key for key in env if key.startswith("PIP_") and key != "PIP_CONFIG_FILE"]:
            env.pop(name)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report),
             "--ignore-installed", "--only-binary=:all:", *[arg for tag in PLATFORMS for arg in ("--platform", tag)],
             "--python-version", python_version, "--index-url", "https://pypi.org/simple", *requirements],
            check=True, env=env, timeout=1800)
        installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    return [{"name": item["metadata"]["name"].lower(), "version": item["metadata"]["version"],
             "url": item["download_info"]["url"]} for item in installs]


def index_files(url: str, timeout: float = 60) -> list[dict]:
    """The files a PEP 691 JSON simple index lists at `url`."""
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.load(answer).get("files", [])


def pypi_size(name: str, filename: str) -> int:
    """A wheel's size in bytes, from PyPI's JSON simple index."""
    files = index_files(f"https://pypi.org/simple/{name}/")
    return next(entry["size"] for entry in files if entry["filename"] == filename)


def cpu_torch_size(version: str, python_tag: str, local: Path | None) -> tuple[int | None, str]:
    """The CPU build's wheel size and where it was read (the CPU index, else a local copy)."""
    filename = f"torch-{version}+cpu-{python_tag}-{python_tag}-manylinux_2_28_x86_64.whl"
    try:
        size = next((entry.get("size") for entry in index_files(f"{CPU_INDEX}/torch/", 30)
                     if entry["filename"] == filename), None)
        if size:
            return size, f"{CPU_INDEX} ({filename})"
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = f"{CPU_INDEX} unreachable here ({getattr(error, 'reason', error)})"
    else:
        reason = f"{filename} not listed on {CPU_INDEX}"
    if local is not None and local.is_file() and local.name == filename:
        return local.stat().st_size, f"the local copy {local} ({reason})"
    return None, reason


def mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-wheel", type=Path, default=None, help="a local copy of the CPU torch wheel")
    parser.add_argument("--torch", default=None,
                        help="resolve this torch version (default: the newest, as the Hub; give the local wheel's to compare)")
    args, folder, _ = begin(parser)
    header = front_matter()
    python_version = str(header["python_version"])
    python_tag = "cp" + python_version.replace(".", "")[:3]
    requirements = [*requirement_lines(), f"gradio=={header['sdk_version']}"]
    if args.torch:
        requirements.append(f"torch=={args.torch}")
    wheels = resolve(requirements, python_version)
    for wheel in wheels:
        wheel["size"] = pypi_size(wheel["name"], wheel["url"].rsplit("/", 1)[1])
    torch = next(wheel for wheel in wheels if wheel["name"] == "torch")
    gpu_stack = [wheel for wheel in wheels if GPU_STACK.match(wheel["name"])]
    rest = [wheel for wheel in wheels if wheel is not torch and wheel not in gpu_stack]
    cpu_size, cpu_source = cpu_torch_size(torch["version"], python_tag, args.cpu_wheel)
    total_cuda = sum(wheel["size"] for wheel in wheels)
    rest_size = sum(wheel["size"] for wheel in rest)
    result = {"requirements": requirements, "platform": f"manylinux_2_28_x86_64, Python {python_version}",
              "torch_version": torch["version"], "torch_cuda_wheel": torch["size"],
              "gpu_stack": {wheel["name"]: wheel["size"] for wheel in gpu_stack},
              "everything_else": rest_size, "packages": len(wheels), "total_with_cuda_torch": total_cuda,
              "torch_cpu_wheel": cpu_size, "torch_cpu_source": cpu_source,
              "total_with_cpu_torch": None if cpu_size is None else rest_size + cpu_size, "wheels": wheels}
    markdown = [
        "# The Space build's downloads: torch's CUDA build (PyPI) against its CPU build", "",
        f"requirements.txt plus gradio=={header['sdk_version']}, resolved by pip for {result['platform']} "
        f"(the Hub's build platform) from PyPI: {len(wheels)} wheels.", "",
        *table(["torch", "torch and what it pulls in", "the whole build"], [
            [f"torch {torch['version']} from PyPI (CUDA)",
             f"{mb(torch['size'] + sum(w['size'] for w in gpu_stack))} (torch {mb(torch['size'])}, {len(gpu_stack)} "
             f"nvidia/cuda/triton wheels {mb(sum(w['size'] for w in gpu_stack))})", mb(total_cuda)],
            [f"torch {torch['version']}+cpu (CPU build)", mb(cpu_size), mb(rest_size + cpu_size)]
            if cpu_size is not None else ["torch CPU build", f"not measured: {cpu_source}", ""]]), "",
        f"Everything but torch and its GPU stack: {mb(rest_size)}. CPU wheel size from {cpu_source}.", "",
        "Sizes are of the compressed wheels: what pip downloads.", "",
        "Command: `.venv/bin/python benchmarks/space_wheels.py"
        f"{' --torch ' + args.torch if args.torch else ''}{' --cpu-wheel ' + str(args.cpu_wheel) if args.cpu_wheel else ''}`"]
    write_results(folder, "space_wheels", result, markdown)


if __name__ == "__main__":
    main()
