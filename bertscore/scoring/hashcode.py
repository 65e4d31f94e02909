"""The reproducibility hash: one string that names every setting that can change a number.

Like the official `model_L{k}_{idf|no-idf}_version=...(hug_trans=...)`, extended so that two
settings that can give different numbers never share a hash (in the spirit of sacrebleu's
signature).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScoreSettings:
    """Everything that enters a score besides the texts."""

    model: str
    revision: str | None
    num_layers: int
    all_layers: bool
    idf: str  # "no-idf", "idf" (from each call's references), "idf-sents:<hash>", "idf-dict:<hash>"
    rescale: str  # "", "rescaled" (packaged baseline <lang>), "rescaled-custom:<hash>"
    max_length: int
    long_texts: str  # "truncate" (at max_length, as the official package) or "window=W/S" (whole texts)
    prefix_space: bool
    dtype: str
    device: str  # device type: "cpu", "cuda", ... (fp32 kernels differ at the 1e-7 level)
    version: str
    transformers_version: str
    torch_version: str
    tokenizers_version: str = ""  # the tokenizers library: it can change token ids at a fixed transformers
    sentencepiece_version: str = ""  # only where the tokenizer is a sentencepiece model ("" elsewhere)

    def hashcode(self) -> str:
        """The signature string, e.g. `roberta-large_L17_no-idf_..._version=...`."""
        model = self.model if self.revision is None else f"{self.model}@{self.revision}"
        layer = "all-layers" if self.all_layers else f"L{self.num_layers}"
        parts = [model, layer, self.idf]
        if self.rescale:
            parts.append(self.rescale)
        parts += [
            f"maxlen={self.max_length}",
            *([] if self.long_texts == "truncate" else [self.long_texts]),
            "prefix-space" if self.prefix_space else "no-prefix-space",
            self.dtype,
            self.device,
        ]
        libraries = [f"transformers={self.transformers_version}"]
        if self.tokenizers_version:
            libraries.append(f"tokenizers={self.tokenizers_version}")
        if self.sentencepiece_version:
            libraries.append(f"sentencepiece={self.sentencepiece_version}")
        libraries.append(f"torch={self.torch_version}")
        return "_".join(parts) + f"_version=bertscore-{self.version}({','.join(libraries)})"
