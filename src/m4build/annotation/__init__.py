"""Human annotation round trips: export tasks for annotators, import and resolve their labels.

One subpackage per benchmark (``ravenea``). The tool configurations and written guidelines live in
the packaged ``annotation/<benchmark>/`` data folder, read through :func:`m4build.resources.data_path`.
"""
