"""`python -m bert_score_cli.visualize`: the `bert-score-show` command (bertscore.cli.official)."""

from bertscore.cli.official import show as main

if __name__ == "__main__":
    main()
