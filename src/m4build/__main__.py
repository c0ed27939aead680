"""``python -m m4build`` runs the same command as the ``m4build`` console script."""

from m4build.cli.app import main

main()
