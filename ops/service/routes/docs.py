"""The API's documentation, public like /healthz: /openapi.json, Swagger UI at /docs and
ReDoc at /redoc, their scripts and styles served from the `fastapi-offline` package, so
the pages render on a machine without internet (FastAPI's own pages load them from a CDN).
A Content-Security-Policy keeps every request of the pages on this service: ReDoc's
sidebar links its maker's logo from a CDN, which the browser then does not fetch."""
from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_PATH = "/docs-assets"
# Inline scripts and styles: the pages' own set-up; blob: workers: ReDoc's search.
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'")
DOCS_PATH, REDOC_PATH, OAUTH2_REDIRECT_PATH = "/docs", "/redoc", "/docs/oauth2-redirect"


def install(api: FastAPI) -> None:
    """The pages and their assets (the app is made with docs_url and redoc_url None)."""
    assets = files("fastapi_offline") / "static"
    api.mount(ASSETS_PATH, StaticFiles(directory=str(assets)), name="docs-assets")

    @api.get(DOCS_PATH, include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(get_swagger_ui_html(openapi_url=f"{root}{api.openapi_url}", title=f"{api.title} - Swagger UI",
                                   oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT_PATH}",
                                   swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png"))

    @api.get(OAUTH2_REDIRECT_PATH, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @api.get(REDOC_PATH, include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(get_redoc_html(openapi_url=f"{root}{api.openapi_url}", title=f"{api.title} - ReDoc",
                              redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
                                     with_google_fonts=False))


def _local(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CSP
    return page
