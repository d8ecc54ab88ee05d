"""Sphinx configuration of the API reference, generated from the docstrings
(numpydoc style, read by ``sphinx.ext.napoleon``).

Build it (warnings are errors, as in ``.ci/run``)::

    sphinx-build -W --keep-going -b html docs/reference docs/reference/_build
"""

project = "dpmic_dask"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the docstrings say what each parameter takes
html_theme = "alabaster"
html_static_path: list[str] = []
exclude_patterns = ["_build"]
