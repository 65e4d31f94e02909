"""The model rooms: loading, families, tokenizers, tables, the plain-torch BERT, devices, shared encoders."""
