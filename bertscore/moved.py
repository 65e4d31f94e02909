"""Where the rooms of earlier versions live now: their old module paths stay importable.

A scorer pickled by an earlier version names the modules of its time (`bertscore.idf` for its token
weights), and code written against them imports them (`bertscore.settings`); each old path loads
the module at its new place (the same module object, so `bertscore.idf.TokenWeights is
bertscore.scoring.idf.TokenWeights`). Nothing is imported until an old path is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

# old path -> new path (issue 70 moved these rooms into folders)
MOVED = {f"bertscore.{old}": f"bertscore.{new}" for old, new in {
    "model_families": "models.families", "model_tokenizer": "models.tokenizer",
    "model_tables": "models.tables", "bert_encoder": "models.bert_encoder", "padding": "models.padding",
    "shared_models": "models.shared", "devices": "models.devices", "fork_safety": "models.fork_safety",
    "pipeline": "scoring.pipeline", "plan": "scoring.plan", "embed": "scoring.embed", "matching": "scoring.matching",
    "idf": "scoring.idf", "tokens": "scoring.tokens", "windows": "scoring.windows", "reuse": "scoring.reuse",
    "tokenize_ahead": "scoring.tokenize_ahead", "input_notes": "scoring.input_notes",
    "all_pairs": "scoring.all_pairs", "settings": "scoring.settings", "hashcode": "scoring.hashcode",
    "baseline_tables": "scoring.baseline_tables", "metric_states": "torchmetrics.states",
    "metric_arguments": "torchmetrics.arguments", "metric_dtypes": "torchmetrics.dtypes",
    "dropin_helpers": "dropin.helpers", "serving": "space.serving", "markup": "space.markup", "fonts": "plot.fonts",
}.items()}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of `MOVED` and loads it as the module at its new place."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # the import machinery stamps the old path's spec on it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state  # its own spec back: the module is already loaded


def install() -> None:
    """Put the finder on `sys.meta_path` once (after the standard finders: a real module wins)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
