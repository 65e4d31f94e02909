"""The scoring steps: settings and hash, tokens, weights, embedding, matching, the pipeline, rescaling."""
