"""README.md's front matter held to the Hub's documented Spaces rules, and the gradio floor held to app.py.

The Hub reads a Space's configuration from the YAML block at the top of README.md and validates it on
every push; a push it rejects never becomes a Space. The rules, as documented:

- Spaces Configuration Reference, https://huggingface.co/docs/hub/spaces-config-reference (the source,
  huggingface/hub-docs docs/hub/spaces-config-reference.md, read at commit e2ea087): every accepted key;
  `colorFrom`/`colorTo` "red, yellow, green, blue, indigo, purple, pink, gray"; `sdk` "gradio, docker, or
  static"; `python_version` "any valid Python 3.x or 3.x.x version"; `sdk_version` "the version of Gradio
  to use"; `emoji` "emoji-only character allowed"; `app_file` "relative to the root of the repository";
  `tags` a list of strings; `pinned` a boolean; `short_description` a string.
- `short_description` at most 60 characters: the Hub's validator rejects a longer one ("short_description
  length must be less than or equal to 60 characters long", the push refused in issue 24; also
  https://github.com/nekuda-ai/WindTunnel/pull/20: "the Hub enforces <= 60").
- `license`: an identifier of the Hub's list, https://huggingface.co/docs/hub/repositories-licenses.

`sdk_version` is the gradio the Hub installs; requirements.txt and pyproject's extras name the oldest
gradio app.py runs on (gradio 6.0.0: 5.50.0, the newest 5.x, has no `api_visibility` and build_demo()
raises TypeError). `make test-matrix-floor` runs this file with that floor installed (BERTSCORE_GRADIO_FLOOR).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import sys
import tomllib
import unicodedata
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]

# Every key of the Spaces Configuration Reference, plus the card metadata the Hub reads from any repo card.
CONFIG_KEYS = {
    "title", "emoji", "colorFrom", "colorTo", "sdk", "python_version", "sdk_version", "suggested_hardware",
    "suggested_storage", "app_file", "app_build_command", "app_port", "base_path", "fullWidth", "header",
    "short_description", "models", "datasets", "tags", "thumbnail", "pinned", "hf_oauth", "hf_oauth_scopes",
    "hf_oauth_expiration_minutes", "hf_oauth_authorized_org", "disable_embedding", "startup_duration_timeout",
    "custom_headers", "preload_from_hub",
}
CARD_KEYS = {"license"}
COLORS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
SDKS = {"gradio", "docker", "static"}
SHORT_DESCRIPTION_MAX = 60
# A few of the Hub's license identifiers (the list linked above), the one used here among them.
HUB_LICENSES = {"apache-2.0", "mit", "bsd-2-clause", "bsd-3-clause", "cc-by-4.0", "gpl-3.0", "other"}


def front_matter() -> dict:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must open with the Space's YAML block"
    return yaml.safe_load(text.split("\n---\n", 1)[0][4:])


def gradio_floor(spec: str) -> str:
    match = re.fullmatch(r"gradio>=(\d+\.\d+\.\d+)", spec)
    assert match, f"gradio's requirement must be a floor X.Y.Z (>=): {spec!r}"
    return match.group(1)


def requirement_lines() -> list[str]:
    lines = (REPO_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_only_keys_the_hub_documents():
    unknown = set(front_matter()) - CONFIG_KEYS - CARD_KEYS
    assert not unknown, f"keys the Spaces configuration reference does not list: {sorted(unknown)}"


def test_short_description_fits_the_hub_limit():
    description = front_matter()["short_description"]
    assert isinstance(description, str) and description.strip() == description and description
    assert len(description) <= SHORT_DESCRIPTION_MAX, f"{len(description)} characters: {description!r}"


def test_colors_sdk_title_emoji_and_pinned_are_well_formed():
    header = front_matter()
    assert header["colorFrom"] in COLORS and header["colorTo"] in COLORS, header
    assert header["sdk"] in SDKS and header["sdk"] == "gradio"
    assert isinstance(header["title"], str) and header["title"].strip()
    emoji = header["emoji"]
    assert isinstance(emoji, str) and emoji and all(
        unicodedata.category(char) == "So" or char in "\u200d\ufe0f" for char in emoji), repr(emoji)
    assert isinstance(header.get("pinned", False), bool)


def test_app_file_is_the_app():
    app_file = front_matter()["app_file"]
    assert isinstance(app_file, str) and not Path(app_file).is_absolute()
    assert (REPO_ROOT / app_file).is_file() and app_file.endswith(".py")


def test_python_version_is_a_3x_string_and_the_tested_python():
    """A bare 3.10 in YAML is the float 3.1: the value must be a string. It is the Python the whole suite ran
    on (`make test`'s environment, as benchmarks/results/matrix/suite.json records it: docs/versions.md's
    table), whichever Python runs this test, and within pyproject's requires-python."""
    version = front_matter()["python_version"]
    assert isinstance(version, str) and re.fullmatch(r"3\.\d+(\.\d+)?", version), repr(version)
    suite = json.loads((REPO_ROOT / "benchmarks" / "results" / "matrix" / "suite.json").read_text(encoding="utf-8"))
    assert version.split(".")[:2] == suite["python"].split(".")[:2], (version, suite["python"])
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert version in SpecifierSet(project["requires-python"])


