"""The Space's logic apart from its page: `app.py` wires these rooms into Gradio.

- `config`: the allow-list and limits, read from BERTSCORE_APP_* variables.
- `messages`: `UserError`, how an error reads in the page, how notes name the page's controls.
- `user_input`: what a user sends (texts, uploads, JSON), read and checked against the limits.
- `service`: settings -> a scorer from the shared pool; the queue that merges API requests.
- `reports`: scores, statistics and notes as the page shows them (Markdown, tables, the CSV).
- `batch`: one batch scored (raw next to rescaled, a second system compared).
- `api`: the `/compute` endpoint: a checked request, its merged scoring, its JSON answer.

Nothing here imports Gradio: each room is unit-testable without a server.
"""
