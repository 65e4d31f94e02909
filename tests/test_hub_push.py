"""What a push puts in the Space: the Hub refuses binary files pushed as plain git objects (whatever their
size, https://github.com/huggingface/huggingface_hub/issues/1404: "Your push was rejected because it
contains binary files"; files over 10 MB need Xet or LFS in any case, docs/hub/spaces-github-actions.md).
docs/deploy.md names the binary files it tracks through Xet; these tests keep that list true, and keep
the package's own files text, so that `pip install git+<the Space>` needs no git-xet on a user's machine.
"""

from __future__ import annotations

import re
import tomllib

from hub_space import REPO_ROOT, space_files

DEPLOY = REPO_ROOT / "docs" / "deploy.md"
TABLE_MARK = "<!-- binary files: the test compares this table with the repository's binary files -->"


def is_binary(data: bytes) -> bool:
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def binary_files() -> dict[str, int]:
    return {name: (REPO_ROOT / name).stat().st_size for name in space_files()
            if is_binary((REPO_ROOT / name).read_bytes())}


def listed_binary_files() -> dict[str, str]:
    text = DEPLOY.read_text(encoding="utf-8")
    assert TABLE_MARK in text
    table = text.split(TABLE_MARK, 1)[1].strip().split("\n\n", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|$", table, flags=re.M))


def test_the_deploy_doc_names_every_binary_file_and_its_size():
    found, listed = binary_files(), listed_binary_files()
    assert set(listed) == set(found), f"docs/deploy.md lists {sorted(listed)}, the repository has {sorted(found)}"
    for name, size in found.items():
        assert listed[name] == f"{round(size / 1000)} KB", (name, size, listed[name])


def test_every_binary_file_is_tracked_by_the_deploy_steps():
    """The deploy steps `git xet track` each binary file's extension."""
    tracked = set(re.findall(r'git xet track "\*(\.\w+)"', DEPLOY.read_text(encoding="utf-8")))
    assert {"." + name.rsplit(".", 1)[1] for name in binary_files()} <= tracked, tracked


def test_no_file_needs_large_file_storage():
    sizes = {name: (REPO_ROOT / name).stat().st_size for name in space_files()}
    assert max(sizes.values()) < 10 * 10**6, max(sizes.items(), key=lambda item: item[1])


def test_the_package_is_built_from_text_files_only():
    """Everything the wheel is built from (the package, its data, the module, pyproject, README, LICENSE)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    sources = [name for name in space_files() if name.startswith("bertscore/")]
    sources += [f"{module}.py" for module in project["tool"]["setuptools"]["py-modules"]]
    sources += ["pyproject.toml", "README.md", "LICENSE"]
    binary = [name for name in sources if is_binary((REPO_ROOT / name).read_bytes())]
    assert binary == [] and len(sources) > 100
