"""`judgebench view`: a read-only local web viewer over a store.

pages.py builds each page's data from the services (runs, logs, diff) and the audit reports
found beside the store, with the filters and sorting a page's query string asks for; app.py
serves them (Starlette, Jinja2 templates under templates/, a strict Content-Security-Policy,
GET only); `judgebench.commands.view` binds it to 127.0.0.1 and runs it under uvicorn
(serve.py). The labelling page of `judgebench label` is label_pages.py (its data) and
label_app.py (its app: the one route that writes, a label), served the same way.
"""
