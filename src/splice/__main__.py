"""`python -m splice`: the same as the `splice` command."""

from splice.cli.main import main

if __name__ == "__main__":
    main()
