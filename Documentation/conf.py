# SPDX-License-Identifier: GPL-2.0
# Sphinx configuration of the project's manual: `make docs` builds it into
# build/docs/html with warnings as errors (scripts/docs.sh).

project = "umem_dmabuf_rs"
copyright = "The umem_dmabuf_rs developers"
root_doc = "index"
# data/*.rst: generated tables, included by the pages that show them.
exclude_patterns = ["perf/*.md", "data/*.rst"]
highlight_language = "none"
html_theme = "alabaster"
html_static_path = []
