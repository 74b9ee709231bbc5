"""Sphinx extension: keep the widget state of executed chapters out of the pages.

Building the book executes every chapter; the panels (ipywidgets) leave their state, figures
included, in the executed notebook, and MyST-NB embeds it in the page and loads the widget
JavaScript from a CDN. The pages show no widget views (the live cells' outputs are removed and
each panel's default figure is a normal output), so that state would only add 50-160 KB and two
network requests to each chapter.
"""

from sphinx.application import Sphinx


def drop_widget_state(app: Sphinx, _doctree: object) -> None:
    """Forget the ipywidgets state and scripts MyST-NB registered for the page just read."""
    scripts = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {}).get("js_files", {})
    for key in [k for k in scripts if k.startswith("ipywidgets_")]:
        del scripts[key]


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", drop_widget_state)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
