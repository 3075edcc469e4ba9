"""The web page of ``splice serve``: owners review, approve and follow production at ``/``.

Server-rendered (Starlette + Jinja2 templates shipped in this package, a small script of its
own, nothing fetched from the internet). Every page needs a signed-in principal
(:mod:`splice.web.signin`: OpenID Connect with PKCE, or an API key); every change is a POST
carrying the session's CSRF token, and every decision is checked again by the library
(:mod:`splice.repair.approvals`) whatever the page showed.

- :mod:`splice.web.session`: the signed session cookie and CSRF tokens
- :mod:`splice.web.core`: the request -> principal -> workspace -> template machinery
- :mod:`splice.web.signin`: sign-in and sign-out
- :mod:`splice.web.pages`: one module per group of pages
- :mod:`splice.web.svg`: charts and the lineage path, drawn as SVG on the server
"""
