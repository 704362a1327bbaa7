"""The generator scripts under tests/data run only with the old TensorFlow that wrote the files.

Pytest collects doctests from every module (--doctest-modules); these scripts must not
be imported by the course's own TensorFlow, so nothing under tests/data is collected.
"""

collect_ignore_glob = ["*.py", "*/*.py", "*/*/*.py"]