def test_license_and_tags_are_well_formed():
    header = front_matter()
    assert header["license"] in HUB_LICENSES
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert header["license"] == project["license"].lower()
    tags = header["tags"]
    assert isinstance(tags, list) and tags and len(set(tags)) == len(tags)
    assert all(isinstance(tag, str) and tag and tag == tag.strip() and " " not in tag for tag in tags), tags
    assert {"evaluate", "metric"} <= set(tags)


def test_sdk_version_is_a_release_at_or_above_the_gradio_floor():
    """The gradio the Hub installs (sdk_version) satisfies what requirements.txt asks of gradio."""
    sdk_version = front_matter()["sdk_version"]
    assert isinstance(sdk_version, str) and re.fullmatch(r"\d+\.\d+\.\d+", sdk_version), repr(sdk_version)
    (spec,) = [line for line in requirement_lines() if line.startswith("gradio")]
    assert version_tuple(sdk_version) >= version_tuple(gradio_floor(spec))


def test_one_gradio_floor_in_requirements_and_extras():
    (spec,) = [line for line in requirement_lines() if line.startswith("gradio")]
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    named = {extra: [dep for dep in deps if re.match(r"gradio\b(?!_client)", dep)] for extra, deps in extras.items()}
    assert named["app"] == [spec] and named["test"] == [spec], named


def test_the_space_requirements_are_the_package_and_app_dependencies():
    """requirements.txt (what the Hub installs) = the package's dependencies + the app extra; its one
    option line is the CPU index for torch (docs/deploy.md)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = requirement_lines()
    options = [line for line in lines if line.startswith("-")]
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"], options
    packages = [line for line in lines if not line.startswith("-")]
    assert packages == project["dependencies"] + project["optional-dependencies"]["app"]


def test_the_app_builds_on_the_installed_gradio():
    """Every keyword app.py passes while building its page exists in this gradio (TypeError if not)."""
    pytest.importorskip("gradio")
    sys.path.insert(0, str(REPO_ROOT))
    try:
        import app
    finally:
        sys.path.remove(str(REPO_ROOT))
    from bertscore.space.config import AppConfig

    demo = app.build_demo(AppConfig.from_env({}))
    assert demo.bertscore_config.models


def test_the_launch_keywords_exist_in_the_installed_gradio():
    """`demo.launch(...)` runs only when the Space starts: its keywords are checked against the signature."""
    gradio = pytest.importorskip("gradio")
    tree = ast.parse((REPO_ROOT / "app.py").read_text(encoding="utf-8"))
    launches = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr == "launch"]
    assert launches
    accepted = inspect.signature(gradio.Blocks.launch).parameters
    for call in launches:
        assert {keyword.arg for keyword in call.keywords} <= set(accepted)


def test_make_test_compat_runs_the_floor():
    """Where make test-matrix-floor installed the floor, it is what runs here, and requirements.txt's floor."""
    floor = os.environ.get("BERTSCORE_GRADIO_FLOOR")
    if not floor:
        pytest.skip("make test-matrix-floor sets BERTSCORE_GRADIO_FLOOR where it installs gradio at its floor")
    gradio = pytest.importorskip("gradio")
    (spec,) = [line for line in requirement_lines() if line.startswith("gradio")]
    assert gradio.__version__ == floor == gradio_floor(spec)


def test_project_urls_name_one_space_of_the_required_name_and_files_it_holds():
    """pyproject's [project.urls] (what pip show and package indexes display) point into one Space, named as
    evaluate.load needs it (bertscore_metric, docs/deploy.md), at files this repository has."""
    urls = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert set(urls) == {"Space", "Source", "Documentation"}, urls
    space = re.fullmatch(r"https://huggingface\.co/spaces/([A-Za-z0-9][A-Za-z0-9-]*)/bertscore_metric", urls["Space"])
    assert space, f"the Space must be https://huggingface.co/spaces/<owner>/bertscore_metric: {urls['Space']}"
    assert urls["Source"] == urls["Space"] + "/tree/main", urls
    prefix = urls["Space"] + "/blob/main/"
    assert urls["Documentation"].startswith(prefix), urls
    assert (REPO_ROOT / urls["Documentation"][len(prefix):]).is_file(), urls["Documentation"]
    assert "[project.urls]" in (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
