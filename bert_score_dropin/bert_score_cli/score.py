"""`python -m bert_score_cli.score`: the `bert-score` command (bertscore.cli.official)."""

from bertscore.cli.official import main

if __name__ == "__main__":
    main()
