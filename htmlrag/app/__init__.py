"""``htmlrag serve``: a local web app over the library (the ``[app]`` extra: FastAPI, Jinja2, uvicorn).

Pages: documents (upload PDFs and HTML pages, build the layout graph), ask (retrieve, read, see the evidence on
the rendered page), the pruning playground, and a browser of the runs under ``results/``. Every page has a JSON
twin under ``/api`` (OpenAPI at ``/docs``). The app adds no retrieval or pruning logic of its own: it calls
:mod:`htmlrag` and reads ``results/``.

Nothing is imported here: ``htmlrag.app.server.create_app`` builds the application (and imports FastAPI).
"""
