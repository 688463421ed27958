"""The public pages (docs/api.md, "Public pages"): server-rendered HTML, one stylesheet and
one small script.

Nothing here imports Litestar: `views` turns stored records into (status, HTML) and `assets`
holds the static files; `service.api.pages` serves both."""
