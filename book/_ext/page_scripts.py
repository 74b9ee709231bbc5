"""Sphinx extension: keep each page's scripts to what the page needs.

- No widget state. Building the book executes every chapter; the panels (ipywidgets) leave their
  state, figures included, in the executed notebook, and MyST-NB embeds it in the page and loads
  the widget JavaScript from a CDN. The pages show no widget views (the live cells are hidden and
  each panel's default figure is a normal output), so that state would only add 50-160 KB and two
  network requests to each chapter.
- No script twice. sphinx-thebe and sphinx-togglebutton register their inline configuration
  scripts again at a second priority, so each page declared ``const THEBE_JS_URL`` twice and the
  browser reported a SyntaxError on every page.
"""

from sphinx.application import Sphinx


def drop_widget_state(app: Sphinx, _doctree: object) -> None:
    """Forget the ipywidgets state and scripts MyST-NB registered for the page just read."""
    scripts = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {}).get("js_files", {})
    for key in [k for k in scripts if k.startswith("ipywidgets_")]:
        del scripts[key]


def drop_repeated_scripts(_app: Sphinx, _pagename: str, _template: str, context: dict, _doctree: object) -> None:
    """Keep the first of scripts with the same file and attributes (inline body included), whatever
    their priority."""
    seen, kept, scripts = set(), [], context.get("script_files", [])
    for script in scripts:
        key = (str(getattr(script, "filename", script) or ""), tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept  # in place: later handlers add this page's scripts to the same list


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", drop_widget_state)
    # early: html-page-context stops at the first handler that returns a template name
    app.connect("html-page-context", drop_repeated_scripts, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
